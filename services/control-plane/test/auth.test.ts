// Goal: every /v1 route needs a control-plane token with the permission the table gives it,
// checked before existence; broker-audience, expired and foreign-key tokens are refused; node
// writes need the node's own credential or an operator's; key rotation keeps tokens verifying
// until their key is retired. Method: fastify inject on SQLite, tokens minted from the store.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { BROKER_AUDIENCE, signToken, generateSigningKey } from '@felix/authz';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { installGuard } from '../src/http/auth/guard.js';
import { TenantKeyCache } from '../src/auth/keys.js';
import { createMetrics } from '../src/metrics.js';
import {
  ManualClock,
  OPERATOR_PERMISSIONS,
  type OpenedStore,
  openTestStore,
  testApp,
} from './helpers.js';

const DOCS = resolve(import.meta.dirname, '../../../docs/control-plane.md');
/** The /v1 operations that stay open (docs/control-plane.md, "Permissions"). */
const OPEN_ROUTES = new Set([
  'GET /v1/system/live',
  'GET /v1/system/ready',
  'GET /v1/system/info',
  'GET /v1/tenants/{tenant_id}/.well-known/jwks.json',
]);

let opened: OpenedStore;
let built: Awaited<ReturnType<typeof testApp>>;
let clock: ManualClock;

