// Goal: RBAC changes and delegation follow the delegation rule: a caller needs rbac.manage (or
// token.delegate) and may grant only what lies within its own scope; a resource-manage grant
// never authorizes an RBAC change.
// Method: RbacChanges and TokenService over a SQLite store with a bootstrapped tenant; callers
// built from permission lists (what the guard hands a route).
import {
  BROKER_AUDIENCE,
  CONTROL_PLANE_AUDIENCE,
  InMemoryKeySet,
  PermissionSet,
  exportPrivateJwk,
  generateSigningKey,
  parsePermission,
  verifyToken,
} from '@felix/authz';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RbacChanges } from '../src/auth/rbac-changes.js';
import { TokenSigner } from '../src/auth/signer.js';
import { TokenService } from '../src/auth/tokens.js';
import {
  DelegationRefusedError,
  InvalidPermissionError,
  InvalidRequestError,
  NoPermissionsError,
  RoleNotFoundError,
} from '../src/errors.js';
import type { Principal } from '../src/http/auth/contract.js';
import { type OpenedStore, openTestStore } from './helpers.js';

let opened: OpenedStore;
let changes: RbacChanges;
let tokens: TokenService;
const keys = new InMemoryKeySet();

function caller(perms: string[], sub = 'caller'): Principal {
  return {
    claims: {
      iss: 'felix-auth',
      aud: CONTROL_PLANE_AUDIENCE,
      sub,
      tid: 't1',
      iat: 0,
      exp: 0,
      perms,
    },
    permissions: PermissionSet.compile('t1', perms.map(parsePermission)),
  };
}

beforeAll(async () => {
  opened = await openTestStore('sqlite');
  const key = await generateSigningKey();
  keys.add('t1', key.kid, key.publicKey);
  await opened.store.bootstrap.initialize({
    tenant_id: 't1',
    display_name: 'T1',
    key: { kid: key.kid, private_jwk: { ...(await exportPrivateJwk(key.privateKey, key.kid)) } },
    issuers: [],
    roles: [
      { role: 'orders-writer', permissions: ['stream.publish:stream:t1/orders/*'] },
      {
        role: 'mixed',
        permissions: ['stream.publish:stream:t1/orders/eu', 'cache.write:cache:t1/orders/c'],
      },
    ],
    bindings: [],
  });
  changes = new RbacChanges(opened.store);
  const silent = { warn() {}, info() {}, error() {} } as never;
  tokens = new TokenService(
    opened.store,
    new TokenSigner(opened.store, opened.store.clock),
    opened.store.clock,
    silent,
  );
});
afterAll(() => opened.cleanup());

const ORDERS_ADMIN = ['rbac.manage:tenant:t1', 'stream.publish:stream:t1/orders/*'];

