// Goal: the bootstrap listener initializes a tenant's auth exactly once, even when two
// instances on one Postgres database race; it is off by default, loopback unless allowed,
// guarded by a static token, and mints dev tokens only when told to. Method: the bootstrap app
// and the API app over real stores (SQLite temp file, Postgres fresh schema), driven by inject.
import { randomBytes } from 'node:crypto';
import { CONTROL_PLANE_AUDIENCE } from '@felix/authz';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenSigner } from '../src/auth/signer.js';
import { type BootstrapConfig, loadBootstrapConfig, loadConfig } from '../src/config.js';
import { ConfigInvalidError } from '../src/errors.js';
import { BOOTSTRAP_TOKEN_HEADER, buildBootstrapApp, tokenMatches } from '../src/http/bootstrap.js';
import { lazySchemaController } from '../src/http/lazy-compilers.js';
import { createMetrics } from '../src/metrics.js';
import type { ControlStore } from '../src/store/store.js';
import { freshSchema, type OpenedStore, openTestStore, testApp } from './helpers.js';

const TOKEN = randomBytes(24).toString('hex');
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function bootConfig(extra: Partial<BootstrapConfig> = {}): BootstrapConfig {
  return {
    enabled: true,
    host: '127.0.0.1',
    port: 0,
    token: TOKEN,
    tokenPrevious: undefined,
    allowNonLoopback: false,
    devTokens: true,
    ...extra,
  };
}

async function bootApp(store: ControlStore, extra: Partial<BootstrapConfig> = {}) {
  const metrics = createMetrics();
  const app = await buildBootstrapApp({
    store,
    config: bootConfig(extra),
    signer: new TokenSigner(store, store.clock),
    metrics,
  });
  cleanups.push(() => app.close());
  return { app, metrics };
}

async function opened(backend: 'sqlite' | 'postgres', schema?: string): Promise<OpenedStore> {
  const o = await openTestStore(backend, schema ? { schema } : {});
  // Two stores may share one schema: the second drop finds it gone, which is fine.
  cleanups.push(() => o.cleanup().catch(() => undefined));
  return o;
}

const initialize = (app: FastifyInstance, tenant: string, body: unknown, token = TOKEN) =>
  app.inject({
    method: 'POST',
    url: `/internal/bootstrap/tenants/${tenant}/initialize`,
    headers: { [BOOTSTRAP_TOKEN_HEADER]: token },
    payload: body as object,
  });

const devToken = (app: FastifyInstance, tenant: string, body: unknown) =>
  app.inject({
    method: 'POST',
    url: `/internal/bootstrap/tenants/${tenant}/dev-token`,
    headers: { [BOOTSTRAP_TOKEN_HEADER]: TOKEN },
    payload: body as object,
  });

