// Goal: the HTTP surface answers bad input with the documented code in one error body, serves
// OpenAPI and Swagger UI, and its probes and metrics work. Method: fastify inject on SQLite.
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PostgresDriver } from '../src/store/postgres.js';
import { ControlStore } from '../src/store/store.js';
import { ManualClock, type OpenedStore, openTestStore, testApp, unsignedToken } from './helpers.js';

let opened: OpenedStore;
let built: Awaited<ReturnType<typeof testApp>>;

beforeEach(async () => {
  opened = await openTestStore('sqlite');
  built = await testApp(opened.store);
});
afterEach(async () => {
  await built.app.close();
  await opened.cleanup();
});

async function post(url: string, payload: unknown) {
  return built.inject({ method: 'POST', url, payload: payload as object });
}

describe('api', () => {
  it('an_invalid_name_is_refused_with_its_code', async () => {
    for (const bad of ['', '-lead', 'has space', 'x'.repeat(129), 'slash/name', 'ünï']) {
      const r = await post('/v1/tenants', { tenant_id: bad });
      expect(r.statusCode).toBe(400);
      const body = r.json();
      expect(body.code).toBe('FELIX_CONTROLPLANE_INVALID_NAME');
      expect(typeof body.message).toBe('string');
      expect(body.request_id).toBe(r.headers['x-request-id']);
    }
    expect((await post('/v1/tenants', { tenant_id: 'ok.name_1-x' })).statusCode).toBe(201);
    expect((await post('/v1/tenants', { tenant_id: 'x'.repeat(128) })).statusCode).toBe(201);
    const r = await post('/v1/tenants/ok.name_1-x/namespaces', { namespace: '_hidden' });
    expect(r.json().code).toBe('FELIX_CONTROLPLANE_INVALID_NAME');
  });

  it('malformed_json_is_refused_with_its_code', async () => {
    const r = await built.inject({
      method: 'POST',
      url: '/v1/tenants',
      headers: { 'content-type': 'application/json' },
      payload: '{"tenant_id": ',
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().code).toBe('FELIX_CONTROLPLANE_MALFORMED_JSON');
    const big = await post('/v1/tenants', { tenant_id: 't', display_name: 'x'.repeat(70 * 1024) });
    expect(big.statusCode).toBe(413);
    expect(big.json().code).toBe('FELIX_CONTROLPLANE_PAYLOAD_TOO_LARGE');
  });

  it('an_out_of_range_number_is_refused_with_its_code', async () => {
    await post('/v1/tenants', { tenant_id: 't1' });
    await post('/v1/tenants/t1/namespaces', { namespace: 'ns' });
    for (const body of [
      { stream: 's', shards: 0 },
      { stream: 's', shards: 1025 },
      { stream: 's', replication_factor: 17 },
      { stream: 's', retention: { max_age_seconds: 0 } },
    ]) {
      const r = await post('/v1/tenants/t1/namespaces/ns/streams', body);
      expect(r.statusCode).toBe(400);
      expect(r.json().code).toBe('FELIX_CONTROLPLANE_OUT_OF_RANGE');
    }
    const wrongType = await post('/v1/tenants/t1/namespaces/ns/streams', {
      stream: 's',
      consistency: 'Eventual',
    });
    expect(wrongType.json().code).toBe('FELIX_CONTROLPLANE_INVALID_REQUEST');
    const nothing = await built.inject({
      method: 'GET',
      url: '/v1/tenants/t1/namespaces/ns/streams/s',
    });
    expect(nothing.json().code).toBe('FELIX_CONTROLPLANE_STREAM_NOT_FOUND');
  });

  it('a_wrong_json_type_is_refused_not_converted', async () => {
    const refused = async (r: Awaited<ReturnType<typeof post>>) => {
      expect(r.statusCode).toBe(400);
      expect(r.json()).toMatchObject({
        code: 'FELIX_CONTROLPLANE_INVALID_REQUEST',
        request_id: r.headers['x-request-id'],
      });
    };
    // A number is not a name: no tenant "123" appears.
    await refused(await post('/v1/tenants', { tenant_id: 123 }));
    expect((await built.inject({ method: 'GET', url: '/v1/tenants/123' })).statusCode).toBe(404);
    await post('/v1/tenants', { tenant_id: 't1' });
    await post('/v1/tenants/t1/namespaces', { namespace: 'ns' });
    const streams = '/v1/tenants/t1/namespaces/ns/streams';
    await refused(await post(streams, { stream: 'a', shards: true }));
    await refused(await post(streams, { stream: 'b', shards: '2' }));
    await refused(await post(streams, { stream: 'c', durable: 'false' }));
    await refused(await post(streams, { stream: 'd', retention: { max_age_seconds: '60' } }));
    await refused(await post('/v1/tenants/t1/namespaces/ns/caches', { cache: 'e', shards: '1' }));
    await refused(
      await post('/v1/nodes', { node_id: 'n1', advertise_addr: 'n1:1', incarnation: '1' }),
    );
    expect((await built.inject({ method: 'GET', url: streams })).json().items).toEqual([]);
    expect((await post(streams, { stream: 's', durable: true })).statusCode).toBe(201);
    const patch = await built.inject({
      method: 'PATCH',
      url: `${streams}/s`,
      payload: { durable: 0 },
    });
    await refused(patch);
    expect((await built.inject({ method: 'GET', url: `${streams}/s` })).json().durable).toBe(true);
    // Query strings are text: their numbers still read as numbers, and non-numbers are refused.
    await post('/v1/tenants', { tenant_id: 't2' });
    const page = await built.inject({ method: 'GET', url: '/v1/tenants?limit=1' });
    expect(page.statusCode).toBe(200);
    expect(page.json().items).toHaveLength(1);
    const changes = await built.inject({
      method: 'GET',
      url: '/v1/streams/changes?since=1&limit=1&wait_ms=0',
    });
    expect(changes.json()).toMatchObject({ items: [{ seq: 1, op: 'created' }], next_seq: 2 });
    await refused(await built.inject({ method: 'GET', url: '/v1/tenants?limit=many' }));
    const zero = await built.inject({ method: 'GET', url: '/v1/tenants?limit=0' });
    expect(zero.json().code).toBe('FELIX_CONTROLPLANE_OUT_OF_RANGE');
  });

  it('an_unknown_parent_is_refused_with_its_not_found_code', async () => {
    // No token can name a tenant that does not exist (it has no keys), so an unknown tenant is
    // refused before its existence is looked at: 401, as the reference answers.
    const a = await post('/v1/tenants/nope/namespaces', { namespace: 'ns' });
    expect(a.statusCode).toBe(401);
    expect(a.json().code).toBe('FELIX_CONTROLPLANE_UNAUTHENTICATED');
    await post('/v1/tenants', { tenant_id: 't1' });
    const b = await post('/v1/tenants/t1/namespaces/nope/caches', { cache: 'c' });
    expect(b.statusCode).toBe(404);
    expect(b.json().code).toBe('FELIX_CONTROLPLANE_NAMESPACE_NOT_FOUND');
  });

  it('a_delete_with_a_json_content_type_and_no_body_is_answered_not_refused_as_malformed', async () => {
    // What `curl -H 'content-type: application/json' -X DELETE` sends (found by a new-user trial:
    // it answered 400 MALFORMED_JSON where the stream's absence answers 404).
    await post('/v1/tenants', { tenant_id: 't1' });
    await post('/v1/tenants/t1/namespaces', { namespace: 'ns' });
    const headers = { 'content-type': 'application/json' };
    const url = '/v1/tenants/t1/namespaces/ns/streams/missing';
    const missing = await built.inject({ method: 'DELETE', url, headers });
    expect(missing.statusCode).toBe(404);
    const read = await built.inject({ method: 'GET', url, headers });
    expect(read.statusCode).toBe(404);
    // A body that is there must still be JSON, and a create still needs one.
    const created = await built.inject({ method: 'POST', url: '/v1/tenants', headers });
    expect(created.json().code).toBe('FELIX_CONTROLPLANE_MALFORMED_JSON');
    const bad = await built.inject({ method: 'DELETE', url, headers, payload: '{"x": ' });
    expect(bad.json().code).toBe('FELIX_CONTROLPLANE_MALFORMED_JSON');
  });

  it('a_patch_to_a_fixed_stream_field_is_refused', async () => {
    await post('/v1/tenants', { tenant_id: 't1' });
    await post('/v1/tenants/t1/namespaces', { namespace: 'ns' });
    await post('/v1/tenants/t1/namespaces/ns/streams', { stream: 's', shards: 2, durable: true });
    const bad = await built.inject({
      method: 'PATCH',
      url: '/v1/tenants/t1/namespaces/ns/streams/s',
      payload: { shards: 4 },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('FELIX_CONTROLPLANE_INVALID_REQUEST');
    const ok = await built.inject({
      method: 'PATCH',
      url: '/v1/tenants/t1/namespaces/ns/streams/s',
      payload: { consistency: 'Quorum', retention: { max_age_seconds: 60 } },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({
      shards: 2,
      consistency: 'Quorum',
      retention: { max_age_seconds: 60, max_size_bytes: null },
    });
  });

  it('retention_on_a_stream_that_is_not_durable_is_refused_not_ignored', async () => {
    await post('/v1/tenants', { tenant_id: 't1' });
    await post('/v1/tenants/t1/namespaces', { namespace: 'ns' });
    const streams = '/v1/tenants/t1/namespaces/ns/streams';
    const patch = (name: string, payload: object) =>
      built.inject({ method: 'PATCH', url: `${streams}/${name}`, payload });
    const bad = await post(streams, { stream: 'mem', retention: { max_age_seconds: 10 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('FELIX_CONTROLPLANE_INVALID_REQUEST');
    expect(bad.json().message).toContain('durable');
    expect((await built.inject({ method: 'GET', url: `${streams}/mem` })).statusCode).toBe(404);
    expect((await post(streams, { stream: 'mem' })).statusCode).toBe(201);
    expect((await patch('mem', { retention: { max_size_bytes: 1_000_000 } })).statusCode).toBe(400);
    const kept = await post(streams, {
      stream: 'kept',
      durable: true,
      retention: { max_age_seconds: 10 },
    });
    expect(kept.statusCode).toBe(201);
    // Made in-memory: refused whatever else the patch says (durable is fixed at creation), the
    // stream left as it was; its own value is no change.
    expect((await patch('kept', { durable: false })).statusCode).toBe(400);
    const both = await patch('kept', { durable: false, retention: null });
    expect(both.statusCode).toBe(400);
    expect(both.json().message).toContain('durable is fixed at creation');
    const same = await patch('kept', { durable: true, retention: null });
    expect(same.statusCode).toBe(200);
    expect(same.json()).toMatchObject({ durable: true, retention: { max_age_seconds: null } });
  });

  it('a_cache_takes_a_default_ttl_that_a_patch_changes_or_clears', async () => {
    await post('/v1/tenants', { tenant_id: 't1' });
    await post('/v1/tenants/t1/namespaces', { namespace: 'ns' });
    const caches = '/v1/tenants/t1/namespaces/ns/caches';
    const patch = (payload: object) =>
      built.inject({ method: 'PATCH', url: `${caches}/sessions`, payload });
    for (const bad of [0, -5, 1.5, '60000', 2 ** 46]) {
      const r = await post(caches, { cache: 'sessions', default_ttl_ms: bad });
      expect(r.statusCode, String(bad)).toBe(400);
    }
    expect((await post(caches, { cache: 'plain' })).json().default_ttl_ms).toBeNull();
    const made = await post(caches, { cache: 'sessions', default_ttl_ms: 60_000 });
    expect(made.statusCode).toBe(201);
    expect(made.json().default_ttl_ms).toBe(60_000);
    // The same create again is the same cache; another default TTL is another cache.
    expect((await post(caches, { cache: 'sessions', default_ttl_ms: 60_000 })).statusCode).toBe(
      200,
    );
    expect((await post(caches, { cache: 'sessions', default_ttl_ms: 5_000 })).statusCode).toBe(409);
    expect((await patch({ display_name: 'Sessions' })).json().default_ttl_ms).toBe(60_000);
    expect((await patch({ default_ttl_ms: 5_000 })).json()).toMatchObject({
      display_name: 'Sessions',
      default_ttl_ms: 5_000,
    });
    expect((await patch({ default_ttl_ms: null })).json().default_ttl_ms).toBeNull();
    expect((await patch({})).statusCode).toBe(400);
    expect((await patch({ default_ttl_ms: 0 })).statusCode).toBe(400);
    const listed = (await built.inject({ method: 'GET', url: caches })).json();
    expect(
      listed.items.find((c: { cache: string }) => c.cache === 'sessions').default_ttl_ms,
    ).toBeNull();
  });

  it('a_create_with_an_unknown_field_is_refused_and_writes_nothing', async () => {
    const refusedNaming = async (r: Awaited<ReturnType<typeof post>>, field: string) => {
      expect(r.statusCode, r.body).toBe(400);
      expect(r.json()).toMatchObject({
        code: 'FELIX_CONTROLPLANE_INVALID_REQUEST',
        request_id: r.headers['x-request-id'],
      });
      expect(r.json().message).toContain(`'${field}'`);
    };
    const get = (url: string) => built.inject({ method: 'GET', url });
    await refusedNaming(
      await post('/v1/tenants', { tenant_id: 'tx', dispaly_name: 'X' }),
      'dispaly_name',
    );
    expect((await get('/v1/tenants/tx')).statusCode).toBe(404);
    await post('/v1/tenants', { tenant_id: 't1' });
    const namespaces = '/v1/tenants/t1/namespaces';
    await refusedNaming(await post(namespaces, { namespace: 'nx', owner: 'me' }), 'owner');
    expect((await get(`${namespaces}/nx`)).statusCode).toBe(404);
    await post(namespaces, { namespace: 'ns' });
    // A typo for `durable` must not make an in-memory stream.
    const streams = `${namespaces}/ns/streams`;
    await refusedNaming(await post(streams, { stream: 'pay', durabel: true }), 'durabel');
    await refusedNaming(
      await post(streams, { stream: 'pay', retention: { max_age: 60 } }),
      'max_age',
    );
    expect((await get(`${streams}/pay`)).statusCode).toBe(404);
    const caches = `${namespaces}/ns/caches`;
    await refusedNaming(await post(caches, { cache: 'c', shard: 4 }), 'shard');
    expect((await get(`${caches}/c`)).statusCode).toBe(404);
    const node = { node_id: 'n1', advertise_addr: 'n1:1', incarnation: 1 };
    await refusedNaming(await post('/v1/nodes', { ...node, zones: 'a' }), 'zones');
    await refusedNaming(
      await post('/v1/nodes', { ...node, capacity: { max_shard: 1 } }),
      'max_shard',
    );
    expect((await get('/v1/nodes/n1')).statusCode).toBe(404);
    expect((await post('/v1/nodes', node)).statusCode).toBe(200);
    await refusedNaming(await post('/v1/nodes/n1/heartbeat', { incarnation: 1, load: 3 }), 'load');
  });

  it('a_routine_request_logs_no_info_line_and_a_refused_one_logs_one', async () => {
    // Heartbeats and feed long polls arrive every few seconds from every broker: at info,
    // fastify's own two lines per request buried everything else (1,066 lines in 5 minutes
    // with two brokers in an SRE trial). A refusal is still worth a line.
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino(
      { level: 'info' },
      { write: (l: string) => void lines.push(JSON.parse(l)) },
    );
    const own = await openTestStore('sqlite');
    const app = await testApp(own.store, { background: false, logger });
    try {
      const ok = await app.inject({ method: 'GET', url: '/v1/tenants' });
      expect(ok.statusCode).toBe(200);
      expect(lines.filter((l) => (l.level as number) >= 30)).toEqual([]);
      const missing = await app.inject({ method: 'GET', url: '/v1/tenants/nobody' });
      expect(missing.statusCode).toBe(404);
      const said = lines.filter((l) => (l.level as number) >= 30);
      expect(said).toHaveLength(1);
      expect(said[0]).toMatchObject({
        msg: 'request answered with a refusal',
        status: 404,
        method: 'GET',
        url: '/v1/tenants/nobody',
      });
    } finally {
      await app.app.close();
      await own.cleanup();
    }
  });

  it('a_nul_character_in_a_text_field_is_refused_with_400_on_both_stores', async () => {
    for (const backend of ['sqlite', 'postgres'] as const) {
      const own = await openTestStore(backend);
      const app = await testApp(own.store, { background: false });
      const send = (url: string, payload: object, method: 'POST' | 'PATCH' = 'POST') =>
        app.inject({ method, url, payload });
      const refused = async (url: string, payload: object, method?: 'PATCH') => {
        const r = await send(url, payload, method);
        expect(r.statusCode, `${backend} ${url} ${r.body}`).toBe(400);
        expect(r.json().code).toBe('FELIX_CONTROLPLANE_INVALID_REQUEST');
        expect(r.json().message).toContain('control character');
      };
      try {
        await refused('/v1/tenants', { tenant_id: 'tn', display_name: 'a\u0000b' });
        await refused('/v1/tenants', { tenant_id: 'tn', display_name: 'tab\there' });
        expect((await app.inject({ method: 'GET', url: '/v1/tenants/tn' })).statusCode).toBe(404);
        expect((await send('/v1/tenants', { tenant_id: 't1' })).statusCode).toBe(201);
        const ns = '/v1/tenants/t1/namespaces';
        await refused(ns, { namespace: 'ns', display_name: 'x\u0000' });
        expect((await send(ns, { namespace: 'ns' })).statusCode).toBe(201);
        await refused(`${ns}/ns/caches`, { cache: 'c', display_name: 'del\u007f' });
        expect((await send(`${ns}/ns/caches`, { cache: 'c' })).statusCode).toBe(201);
        await refused(`${ns}/ns/caches/c`, { display_name: 'x\u001f' }, 'PATCH');
        const node = { node_id: 'n1', advertise_addr: 'h:1', incarnation: 1 };
        await refused('/v1/nodes', { ...node, advertise_addr: 'h:1\u0000' });
        await refused('/v1/nodes', { ...node, zone: 'z\u0000' });
        await refused('/v1/nodes', { ...node, labels: { 'a\u0000': 'b' } });
        await refused('/v1/nodes', { ...node, labels: { a: 'b\n' } });
        expect((await app.inject({ method: 'GET', url: '/v1/nodes/n1' })).statusCode).toBe(404);
        await refused('/v1/tenants/t1/rbac/bindings', { subject: 'p\u0000', role: 'admin' });
        await refused('/v1/tenants/t1/refresh-tokens/revoke', { principal_id: 'p\u0000' });
        // Printable text beyond ASCII is fine.
        const ok = await send('/v1/tenants', { tenant_id: 't2', display_name: 'Zürich — 東京' });
        expect(ok.statusCode, ok.body).toBe(201);
      } finally {
        await app.app.close();
        await own.cleanup();
      }
    }
  });

  it('a_bad_enum_value_is_refused_naming_the_field_and_its_allowed_values', async () => {
    await post('/v1/tenants', { tenant_id: 't1' });
    await post('/v1/tenants/t1/namespaces', { namespace: 'ns' });
    const streams = '/v1/tenants/t1/namespaces/ns/streams';
    const bad = await post(streams, { stream: 's', consistency: 'quorum' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({
      code: 'FELIX_CONTROLPLANE_INVALID_REQUEST',
      message: "body/consistency must be one of 'Leader', 'Quorum'",
    });
    const routing = await post(streams, { stream: 's', routing: 'hash' });
    expect(routing.json().message).toBe("body/routing must be one of 'modulo', 'jump_hash'");
    const cache = await post('/v1/tenants/t1/namespaces/ns/caches', {
      cache: 'c',
      consistency: 'Eventual',
    });
    expect(cache.json().message).toBe("body/consistency must be one of 'Leader', 'Quorum'");
    const query = await built.inject({ method: 'GET', url: '/v1/nodes?lifecycle=gone' });
    expect(query.json().message).toBe(
      "querystring/lifecycle must be one of 'live', 'draining', 'down', 'left'",
    );
    expect((await built.inject({ method: 'GET', url: `${streams}/s` })).statusCode).toBe(404);
  });

  it('an_unknown_route_answers_the_error_body', async () => {
    const r = await built.inject({ method: 'GET', url: '/v1/nothing-here' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toMatchObject({ code: 'FELIX_CONTROLPLANE_ROUTE_NOT_FOUND' });
  });

  it('the_openapi_document_lists_every_v1_route_and_swagger_ui_is_served', async () => {
    const doc = (await built.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    expect(doc.openapi).toMatch(/^3\./);
    for (const path of [
      '/v1/tenants',
      '/v1/tenants/{tenant_id}/namespaces/{namespace}/streams/{stream}',
      '/v1/tenants/{tenant_id}/namespaces/{namespace}/caches',
      '/v1/nodes',
      '/v1/nodes/{node_id}/heartbeat',
      '/v1/shard-assignments/changes',
      '/v1/placement/plan',
      '/v1/system/ready',
    ]) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    const ui = await built.inject({ method: 'GET', url: '/docs/' });
    expect(ui.statusCode).toBe(200);
    expect(ui.body).toContain('swagger');
  });

  it('every_routes_schemas_compile_though_each_waits_for_its_first_request', async () => {
    // Ready, and no route called yet: every validator and serializer is still to compile.
    const waiting = built.compileSchemas();
    expect(waiting).toBeGreaterThan(100);
    expect(built.compileSchemas()).toBe(0);
    // A route compiled this way still refuses a wrong type (its validator is the real one).
    const r = await post('/v1/tenants', { tenant_id: 123 });
    expect(r.statusCode).toBe(400);
  });

  it('a_node_view_ages_on_the_stores_clock', async () => {
    // The app has no clock of its own: it reads the store's, so a node's heartbeat age is
    // measured against the very clock that stamped the heartbeat.
    const clock = new ManualClock(86_400_000);
    const own = await openTestStore('sqlite', { clock });
    const app = await testApp(own.store, { background: false });
    try {
      const reg = await app.inject({
        method: 'POST',
        url: '/v1/nodes',
        payload: { node_id: 'n1', advertise_addr: 'n1:1', incarnation: 1 },
      });
      expect(reg.json().node.status.last_heartbeat_at_ms).toBe(86_400_000);
      clock.advance(2500);
      const view = (await app.inject({ method: 'GET', url: '/v1/nodes/n1' })).json();
      expect(view.placement.heartbeat_age_ms).toBe(2500);
    } finally {
      await app.app.close();
      await own.cleanup();
    }
  });

  it('readiness_fails_while_the_store_is_unreachable', async () => {
    const driver = new PostgresDriver({
      url: 'postgres://postgres@127.0.0.1:1/none',
      maxConnections: 1,
      connectTimeoutMs: 500,
    });
    const store = new ControlStore(driver, { changeRetentionRows: 10 });
    const down = await testApp(store, { background: false });
    try {
      const open = { authorization: '' };
      expect(
        (await down.inject({ method: 'GET', url: '/v1/system/live', headers: open })).statusCode,
      ).toBe(200);
      const ready = await down.inject({ method: 'GET', url: '/v1/system/ready', headers: open });
      expect(ready.statusCode).toBe(503);
      expect(ready.json().code).toBe('FELIX_CONTROLPLANE_NOT_READY');
      // A well-formed token: the guard must read the tenant's keys, and the store is down.
      const list = await down.inject({
        method: 'GET',
        url: '/v1/tenants',
        headers: { authorization: `Bearer ${unsignedToken('operator')}` },
      });
      expect(list.statusCode).toBe(503);
      expect(list.json().code).toBe('FELIX_CONTROLPLANE_STORE_UNAVAILABLE');
    } finally {
      await down.app.close();
      await store.close();
    }
  });

  it('the_system_probes_and_metrics_answer', async () => {
    expect((await built.inject({ method: 'GET', url: '/v1/system/live' })).json()).toEqual({
      status: 'ok',
    });
    const ready = await built.inject({ method: 'GET', url: '/v1/system/ready' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().status).toBe('ready');
    const info = (await built.inject({ method: 'GET', url: '/v1/system/info' })).json();
    expect(info).toMatchObject({ api_version: 'v1', store: 'sqlite', region_id: 'local' });
    // A trial read `durable_storage: false` beside three brokers with data dirs: the flags say
    // what this build offers, and it keeps durable logs.
    expect(info.features).toEqual({ durable_storage: true, tiered_storage: false, bridges: false });
    const metrics = await built.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain('felix_controlplane_http_requests_total');
  });
});
