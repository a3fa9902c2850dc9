// Goal: the token routes issue Felix tokens from RBAC: an upstream OIDC token is exchanged for a
// token carrying the principal's (narrowed) permissions and a single-use refresh token; a
// refresh re-evaluates RBAC, a replay revokes the chain, and every refresh failure looks alike.
// Method: the app over a SQLite store (and Postgres for the replay rule), a tenant bootstrapped
// through the store with a fake IdP (loopback node:http) as its issuer; tokens verified with
// @felix/authz against the tenant's key.
import { BROKER_AUDIENCE, CONTROL_PLANE_AUDIENCE, verifyToken } from '@felix/authz';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { principalIdOf } from '../src/auth/oidc.js';
import { type FakeIdp, startFakeIdp } from './fake-idp.js';
import { type TokenEnv, exchange, permsOf, refresh, tokenEnv } from './token-fixture.js';

let idp: FakeIdp;
beforeAll(async () => {
  idp = await startFakeIdp();
});
afterAll(() => idp.close());

type Env = TokenEnv;

describe('token exchange and refresh', () => {
  let env: Env;
  beforeAll(async () => {
    env = await tokenEnv('sqlite', idp);
  });
  afterAll(() => env.close());

  it('an_oidc_token_is_exchanged_for_the_principals_rbac_permissions', async () => {
    const res = await exchange(env, 'bob', undefined, ['apps']);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      expires_in: 900,
      token_type: 'Bearer',
      refresh_expires_in: 2_592_000,
    });
    expect(body.principal_id).toBe(principalIdOf(idp.issuer, 'bob'));
    expect(body.refresh_token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(await permsOf(env, body.felix_token)).toEqual([
      'cache.read:cache:t1/orders/*',
      'stream.publish:stream:t1/orders/*',
    ]);
    const v = await verifyToken(body.felix_token, {
      audience: CONTROL_PLANE_AUDIENCE,
      tenant: 't1',
      keys: env.keys,
    });
    expect(v.claims.sub).toBe(body.principal_id);
  });

  it('an_exchange_narrows_to_requested_permissions_and_audience_and_refuses_an_empty_grant', async () => {
    const narrowed = await exchange(
      env,
      'bob',
      { requested: ['stream.publish:stream:t1/orders/eu'], audience: 'felix-broker' },
      ['apps'],
    );
    expect(narrowed.statusCode, narrowed.body).toBe(200);
    expect(await permsOf(env, narrowed.json().felix_token, BROKER_AUDIENCE)).toEqual([
      'stream.publish:stream:t1/orders/eu',
    ]);
    const nothing = await exchange(env, 'carol'); // bound to no role
    expect(nothing.statusCode).toBe(403);
    expect(nothing.json().code).toBe('FELIX_CONTROLPLANE_NO_PERMISSIONS');
    const outside = await exchange(
      env,
      'bob',
      { requested: ['stream.publish:stream:t1/payments/x'] },
      ['apps'],
    );
    expect(outside.statusCode).toBe(403);
  });

  it('an_exchange_refuses_a_missing_or_foreign_upstream_token', async () => {
    const none = await env.built.app.inject({
      method: 'POST',
      url: '/v1/tenants/t1/token/exchange',
    });
    expect(none.statusCode).toBe(401);
    expect(none.json().code).toBe('FELIX_CONTROLPLANE_OIDC_TOKEN_REFUSED');
    const upstream = await idp.token({ sub: 'alice' }, { audience: 'someone-else' });
    const foreign = await env.built.app.inject({
      method: 'POST',
      url: '/v1/tenants/t1/token/exchange',
      headers: { authorization: `Bearer ${upstream}` },
    });
    expect(foreign.statusCode).toBe(401);
    const otherTenant = await env.built.app.inject({
      method: 'POST',
      url: '/v1/tenants/t2/token/exchange',
      headers: { authorization: `Bearer ${await idp.token({ sub: 'alice' })}` },
    });
    expect(otherTenant.statusCode).toBe(401);
  });

  it('a_refresh_keeps_the_original_narrowing_and_may_pick_the_audience', async () => {
    const first = (
      await exchange(env, 'bob', { resources: ['stream:t1/orders/eu'] }, ['apps'])
    ).json();
    const r = await refresh(env, first.refresh_token, 'felix-broker');
    expect(r.statusCode, r.body).toBe(200);
    expect(await permsOf(env, r.json().felix_token, BROKER_AUDIENCE)).toEqual([
      'stream.publish:stream:t1/orders/eu',
    ]);
    const again = await refresh(env, r.json().refresh_token);
    expect(await permsOf(env, again.json().felix_token)).toEqual([
      'stream.publish:stream:t1/orders/eu',
    ]);
  });
});

describe.each(['sqlite', 'postgres'] as const)('refresh tokens on %s', (backend) => {
  let env: Env;
  beforeAll(async () => {
    env = await tokenEnv(backend, idp);
  });
  afterAll(() => env.close());

  it('a_refresh_token_replay_revokes_its_chain', async () => {
    const first = (await exchange(env, 'bob', undefined, ['apps'])).json();
    const second = await refresh(env, first.refresh_token);
    expect(second.statusCode, second.body).toBe(200);
    const third = await refresh(env, second.json().refresh_token);
    expect(third.statusCode).toBe(200);
    // Replaying the first (spent) token revokes the chain: the live third one is dead too.
    const replay = await refresh(env, first.refresh_token);
    expect(replay.statusCode).toBe(403);
    const afterReplay = await refresh(env, third.json().refresh_token);
    expect(afterReplay.statusCode).toBe(403);
    expect(afterReplay.json()).toMatchObject({ code: 'FELIX_CONTROLPLANE_REFRESH_TOKEN_REFUSED' });
    // Another chain of the same principal is untouched.
    const other = (await exchange(env, 'bob', undefined, ['apps'])).json();
    expect((await refresh(env, other.refresh_token)).statusCode).toBe(200);
  });

  it('every_refresh_failure_is_the_same_403_and_a_wrong_secret_spends_the_token', async () => {
    const t = (await exchange(env, 'bob', undefined, ['apps'])).json().refresh_token as string;
    const [id] = t.split('.');
    const failures = [
      await refresh(env, `${id}.wrong-secret`),
      await refresh(env, t), // spent by the wrong guess
      await refresh(env, 'no-such-id.secret'),
      await refresh(env, 'garbage'),
    ];
    for (const f of failures) {
      expect(f.statusCode).toBe(403);
      const { request_id: _r, ...rest } = f.json();
      expect(rest).toEqual({
        code: 'FELIX_CONTROLPLANE_REFRESH_TOKEN_REFUSED',
        message: 'refresh token refused',
      });
    }
  });
});