describe('bootstrap', () => {
  it('the_bootstrap_listeners_schemas_all_compile_though_each_waits_for_its_first_request', async () => {
    const o = await opened('sqlite');
    const schemas = lazySchemaController();
    const app = await buildBootstrapApp({
      store: o.store,
      config: bootConfig(),
      signer: new TokenSigner(o.store, o.store.clock),
      metrics: createMetrics(),
      schemas,
    });
    cleanups.push(() => app.close());
    await app.ready();
    expect(schemas.compileAll()).toBeGreaterThan(0);
    expect(schemas.compileAll()).toBe(0);
  });

  it('bootstrap_runs_exactly_once_across_two_instances', async () => {
    // Two instances on one database (a schema of their own, so parallel test files do not
    // collide), each with its own store, pool and bootstrap app, racing the same tenant.
    const schema = freshSchema();
    const a = await opened('postgres', schema);
    const b = await opened('postgres', schema);
    const appA = (await bootApp(a.store)).app;
    const appB = (await bootApp(b.store)).app;
    const body = { display_name: 'Acme', idp_issuers: [], initial_admin_principals: ['alice'] };
    for (let round = 0; round < 5; round++) {
      const t = `race${round}`;
      const answers = await Promise.all([
        initialize(appA, t, body),
        initialize(appB, t, body),
        initialize(appA, t, body),
        initialize(appB, t, body),
      ]);
      const codes = answers.map((r) => r.statusCode).sort();
      expect(codes, t).toEqual([200, 409, 409, 409]);
      for (const r of answers.filter((x) => x.statusCode === 409))
        expect(r.json().code).toBe('FELIX_CONTROLPLANE_ALREADY_INITIALIZED');
      expect(await a.store.signingKeys.list(t)).toHaveLength(1);
      expect(await b.store.rbac.listBindings(t)).toEqual([
        { tenant_id: t, subject: 'alice', role: 'admin' },
      ]);
    }
  });

  it('bootstrap_initializes_a_tenant_whose_admin_runs_it_and_nothing_else', async () => {
    const o = await opened('sqlite');
    const { app, metrics } = await bootApp(o.store);
    const r = await initialize(app, 't1', {
      display_name: 'T1',
      idp_issuers: [
        {
          issuer: 'https://idp.example',
          audiences: ['felix'],
          discovery_url: 'https://idp.example/.well-known/openid-configuration',
        },
      ],
      initial_admin_principals: ['alice'],
    });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({
      tenant_id: 't1',
      jwks_url: '/v1/tenants/t1/.well-known/jwks.json',
    });
    expect((await o.store.issuers.list('t1')).map((i) => i.subject_claim)).toEqual(['sub']);
    // The admin's effective permissions, minted into a token, run the tenant through the API.
    const perms = await o.store.rbac.permissionsFor('t1', ['alice']);
    expect(perms.some((p) => p.includes('cluster'))).toBe(false);
    const api = await testApp(o.store, { background: false });
    cleanups.push(() => api.app.close());
    const token = await api.tokens.mint('t1', perms, { subject: 'alice' });
    const auth = { authorization: `Bearer ${token}` };
    const ns = await api.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces',
      headers: auth,
      payload: { namespace: 'ns' },
    });
    expect(ns.statusCode).toBe(201);
    const st = await api.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces/ns/streams',
      headers: auth,
      payload: { stream: 's' },
    });
    expect(st.statusCode).toBe(201);
    expect(
      (await api.inject({ method: 'GET', url: '/v1/tenants', headers: auth })).statusCode,
    ).toBe(403);
    expect((await api.inject({ method: 'GET', url: '/v1/nodes', headers: auth })).statusCode).toBe(
      403,
    );
    const metricsText = await metrics.registry.metrics();
    expect(metricsText).toMatch(
      /felix_controlplane_bootstrap_attempts_total\{outcome="initialized"\} 1/,
    );
  });

  it('an_operator_bootstrap_adds_the_cluster_role', async () => {
    const o = await opened('sqlite');
    const { app } = await bootApp(o.store);
    const r = await initialize(app, 'ops', { initial_admin_principals: ['root'], operator: true });
    expect(r.statusCode).toBe(200);
    expect(r.json().roles.map((x: { role: string }) => x.role)).toEqual(['admin', 'operator']);
    const perms = await o.store.rbac.permissionsFor('ops', ['root']);
    expect(perms).toEqual(
      expect.arrayContaining([
        'tenant.manage:cluster:*',
        'node.view:cluster:*',
        'node.manage:cluster:*',
      ]),
    );
    const api = await testApp(o.store, { background: false });
    cleanups.push(() => api.app.close());
    const token = await api.tokens.mint('ops', perms, { subject: 'root' });
    const made = await api.inject({
      method: 'POST',
      url: '/v1/tenants',
      headers: { authorization: `Bearer ${token}` },
      payload: { tenant_id: 'newco' },
    });
    expect(made.statusCode).toBe(201);
  });

  it('a_wrong_or_missing_bootstrap_token_is_refused_before_anything_is_written', async () => {
    const o = await opened('sqlite');
    const { app, metrics } = await bootApp(o.store, { tokenPrevious: 'p'.repeat(40) });
    const wrong = await initialize(app, 't1', { initial_admin_principals: ['a'] }, 'x'.repeat(48));
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().code).toBe('FELIX_CONTROLPLANE_UNAUTHENTICATED');
    const none = await app.inject({
      method: 'POST',
      url: '/internal/bootstrap/tenants/t1/initialize',
      payload: {},
    });
    expect(none.statusCode).toBe(401);
    expect(await o.store.bootstrap.isBootstrapped('t1')).toBe(false);
    // The previous token still works while it is being rotated out.
    expect(
      (await initialize(app, 't1', { initial_admin_principals: ['a'] }, 'p'.repeat(40))).statusCode,
    ).toBe(200);
    expect(await metrics.registry.metrics()).toMatch(
      /bootstrap_attempts_total\{outcome="bad_token"\} 2/,
    );
    expect(tokenMatches('abc', ['abc'])).toBe(true);
    expect(tokenMatches('abc', [undefined, 'abd'])).toBe(false);
  });

  it('bad_bootstrap_input_is_refused_whole', async () => {
    const o = await opened('sqlite');
    const { app } = await bootApp(o.store);
    for (const issuer of [
      { issuer: 'https://a#b', audiences: ['x'], jwks_url: 'https://a/jwks' },
      { issuer: 'https://a', audiences: [], jwks_url: 'https://a/jwks' },
      { issuer: 'https://a', audiences: ['x'], jwks_url: 'http://idp.example/jwks' },
      { issuer: 'https://a', audiences: ['x'] },
    ]) {
      const r = await initialize(app, 't1', {
        idp_issuers: [issuer],
        initial_admin_principals: ['a'],
      });
      expect(r.statusCode, JSON.stringify(issuer)).toBe(400);
    }
    expect((await initialize(app, 'bad/name', { initial_admin_principals: [] })).statusCode).toBe(
      404,
    );
    expect((await initialize(app, '-bad', { initial_admin_principals: [] })).statusCode).toBe(400);
    await expect(o.store.tenants.get('t1')).rejects.toThrow();
    // A loopback http IdP is fine (local development).
    const ok = await initialize(app, 't1', {
      idp_issuers: [
        {
          issuer: 'http://127.0.0.1:9000',
          audiences: ['x'],
          jwks_url: 'http://127.0.0.1:9000/jwks',
        },
      ],
      initial_admin_principals: ['a'],
    });
    expect(ok.statusCode).toBe(200);
  });

  it('bootstrap_refuses_issuer_urls_the_api_would_refuse', async () => {
    const o = await opened('sqlite');
    const { app } = await bootApp(o.store);
    const api = await testApp(o.store, { background: false });
    cleanups.push(() => api.app.close());
    expect((await initialize(app, 'ops', { initial_admin_principals: ['a'] })).statusCode).toBe(
      200,
    );
    for (const url of [
      'https://user:pw@idp.example/jwks',
      'https://idp.example/jwks#frag',
      'https://10.0.0.7/jwks',
      'https://169.254.169.254/latest',
      'https://[fe80::1]/jwks',
      'ftp://idp.example/jwks',
    ]) {
      for (const issuer of [
        { issuer: 'https://idp.example', audiences: ['x'], jwks_url: url },
        { issuer: 'https://idp.example', audiences: ['x'], discovery_url: url },
      ]) {
        const boot = await initialize(app, 't1', {
          idp_issuers: [issuer],
          initial_admin_principals: ['a'],
        });
        expect(boot.statusCode, `${url}: ${boot.body}`).toBe(400);
        expect(boot.json().code).toBe('FELIX_CONTROLPLANE_IDP_ISSUER_INVALID');
        // The API answers the very same refusal for the very same issuer.
        const viaApi = await api.inject({
          method: 'POST',
          url: '/v1/tenants/ops/idp-issuers',
          payload: issuer,
        });
        expect(viaApi.json(), url).toEqual({
          ...boot.json(),
          request_id: viaApi.json().request_id,
        });
      }
    }
    await expect(o.store.tenants.get('t1')).rejects.toThrow();
  });

  it('dev_tokens_are_minted_only_when_enabled_and_only_for_initialized_tenants', async () => {
    const o = await opened('sqlite');
    const on = (await bootApp(o.store)).app;
    const off = (await bootApp(o.store, { devTokens: false })).app;
    const ask = {
      principal: 'alice',
      permissions: ['tenant.manage:tenant:t1'],
      audience: CONTROL_PLANE_AUDIENCE,
    };
    expect((await devToken(off, 't1', ask)).statusCode).toBe(404);
    const early = await devToken(on, 't1', ask);
    expect(early.statusCode).toBe(409);
    expect(early.json().code).toBe('FELIX_CONTROLPLANE_NO_ACTIVE_KEY');
    await initialize(on, 't1', { initial_admin_principals: ['alice'] });
    const minted = await devToken(on, 't1', { ...ask, ttl_seconds: 120 });
    expect(minted.statusCode).toBe(200);
    expect(minted.json()).toMatchObject({ token_type: 'Bearer', expires_in: 120 });
    const foreign = await devToken(on, 't1', { ...ask, permissions: ['tenant.manage:tenant:t2'] });
    expect(foreign.statusCode).toBe(400);
    const api = await testApp(o.store, { background: false });
    cleanups.push(() => api.app.close());
    const r = await api.inject({
      method: 'GET',
      url: '/v1/tenants/t1/signing-keys',
      headers: { authorization: `Bearer ${minted.json().token}` },
    });
    expect(r.statusCode).toBe(200);
  });

  it('the_bootstrap_listener_is_off_by_default_and_loopback_unless_allowed', () => {
    const read = () => 'from-file-'.padEnd(40, 'x');
    expect(loadConfig({}).bootstrap.enabled).toBe(false);
    const on = { FELIX_BOOTSTRAP_ENABLED: 'true', FELIX_BOOTSTRAP_TOKEN: TOKEN };
    expect(loadBootstrapConfig(on, read)).toMatchObject({
      enabled: true,
      host: '127.0.0.1',
      port: 9095,
      devTokens: false,
    });
    expect(() => loadBootstrapConfig({ FELIX_BOOTSTRAP_ENABLED: 'true' }, read)).toThrow(
      ConfigInvalidError,
    );
    expect(() => loadBootstrapConfig({ ...on, FELIX_BOOTSTRAP_TOKEN: 'short' }, read)).toThrow(
      /at least 32/,
    );
    const publicBind = { ...on, FELIX_BOOTSTRAP_BIND_ADDR: '0.0.0.0:9095' };
    expect(() => loadBootstrapConfig(publicBind, read)).toThrow(/not loopback/);
    expect(
      loadBootstrapConfig({ ...publicBind, FELIX_BOOTSTRAP_ALLOW_NON_LOOPBACK: 'true' }, read).host,
    ).toBe('0.0.0.0');
    expect(() =>
      loadBootstrapConfig(
        {
          ...publicBind,
          FELIX_BOOTSTRAP_ALLOW_NON_LOOPBACK: 'true',
          FELIX_BOOTSTRAP_DEV_TOKENS: 'true',
        },
        read,
      ),
    ).toThrow(/DEV_TOKENS needs a loopback/);
    const fromFile = loadBootstrapConfig(
      { FELIX_BOOTSTRAP_ENABLED: 'true', FELIX_BOOTSTRAP_TOKEN_FILE: '/x' },
      read,
    );
    expect(fromFile.token).toBe(read());
  });

  it('a_control_plane_refuses_a_listen_port_that_fetch_clients_cannot_reach', () => {
    // Brokers and felixctl speak to the control plane through fetch, which fails "bad port".
    expect(() => loadConfig({ FELIX_CONTROLPLANE_BIND: '0.0.0.0:6000' })).toThrow(/bad port/);
    // A root container can bind the low ones.
    expect(() => loadConfig({ FELIX_CONTROLPLANE_BIND: '0.0.0.0:587' })).toThrow(/bad port/);
    const boot = {
      FELIX_BOOTSTRAP_ENABLED: 'true',
      FELIX_BOOTSTRAP_TOKEN: TOKEN,
      FELIX_BOOTSTRAP_BIND_ADDR: '127.0.0.1:10080',
    };
    expect(() => loadBootstrapConfig(boot, () => '')).toThrow(/bad port/);
    // A listener that does not run is not checked (deployments set the variable everywhere).
    expect(loadBootstrapConfig({ ...boot, FELIX_BOOTSTRAP_ENABLED: 'false' }, () => '').port).toBe(
      10080,
    );
    expect(loadConfig({ FELIX_CONTROLPLANE_BIND: '0.0.0.0:6001' }).port).toBe(6001);
    expect(loadConfig({ FELIX_CONTROLPLANE_BIND: '127.0.0.1:0' }).port).toBe(0);
  });

  it('a_missing_bootstrap_token_file_does_not_stop_a_control_plane_whose_bootstrap_is_off', () => {
    const missing = () => {
      throw Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
    };
    // Deployments set the variable everywhere and enable the listener in one place.
    const off = loadBootstrapConfig({ FELIX_BOOTSTRAP_TOKEN_FILE: '/run/secrets/none' }, missing);
    expect(off.enabled).toBe(false);
    expect(() =>
      loadBootstrapConfig(
        { FELIX_BOOTSTRAP_ENABLED: 'true', FELIX_BOOTSTRAP_TOKEN_FILE: '/run/secrets/none' },
        missing,
      ),
    ).toThrow(/ENOENT/);
  });
});
