// Goal: a node registers whether it keeps its logs on disk (absent: taken as durable), and
// `POST /v1/nodes/{node_id}/accept-loss` is the operator's explicit way to give up a lost node's
// data: refused for a live node, it moves the cache shard that waits for its durable owner.
// Method: fastify inject over a SQLite store, brokers simulated by requests, the owner marked
// down in the store (its lease lapsed).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type OpenedStore, openTestStore, testApp } from './helpers.js';

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

function register(id: string, extra: Record<string, unknown> = {}) {
  return built.inject({
    method: 'POST',
    url: '/v1/nodes',
    payload: { node_id: id, advertise_addr: `${id}:5001`, zone: id, incarnation: 1, ...extra },
  });
}

describe('accepting a lost node', () => {
  it('a_node_registers_whether_it_keeps_its_logs_on_disk', async () => {
    expect((await register('disk', { durable_storage: true })).json().node.spec).toMatchObject({
      durable_storage: true,
    });
    expect((await register('mem', { durable_storage: false })).json().node.spec).toMatchObject({
      durable_storage: false,
    });
    // A registration that does not say may come from a durable broker: nothing is given away.
    expect((await register('old')).json().node.spec.durable_storage).toBe(true);
    const wrong = await register('bad', { durable_storage: 'yes' });
    expect(wrong.statusCode).toBe(400);
  });

  it('accept_loss_moves_a_waiting_cache_shard_only_once_its_owner_is_down', async () => {
    for (const id of ['n1', 'n2', 'n3']) expect((await register(id)).statusCode).toBe(200);
    await built.inject({ method: 'POST', url: '/v1/tenants', payload: { tenant_id: 't1' } });
    await built.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces',
      payload: { namespace: 'ns' },
    });
    const created = await built.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces/ns/caches',
      payload: { cache: 'users', shards: 1, replication_factor: 1 },
    });
    expect(created.statusCode).toBe(201);
    await built.placement.trigger();
    const [before] = (await built.inject({ method: 'GET', url: '/v1/shard-assignments' })).json()
      .items as { leader: string; generation: number }[];
    const accept = () =>
      built.inject({ method: 'POST', url: `/v1/nodes/${before!.leader}/accept-loss` });
    const live = await accept();
    expect(live.statusCode).toBe(409);
    expect(live.json().code).toBe('FELIX_CONTROLPLANE_NODE_STATE_CONFLICT');
    const stamp = (await opened.store.nodes.liveStamps()).find((s) => s.node_id === before!.leader);
    expect(await opened.store.nodes.markDown(before!.leader, stamp!.stamp)).toBe(true);
    await built.placement.trigger();
    const waiting = (await built.inject({ method: 'GET', url: '/v1/shard-assignments' })).json();
    expect(waiting.items[0].leader).toBe(before!.leader);
    const ok = await accept();
    expect(ok.statusCode).toBe(200);
    const body = ok.json();
    expect(body.still_led).toBe(0);
    expect(body.moved).toHaveLength(1);
    expect(body.moved[0]).toMatchObject({ kind: 'cache', generation: before!.generation + 1 });
    expect(body.moved[0].leader).not.toBe(before!.leader);
    // Restarted empty on a node that held no copy: the generation it restarted at is its floor.
    expect(body.moved[0].floor_generation).toBe(before!.generation + 1);
    const listed = (await built.inject({ method: 'GET', url: '/v1/shard-assignments' })).json();
    expect(listed.items[0].floor_generation).toBe(before!.generation + 1);
  });
});