beforeEach(async () => {
  clock = new ManualClock();
  opened = await openTestStore('sqlite', { clock });
  built = await testApp(opened.store, { background: false });
});
afterEach(async () => {
  await built.app.close();
  await opened.cleanup();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function tenantWithNamespace(t = 't1') {
  await built.inject({ method: 'POST', url: '/v1/tenants', payload: { tenant_id: t } });
  await built.inject({
    method: 'POST',
    url: `/v1/tenants/${t}/namespaces`,
    payload: { namespace: 'ns' },
  });
}

/** The permission table of docs/control-plane.md: `METHOD /path` → the permission text. */
function documentedTable(): Map<string, string> {
  const rows = new Map<string, string>();
  const row = /^\| `(GET|POST|PUT|PATCH|DELETE) ([^`]+)` \| `([^`]+)` \|/;
  for (const line of readFileSync(DOCS, 'utf8').split('\n')) {
    const m = row.exec(line);
    if (m) rows.set(`${m[1]} ${m[2]}`, m[3]!);
  }
  return rows;
}

describe('control-plane auth', () => {
  it('every_v1_route_requires_a_permission', async () => {
    const doc = built.app.swagger() as {
      paths: Record<string, Record<string, { 'x-felix-auth'?: string }>>;
    };
    const documented = documentedTable();
    const problems: string[] = [];
    let operations = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const key = `${method.toUpperCase()} ${path}`;
        operations++;
        const auth = op['x-felix-auth'];
        if (auth === undefined) problems.push(`${key}: no x-felix-auth`);
        else if (path.startsWith('/v1/') && auth === 'open' && !OPEN_ROUTES.has(key))
          problems.push(`${key}: open but not in the documented open list`);
        if (documented.get(key) !== auth)
          problems.push(`${key}: docs say ${documented.get(key) ?? 'nothing'}, route says ${auth}`);
      }
    }
    expect(problems).toEqual([]);
    expect(operations).toBeGreaterThan(30);
    // And every documented row is a route (the table cannot keep a row for a route that went).
    for (const key of documented.keys()) {
      const [method, path] = key.split(' ') as [string, string];
      expect(doc.paths[path]?.[method.toLowerCase()], key).toBeDefined();
    }
  });

  it('a_route_without_an_auth_declaration_fails_the_start', async () => {
    const app = Fastify();
    installGuard(app, {
      keys: new TenantKeyCache(opened.store, clock),
      metrics: createMetrics(),
      clock,
    });
    expect(() => app.get('/v1/undeclared', async () => 'x')).toThrow(/declares no config.auth/);
    await app.close();
  });

  it('a_principal_route_takes_only_tokens_of_its_own_tenant_and_a_credential_route_takes_none', async () => {
    const app = Fastify();
    installGuard(app, {
      keys: new TenantKeyCache(opened.store, clock),
      metrics: createMetrics(),
      clock,
    });
    app.post('/v1/tenants/:tenant_id/whoami', {
      config: { auth: { kind: 'principal', describe: 'any principal of the tenant' } },
      handler: async (req) => ({ sub: req.principal?.claims.sub }),
    });
    app.post('/v1/tenants/:tenant_id/refresh', {
      config: { auth: { kind: 'credential', describe: 'a refresh token in the body' } },
      handler: async (req) => ({ principal: req.principal ?? null }),
    });
    app.setErrorHandler((err, _req, reply) =>
      reply
        .code((err as { status?: number }).status ?? 500)
        .send({ code: (err as { code?: string }).code }),
    );
    await built.inject({ method: 'POST', url: '/v1/tenants', payload: { tenant_id: 't1' } });
    await built.inject({ method: 'POST', url: '/v1/tenants', payload: { tenant_id: 't2' } });
    const t1 = await built.tokens.mint('t1', [], { subject: 'alice' });
    const mine = await app.inject({
      method: 'POST',
      url: '/v1/tenants/t1/whoami',
      headers: bearer(t1),
    });
    expect(mine.json()).toEqual({ sub: 'alice' });
    const theirs = await app.inject({
      method: 'POST',
      url: '/v1/tenants/t2/whoami',
      headers: bearer(t1),
    });
    expect(theirs.statusCode).toBe(403);
    expect((await app.inject({ method: 'POST', url: '/v1/tenants/t1/whoami' })).statusCode).toBe(
      401,
    );
    const open = await app.inject({ method: 'POST', url: '/v1/tenants/t1/refresh' });
    expect(open.json()).toEqual({ principal: null });
    await app.close();
  });

  it('a_request_without_a_token_is_unauthenticated_and_names_what_it_needs', async () => {
    const r = await built.inject({
      method: 'GET',
      url: '/v1/tenants',
      headers: { authorization: '' },
    });
    expect(r.statusCode).toBe(401);
    expect(r.json()).toMatchObject({ code: 'FELIX_CONTROLPLANE_UNAUTHENTICATED' });
    expect(r.json().request_id).toBe(r.headers['x-request-id']);
    const garbage = await built.inject({
      method: 'GET',
      url: '/v1/tenants',
      headers: bearer('abc'),
    });
    expect(garbage.statusCode).toBe(401);
    const basic = await built.inject({
      method: 'GET',
      url: '/v1/tenants',
      headers: { authorization: 'Basic eDp5' },
    });
    expect(basic.statusCode).toBe(401);
    const metrics = await built.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: '' },
    });
    expect(metrics.body).toMatch(/felix_controlplane_auth_refusals_total\{reason="no_token"\} 1/);
  });

  it('a_broker_token_cannot_call_the_control_plane', async () => {
    const token = await built.tokens.mint('operator', OPERATOR_PERMISSIONS, {
      audience: BROKER_AUDIENCE,
    });
    const r = await built.inject({ method: 'GET', url: '/v1/tenants', headers: bearer(token) });
    expect(r.statusCode).toBe(401);
    expect(r.json().code).toBe('FELIX_CONTROLPLANE_UNAUTHENTICATED');
    expect(r.json().message).toContain('felix-controlplane');
    const ok = await built.inject({
      method: 'GET',
      url: '/v1/tenants',
      headers: bearer(await built.tokens.operator()),
    });
    expect(ok.statusCode).toBe(200);
  });

  it('a_token_without_the_permission_is_forbidden_with_action_and_object_named', async () => {
    await tenantWithNamespace();
    const reader = await built.tokens.mint('t1', ['stream.subscribe:stream:t1/ns/*']);
    const r = await built.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces/ns/streams',
      headers: bearer(reader),
      payload: { stream: 'orders' },
    });
    expect(r.statusCode).toBe(403);
    expect(r.json().code).toBe('FELIX_CONTROLPLANE_FORBIDDEN');
    expect(r.json().message).toContain('stream.manage on stream:t1/ns/orders');
    // A grant on one stream allows that stream only.
    const one = await built.tokens.mint('t1', ['stream.manage:stream:t1/ns/orders']);
    const create = (stream: string) =>
      built.inject({
        method: 'POST',
        url: '/v1/tenants/t1/namespaces/ns/streams',
        headers: bearer(one),
        payload: { stream },
      });
    expect((await create('orders')).statusCode).toBe(201);
    expect((await create('other')).statusCode).toBe(403);
    // Listing needs the grant on every stream of the namespace.
    const list = await built.inject({
      method: 'GET',
      url: '/v1/tenants/t1/namespaces/ns/streams',
      headers: bearer(one),
    });
    expect(list.statusCode).toBe(403);
    expect(list.json().message).toContain('stream:t1/ns/*');
  });

  it('permission_is_checked_before_existence', async () => {
    await tenantWithNamespace();
    const outsider = await built.tokens.mint('t1', ['cache.read:cache:t1/ns/c']);
    // The stream does not exist, but a caller without stream.manage learns only 403.
    const r = await built.inject({
      method: 'GET',
      url: '/v1/tenants/t1/namespaces/ns/streams/ghost',
      headers: bearer(outsider),
    });
    expect(r.statusCode).toBe(403);
    const admin = await built.tokens.tenantAdmin('t1');
    const missing = await built.inject({
      method: 'GET',
      url: '/v1/tenants/t1/namespaces/ns/streams/ghost',
      headers: bearer(admin!),
    });
    expect(missing.statusCode).toBe(404);
    // The operator can make tenants but sees nothing inside one (cluster:* is an island).
    const op = await built.tokens.operator();
    const inside = await built.inject({
      method: 'GET',
      url: '/v1/tenants/t1/namespaces',
      headers: bearer(op),
    });
    expect(inside.statusCode).toBe(403);
  });

  it('a_control_plane_token_signed_with_another_tenants_key_is_refused', async () => {
    await tenantWithNamespace('t1');
    await tenantWithNamespace('t2');
    await built.tokens.tenantAdmin('t2');
    const t2Key = await opened.store.signingKeys.active('t2');
    const { importPrivateJwk } = await import('@felix/authz');
    const forged = await signToken(
      {
        audience: 'felix-controlplane',
        subject: 'mallory',
        tenant: 't1',
        permissions: ['tenant.manage:tenant:t1'],
        lifetimeS: 60,
      },
      await importPrivateJwk(t2Key!.private_jwk),
    );
    const r = await built.inject({
      method: 'GET',
      url: '/v1/tenants/t1/namespaces',
      headers: bearer(forged),
    });
    expect(r.statusCode).toBe(401);
    // A key nobody stored at all is refused the same way.
    const stray = await generateSigningKey();
    const alien = await signToken(
      {
        audience: 'felix-controlplane',
        subject: 'x',
        tenant: 't1',
        permissions: [],
        lifetimeS: 60,
      },
      stray,
    );
    expect(
      (
        await built.inject({
          method: 'GET',
          url: '/v1/tenants/t1/namespaces',
          headers: bearer(alien),
        })
      ).statusCode,
    ).toBe(401);
  });

  it('an_expired_token_is_refused_by_the_control_plane', async () => {
    const op = await built.tokens.mint('operator', OPERATOR_PERMISSIONS, { lifetimeS: 60 });
    expect(
      (await built.inject({ method: 'GET', url: '/v1/tenants', headers: bearer(op) })).statusCode,
    ).toBe(200);
    // Past exp plus the 30 s of allowed skew (the guard reads the store's clock).
    clock.advance(91_000);
    const r = await built.inject({ method: 'GET', url: '/v1/tenants', headers: bearer(op) });
    expect(r.statusCode).toBe(401);
    expect(r.json().message).toMatch(/expired/);
  });

  it('a_client_token_cannot_register_a_node', async () => {
    await tenantWithNamespace();
    const client = await built.tokens.mint('t1', [
      'tenant.manage:tenant:t1',
      'stream.publish:stream:t1/*/*',
    ]);
    const reg = { node_id: 'n1', advertise_addr: 'n1:5001', incarnation: 1 };
    const r = await built.inject({
      method: 'POST',
      url: '/v1/nodes',
      headers: bearer(client),
      payload: reg,
    });
    expect(r.statusCode).toBe(403);
    expect(r.json().message).toContain('node.manage on node:n1');
    const hb = await built.inject({
      method: 'POST',
      url: '/v1/nodes/n1/heartbeat',
      headers: bearer(client),
      payload: { incarnation: 1 },
    });
    expect(hb.statusCode).toBe(403);
    expect(
      (await built.inject({ method: 'GET', url: '/v1/nodes', headers: bearer(client) })).statusCode,
    ).toBe(403);
  });

  it('a_node_credential_manages_only_its_own_node', async () => {
    const n1 = await built.tokens.mint('operator', ['node.manage:node:n1', 'node.view:cluster:*'], {
      subject: 'node-n1',
    });
    const reg = (id: string) =>
      built.inject({
        method: 'POST',
        url: '/v1/nodes',
        headers: bearer(n1),
        payload: { node_id: id, advertise_addr: `${id}:5001`, incarnation: 1 },
      });
    expect((await reg('n1')).statusCode).toBe(200);
    expect((await reg('n2')).statusCode).toBe(403);
    const hb = await built.inject({
      method: 'POST',
      url: '/v1/nodes/n1/heartbeat',
      headers: bearer(n1),
      payload: { incarnation: 1 },
    });
    expect(hb.statusCode).toBe(200);
    expect(
      (
        await built.inject({
          method: 'GET',
          url: '/v1/shard-assignments/snapshot',
          headers: bearer(n1),
        })
      ).statusCode,
    ).toBe(200);
    // Forgetting a node is an operator's act, never a node's.
    expect(
      (await built.inject({ method: 'DELETE', url: '/v1/nodes/n1', headers: bearer(n1) }))
        .statusCode,
    ).toBe(403);
    const other = await built.inject({
      method: 'POST',
      url: '/v1/nodes/n2/drain',
      headers: bearer(n1),
    });
    expect(other.statusCode).toBe(403);
  });

  it('the_jwks_lists_staged_and_active_keys_without_a_token', async () => {
    await tenantWithNamespace();
    const admin = (await built.tokens.tenantAdmin('t1'))!;
    const jwks = async () =>
      (
        await built.inject({
          method: 'GET',
          url: '/v1/tenants/t1/.well-known/jwks.json',
          headers: { authorization: '' },
        })
      ).json() as {
        keys: {
          kid: string;
          kty: string;
          crv: string;
          alg: string;
          use: string;
          x: string;
          d?: string;
        }[];
      };
    const first = await jwks();
    expect(first.keys).toHaveLength(1);
    expect(first.keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(first.keys[0]!.d).toBeUndefined();
    const staged = await built.inject({
      method: 'POST',
      url: '/v1/tenants/t1/signing-keys',
      headers: bearer(admin),
    });
    expect(staged.statusCode).toBe(201);
    expect((await jwks()).keys.map((k) => k.kid).sort()).toEqual(
      [first.keys[0]!.kid, staged.json().kid].sort(),
    );
    const unknown = await built.inject({
      method: 'GET',
      url: '/v1/tenants/nope/.well-known/jwks.json',
      headers: { authorization: '' },
    });
    expect(unknown.json()).toEqual({ keys: [] });
  });

  it('retiring_the_active_key_is_refused', async () => {
    await tenantWithNamespace();
    const admin = (await built.tokens.tenantAdmin('t1'))!;
    const list = await built.inject({
      method: 'GET',
      url: '/v1/tenants/t1/signing-keys',
      headers: bearer(admin),
    });
    const active = list.json().items.find((k: { status: string }) => k.status === 'active');
    const r = await built.inject({
      method: 'DELETE',
      url: `/v1/tenants/t1/signing-keys/${active.kid}`,
      headers: bearer(admin),
    });
    expect(r.statusCode).toBe(409);
    expect(r.json().code).toBe('FELIX_CONTROLPLANE_SIGNING_KEY_STATE');
    expect(JSON.stringify(list.json())).not.toContain('"d"');
  });

  it('a_rotated_key_keeps_old_tokens_valid_until_it_is_retired', async () => {
    await tenantWithNamespace();
    const oldToken = (await built.tokens.tenantAdmin('t1'))!;
    const call = (token: string) =>
      built.inject({ method: 'GET', url: '/v1/tenants/t1/namespaces', headers: bearer(token) });
    const oldKid = (await opened.store.signingKeys.active('t1'))!.kid;
    const staged = (
      await built.inject({
        method: 'POST',
        url: '/v1/tenants/t1/signing-keys',
        headers: bearer(oldToken),
      })
    ).json();
    const act = await built.inject({
      method: 'POST',
      url: `/v1/tenants/t1/signing-keys/${staged.kid}/activate`,
      headers: bearer(oldToken),
    });
    expect(act.json().status).toBe('active');
    // New tokens are signed with the new key; the old token still verifies (its key is staged).
    const fresh = await built.tokens.mint('t1', ['tenant.manage:tenant:t1'], {
      subject: 'after-rotation',
    });
    expect(JSON.parse(Buffer.from(fresh.split('.')[0]!, 'base64url').toString()).kid).toBe(
      staged.kid,
    );
    expect((await call(oldToken)).statusCode).toBe(200);
    const retire = await built.inject({
      method: 'DELETE',
      url: `/v1/tenants/t1/signing-keys/${oldKid}`,
      headers: bearer(fresh),
    });
    expect(retire.json().status).toBe('retired');
    expect((await call(oldToken)).statusCode).toBe(401);
    expect((await call(fresh)).statusCode).toBe(200);
  });
});