describe('the delegation rule at the control plane', () => {
  it('a_policy_outside_the_callers_scope_is_refused', async () => {
    const admin = caller(ORDERS_ADMIN);
    const ok = await changes.addPolicy('t1', admin, 'eu', 'stream.publish:stream:t1/orders/eu');
    expect(ok).toEqual({
      created: true,
      item: { role: 'eu', permission: 'stream.publish:stream:t1/orders/eu' },
    });
    await expect(
      changes.addPolicy('t1', admin, 'eu', 'stream.publish:stream:t1/payments/eu'),
    ).rejects.toThrow(DelegationRefusedError);
    await expect(
      changes.addPolicy('t1', admin, 'eu', 'stream.subscribe:stream:t1/orders/eu'),
    ).rejects.toThrow(DelegationRefusedError);
    await expect(
      changes.addPolicy('t1', admin, 'eu', 'stream.publish:stream:t2/orders/eu'),
    ).rejects.toThrow(InvalidPermissionError);
    await expect(
      changes.deletePolicy('t1', admin, 'orders-writer', 'cache.write:cache:t1/orders/c'),
    ).rejects.toThrow(DelegationRefusedError);
    expect(
      await changes.deletePolicy('t1', admin, 'eu', 'stream.publish:stream:t1/orders/eu'),
    ).toBe(true);
  });

  it('resource_manage_never_authorizes_an_rbac_change', async () => {
    const manager = caller(['tenant.manage:tenant:t1', 'stream.publish:stream:t1/*/*']);
    await expect(
      changes.addPolicy('t1', manager, 'x', 'stream.publish:stream:t1/orders/eu'),
    ).rejects.toThrow(/rbac.manage:tenant:t1/);
    await expect(changes.addBinding('t1', manager, 'p1', 'orders-writer')).rejects.toThrow(
      DelegationRefusedError,
    );
  });

  it('a_role_is_bound_only_when_every_policy_lies_within_the_callers_scope', async () => {
    const admin = caller(ORDERS_ADMIN);
    expect((await changes.addBinding('t1', admin, 'p1', 'orders-writer')).created).toBe(true);
    expect(
      (await changes.addBinding('t1', admin, 'group:https://idp#ops', 'orders-writer')).item,
    ).toEqual({
      subject: 'group:https://idp#ops',
      role: 'orders-writer',
    });
    // `mixed` also holds cache.write, which the caller lacks.
    await expect(changes.addBinding('t1', admin, 'p1', 'mixed')).rejects.toThrow(/cache.write/);
    await expect(changes.addBinding('t1', admin, 'p1', 'no-such-role')).rejects.toThrow(
      RoleNotFoundError,
    );
    await expect(changes.addBinding('t1', admin, 'group:nohash', 'orders-writer')).rejects.toThrow(
      InvalidRequestError,
    );
    await expect(
      changes.deleteBinding('t1', caller(['rbac.manage:tenant:t1']), 'p1', 'orders-writer'),
    ).rejects.toThrow(DelegationRefusedError);
    expect(await changes.deleteBinding('t1', admin, 'p1', 'orders-writer')).toBe(true);
  });

  it('a_delegated_token_never_exceeds_the_callers_token', async () => {
    const delegator = caller([
      'token.delegate:tenant:t1',
      'rbac.manage:tenant:t1', // naming another subject needs it
      'stream.publish:stream:t1/orders/*',
      'rbac.view:tenant:t1',
    ]);
    const minted = await tokens.delegate('t1', delegator, { subject: 'app-1' });
    expect(minted.subject).toBe('app-1');
    const v = await verifyToken(minted.felix_token, {
      audience: BROKER_AUDIENCE,
      tenant: 't1',
      keys,
    });
    expect(v.claims.perms).toEqual(['stream.publish:stream:t1/orders/*']); // nor rbac.* a broker action
    expect(v.claims.act).toEqual({ sub: 'caller' }); // minted in app-1's name by `caller`
    const narrowed = await tokens.delegate('t1', delegator, {
      requested: ['stream.publish:stream:t1/orders/eu', 'stream.publish:stream:t1/payments/eu'],
      ttl_seconds: 60,
    });
    const n = await verifyToken(narrowed.felix_token, {
      audience: BROKER_AUDIENCE,
      tenant: 't1',
      keys,
    });
    expect(n.claims.perms).toEqual(['stream.publish:stream:t1/orders/eu']);
    expect(n.claims.exp - n.claims.iat).toBe(60);
    expect(n.claims.act).toBeUndefined(); // the caller's own token
    await expect(
      tokens.delegate('t1', delegator, { requested: ['stream.publish:stream:t1/payments/eu'] }),
    ).rejects.toThrow(NoPermissionsError);
    await expect(tokens.delegate('t1', delegator, { ttl_seconds: 901 })).rejects.toThrow(
      InvalidRequestError,
    );
    await expect(
      tokens.delegate('t1', caller(['stream.publish:stream:t1/orders/*']), {}),
    ).rejects.toThrow(/token.delegate:tenant:t1/);
  });
});
