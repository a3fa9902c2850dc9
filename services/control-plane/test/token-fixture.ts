/**
 * A tenant `t1` bootstrapped through the store for the token and RBAC route tests: its key (also
 * in `keys`, to verify what the routes issue), a fake IdP as its issuer, and roles bound to
 * principals and IdP groups of that IdP.
 */
import {
  type Audience,
  CONTROL_PLANE_AUDIENCE,
  InMemoryKeySet,
  exportPrivateJwk,
  generateSigningKey,
  verifyToken,
} from '@felix/authz';
import type { AppDeps } from '../src/http/app.js';
import { principalIdOf } from '../src/auth/oidc.js';
import type { FakeIdp } from './fake-idp.js';
import { type Backend, type OpenedStore, openTestStore, testApp } from './helpers.js';

export interface TokenEnv {
  opened: OpenedStore;
  built: Awaited<ReturnType<typeof testApp>>;
  keys: InMemoryKeySet;
  idp: FakeIdp;
  close(): Promise<void>;
}

/** `alice` is an admin (RBAC, delegation, namespaces); the IdP group `apps` may publish to orders. */
export async function tokenEnv(
  backend: Backend,
  idp: FakeIdp,
  deps: Partial<AppDeps> = {},
): Promise<TokenEnv> {
  const opened = await openTestStore(backend);
  const key = await generateSigningKey();
  const keys = new InMemoryKeySet();
  keys.add('t1', key.kid, key.publicKey);
  await opened.store.bootstrap.initialize({
    tenant_id: 't1',
    display_name: 'T1',
    key: { kid: key.kid, private_jwk: { ...(await exportPrivateJwk(key.privateKey, key.kid)) } },
    issuers: [
      {
        issuer: idp.issuer,
        audiences: ['felix'],
        jwks_url: idp.jwksUrl,
        discovery_url: null,
        subject_claim: 'sub',
        groups_claim: 'groups',
      },
    ],
    roles: [
      {
        role: 'admin',
        permissions: [
          'rbac.manage:tenant:t1',
          'token.delegate:tenant:t1',
          'namespace.manage:namespace:t1/*',
          'stream.publish:stream:t1/*/*',
        ],
      },
      {
        role: 'app',
        permissions: ['stream.publish:stream:t1/orders/*', 'cache.read:cache:t1/orders/*'],
      },
    ],
    bindings: [
      { subject: principalIdOf(idp.issuer, 'alice'), role: 'admin' },
      { subject: `group:${idp.issuer}#apps`, role: 'app' },
    ],
  });
  const built = await testApp(opened.store, deps);
  return {
    opened,
    built,
    keys,
    idp,
    async close() {
      await built.app.close();
      await opened.cleanup();
    },
  };
}

/** POST …/token/exchange with an upstream token for `sub` (and its groups). */
export async function exchange(env: TokenEnv, sub: string, body?: unknown, groups: string[] = []) {
  const upstream = await env.idp.token({ sub, groups });
  return env.built.app.inject({
    method: 'POST',
    url: '/v1/tenants/t1/token/exchange',
    headers: { authorization: `Bearer ${upstream}` },
    ...(body === undefined ? {} : { payload: body as object }),
  });
}

export async function refresh(env: TokenEnv, refreshToken: string, audience?: string) {
  return env.built.app.inject({
    method: 'POST',
    url: '/v1/tenants/t1/token/refresh',
    payload: { refresh_token: refreshToken, ...(audience ? { audience } : {}) },
  });
}

/** The sorted permissions of a token the routes issued. */
export async function permsOf(
  env: TokenEnv,
  token: string,
  audience: Audience = CONTROL_PLANE_AUDIENCE,
): Promise<string[]> {
  const v = await verifyToken(token, { audience, tenant: 't1', keys: env.keys });
  return [...v.claims.perms].sort();
}
