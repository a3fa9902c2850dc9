// Goal: the RBAC, delegation, revocation and issuer routes behind the guard: a policy added
// through the API applies to the next token (exchange, refresh, delegation) and to the
// control-plane requests it allows, with no restart; writes follow the delegation rule; a token
// of another tenant or without a token is refused.
// Method: the app over a SQLite store with tenant t1 bootstrapped (token-fixture.ts) and a fake
// IdP; callers get their tokens through the exchange, as users would.
import { BROKER_AUDIENCE } from '@felix/authz';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { principalIdOf } from '../src/auth/oidc.js';
import { type FakeIdp, startFakeIdp } from './fake-idp.js';
import { type TokenEnv, exchange, permsOf, refresh, tokenEnv } from './token-fixture.js';

let idp: FakeIdp;
let env: TokenEnv;
beforeAll(async () => {
  idp = await startFakeIdp();
  env = await tokenEnv('sqlite', idp);
});
afterAll(async () => {
  await env.close();
  await idp.close();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function call(token: string | null, method: string, url: string, payload?: object) {
  return env.built.app.inject({
    method: method as 'GET',
    url,
    headers: token === null ? {} : bearer(token),
    ...(payload === undefined ? {} : { payload }),
  });
}

async function tokensOf(sub: string, groups: string[] = []) {
  const res = await exchange(env, sub, undefined, groups);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { felix_token: string; refresh_token: string; principal_id: string };
}

describe('RBAC routes', () => {
  it('rbac_changes_apply_to_new_requests_without_a_restart', async () => {
    const admin = (await tokensOf('alice')).felix_token;
    const bob = await tokensOf('bob', ['apps']);
    const ns = { namespace: 'orders' };
    const denied = await call(bob.felix_token, 'POST', '/v1/tenants/t1/namespaces', ns);
    expect(denied.statusCode).toBe(403);

    const role = 'app';
    for (const permission of [
      'namespace.manage:namespace:t1/orders',
      'token.delegate:tenant:t1',
      'stream.publish:stream:t1/audit/*',
    ]) {
      const added = await call(admin, 'POST', '/v1/tenants/t1/rbac/policies', { role, permission });
      expect(added.statusCode, added.body).toBe(201);
    }
    // The next refreshed token carries the new policies, and the request they allow succeeds.
    const refreshed = (await refresh(env, bob.refresh_token)).json();
    expect(await permsOf(env, refreshed.felix_token)).toContain(
      'namespace.manage:namespace:t1/orders',
    );
    const created = await call(refreshed.felix_token, 'POST', '/v1/tenants/t1/namespaces', ns);
    expect(created.statusCode, created.body).toBe(201);
    // The next exchanged and delegated tokens carry them too.
    const again = await tokensOf('bob', ['apps']);
    expect(await permsOf(env, again.felix_token)).toContain('stream.publish:stream:t1/audit/*');
    const minted = await call(again.felix_token, 'POST', '/v1/tenants/t1/token/delegate', {});
    expect(minted.statusCode, minted.body).toBe(200);
    expect(await permsOf(env, minted.json().felix_token, BROKER_AUDIENCE)).toContain(
      'stream.publish:stream:t1/audit/*',
    );

    // Removing the policy takes it out of the next token just as fast.
    const removed = await call(
      admin,
      'DELETE',
      `/v1/tenants/t1/rbac/policies?role=app&permission=${encodeURIComponent('namespace.manage:namespace:t1/orders')}`,
    );
    expect(removed.statusCode).toBe(204);
    const later = (await refresh(env, refreshed.refresh_token)).json();
    expect(await permsOf(env, later.felix_token)).not.toContain(
      'namespace.manage:namespace:t1/orders',
    );
    const deniedAgain = await call(later.felix_token, 'DELETE', '/v1/tenants/t1/namespaces/orders');
    expect(deniedAgain.statusCode).toBe(403);
  });

  it('rbac_routes_need_a_token_of_the_tenant_and_follow_the_delegation_rule', async () => {
    const admin = (await tokensOf('alice')).felix_token;
    const app = (await tokensOf('carl', ['apps'])).felix_token;
    const policy = { role: 'readers', permission: 'cache.read:cache:t1/orders/*' };
    expect((await call(null, 'POST', '/v1/tenants/t1/rbac/policies', policy)).statusCode).toBe(401);
    const noManage = await call(app, 'POST', '/v1/tenants/t1/rbac/policies', policy);
    expect(noManage.statusCode).toBe(403);
    expect(noManage.json().code).toBe('FELIX_CONTROLPLANE_DELEGATION_REFUSED');
    // alice may manage RBAC but holds no cache.read: outside her scope.
    const outside = await call(admin, 'POST', '/v1/tenants/t1/rbac/policies', policy);
    expect(outside.statusCode).toBe(403);
    expect(outside.json().message).toContain('cache.read:cache:t1/orders/*');
    const inScope = { role: 'writers', permission: 'stream.publish:stream:t1/orders/*' };
    expect((await call(admin, 'POST', '/v1/tenants/t1/rbac/policies', inScope)).statusCode).toBe(
      201,
    );
    expect((await call(admin, 'POST', '/v1/tenants/t1/rbac/policies', inScope)).statusCode).toBe(
      200,
    );
    const bind = { subject: principalIdOf(idp.issuer, 'dora'), role: 'writers' };
    expect((await call(admin, 'POST', '/v1/tenants/t1/rbac/bindings', bind)).statusCode).toBe(201);
    // `app` also holds cache.read, outside alice's scope: she may not hand it out.
    const appRole = { subject: bind.subject, role: 'app' };
    expect((await call(admin, 'POST', '/v1/tenants/t1/rbac/bindings', appRole)).statusCode).toBe(
      403,
    );
    // Reading needs rbac.view (rbac.manage implies it); a publisher's token has neither.
    expect((await call(app, 'GET', '/v1/tenants/t1/rbac/bindings')).statusCode).toBe(403);
    const viewer = await env.built.tokens.mint('t1', ['rbac.view:tenant:t1']);
    const listed = await call(viewer, 'GET', '/v1/tenants/t1/rbac/bindings?role=writers');
    expect(listed.json()).toEqual({ items: [bind] });
    const policies = await call(viewer, 'GET', '/v1/tenants/t1/rbac/policies?role=writers');
    expect(policies.json()).toEqual({ items: [inScope] });
    // A token of another tenant cannot touch t1's RBAC, whatever it holds there.
    const foreign = await env.built.tokens.mint('t2', ['rbac.manage:tenant:t2']);
    expect((await call(foreign, 'POST', '/v1/tenants/t1/rbac/policies', inScope)).statusCode).toBe(
      403,
    );
  });

  it('a_principal_revokes_its_own_refresh_tokens_and_an_rbac_manager_anyones', async () => {
    const erin = await tokensOf('erin', ['apps']);
    const erin2 = await tokensOf('erin', ['apps']);
    const self = await call(erin.felix_token, 'POST', '/v1/tenants/t1/refresh-tokens/revoke', {
      principal_id: erin.principal_id,
    });
    expect(self.json()).toEqual({ revoked: 2 });
    expect((await refresh(env, erin2.refresh_token)).statusCode).toBe(403);
    const frank = await tokensOf('frank', ['apps']);
    const other = await call(erin.felix_token, 'POST', '/v1/tenants/t1/refresh-tokens/revoke', {
      principal_id: frank.principal_id,
    });
    expect(other.statusCode).toBe(403);
    const admin = (await tokensOf('alice')).felix_token;
    const byAdmin = await call(admin, 'POST', '/v1/tenants/t1/refresh-tokens/revoke', {
      principal_id: frank.principal_id,
    });
    expect(byAdmin.json()).toEqual({ revoked: 1 });
  });

  it('a_token_delegate_holder_cannot_revoke_another_principals_refresh_tokens', async () => {
    const admin = (await tokensOf('alice')).felix_token;
    const victim = await tokensOf('hank', ['apps']);
    // A role with token.delegate but no rbac.manage.
    for (const permission of ['token.delegate:tenant:t1', 'stream.publish:stream:t1/orders/*']) {
      const added = await call(admin, 'POST', '/v1/tenants/t1/rbac/policies', {
        role: 'minter',
        permission,
      });
      expect(added.statusCode, added.body).toBe(201);
    }
    const ivy = principalIdOf(idp.issuer, 'ivy');
    const bound = await call(admin, 'POST', '/v1/tenants/t1/rbac/bindings', {
      subject: ivy,
      role: 'minter',
    });
    expect(bound.statusCode, bound.body).toBe(201);
    const minter = (await tokensOf('ivy')).felix_token;
    const asVictim = {
      subject: victim.principal_id,
      audience: 'felix-controlplane',
      requested: ['token.delegate:tenant:t1'],
    };
    // Naming another principal needs rbac.manage: no token in the victim's name is minted.
    const forged = await call(minter, 'POST', '/v1/tenants/t1/token/delegate', asVictim);
    expect(forged.statusCode, forged.body).toBe(403);
    expect(forged.json().code).toBe('FELIX_CONTROLPLANE_DELEGATION_REFUSED');
    expect(forged.json().message).toContain('rbac.manage:tenant:t1');
    // Naming itself (explicitly or by default) is still allowed.
    const own = await call(minter, 'POST', '/v1/tenants/t1/token/delegate', { subject: ivy });
    expect(own.statusCode, own.body).toBe(200);
    // A token an RBAC manager mints in the victim's name is not the victim: its holder may not
    // revoke the victim's refresh tokens as "self".
    const onBehalf = await call(admin, 'POST', '/v1/tenants/t1/token/delegate', asVictim);
    expect(onBehalf.statusCode, onBehalf.body).toBe(200);
    const revoke = await call(
      onBehalf.json().felix_token,
      'POST',
      '/v1/tenants/t1/refresh-tokens/revoke',
      { principal_id: victim.principal_id },
    );
    expect(revoke.statusCode, revoke.body).toBe(403);
    expect(revoke.json().code).toBe('FELIX_CONTROLPLANE_DELEGATION_REFUSED');
    expect((await refresh(env, victim.refresh_token)).statusCode).toBe(200);
  });

  it('a_request_refused_to_a_token_minted_in_anothers_name_is_logged_with_its_holder', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino(
      { level: 'info' },
      { write: (l: string) => void lines.push(JSON.parse(l)) },
    );
    const logged = await tokenEnv('sqlite', idp, { logger });
    try {
      const admin = (await exchange(logged, 'alice')).json().felix_token as string;
      const hank = principalIdOf(idp.issuer, 'hank');
      const minted = await logged.built.app.inject({
        method: 'POST',
        url: '/v1/tenants/t1/token/delegate',
        headers: bearer(admin),
        payload: {
          subject: hank,
          audience: 'felix-controlplane',
          requested: ['stream.publish:stream:t1/orders/*'],
        },
      });
      expect(minted.statusCode, minted.body).toBe(200);
      const refused = await logged.built.app.inject({
        method: 'POST',
        url: '/v1/tenants/t1/namespaces',
        headers: bearer(minted.json().felix_token),
        payload: { namespace: 'x' },
      });
      expect(refused.statusCode).toBe(403);
      // Attributed to the principal it names and to who actually held it.
      // One line for the refusal: why, whom, and the answer's status.
      const about = lines.filter(
        (l) => l.url === '/v1/tenants/t1/namespaces' && (l.level as number) >= 30,
      );
      expect(about).toHaveLength(1);
      expect(about[0]).toMatchObject({
        msg: 'request refused',
        reason: 'forbidden',
        status: 403,
        method: 'POST',
        sub: hank,
        act: principalIdOf(idp.issuer, 'alice'),
      });
    } finally {
      await logged.close();
    }
  });

  it('an_issuer_added_through_the_api_is_trusted_by_the_next_exchange', async () => {
    const second = await startFakeIdp();
    try {
      const admin = await env.built.tokens.mint('t1', [
        'tenant.manage:tenant:t1',
        'rbac.view:tenant:t1',
      ]);
      const upstream = await second.token({ sub: 'gus', groups: ['apps'] });
      const before = await env.built.app.inject({
        method: 'POST',
        url: '/v1/tenants/t1/token/exchange',
        headers: bearer(upstream),
      });
      expect(before.statusCode).toBe(401);
      const body = {
        issuer: second.issuer,
        audiences: ['felix'],
        jwks_url: second.jwksUrl,
        groups_claim: 'groups',
      };
      const bad = await call(admin, 'POST', '/v1/tenants/t1/idp-issuers', {
        ...body,
        issuer: 'https://x#y',
      });
      expect(bad.json().code).toBe('FELIX_CONTROLPLANE_IDP_ISSUER_INVALID');
      const added = await call(admin, 'POST', '/v1/tenants/t1/idp-issuers', body);
      expect(added.statusCode, added.body).toBe(201);
      const listed = await call(admin, 'GET', '/v1/tenants/t1/idp-issuers');
      expect(listed.json().items.map((i: { issuer: string }) => i.issuer)).toContain(second.issuer);
      // gus has no binding, so nothing is granted; a group binding of the new issuer grants.
      const nothing = await env.built.app.inject({
        method: 'POST',
        url: '/v1/tenants/t1/token/exchange',
        headers: bearer(upstream),
      });
      expect(nothing.json().code).toBe('FELIX_CONTROLPLANE_NO_PERMISSIONS');
      const path = `/v1/tenants/t1/idp-issuers/${encodeURIComponent(second.issuer)}`;
      expect((await call(admin, 'DELETE', path)).statusCode).toBe(403); // an operator's action
      const operator = await env.built.tokens.operator();
      expect((await call(operator, 'DELETE', path)).statusCode).toBe(204);
    } finally {
      await second.close();
    }
  });
});
