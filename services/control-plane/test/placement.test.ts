// Goal: the control plane places shards by rendezvous hashing across zones, keys shards by kind,
// moves a dead leader's shards to a live replica with a new generation, and unassigns on delete.
// Method: fastify inject; nodes registered through the API; placement checked against
// @felix/router computed independently; short liveness timings where a node must die.
import { type PlacementNode, placeShard } from '@felix/router';
import { waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import type { AssignmentRecord } from '../src/store/types.js';
import { FAST_LIVENESS, type OpenedStore, openTestStore, testApp } from './helpers.js';

let opened: OpenedStore | undefined;
let built: Awaited<ReturnType<typeof testApp>> | undefined;
const timers: NodeJS.Timeout[] = [];

afterEach(async () => {
  for (const t of timers.splice(0)) clearInterval(t);
  await built?.app.close();
  await opened?.cleanup();
  built = undefined;
  opened = undefined;
});

async function start(liveness?: typeof FAST_LIVENESS) {
  opened = await openTestStore('sqlite');
  built = await testApp(opened.store, liveness ? { liveness } : {});
  const app = built;
  await app.inject({ method: 'POST', url: '/v1/tenants', payload: { tenant_id: 't1' } });
  await app.inject({
    method: 'POST',
    url: '/v1/tenants/t1/namespaces',
    payload: { namespace: 'ns' },
  });
  return built;
}

async function register(id: string, zone: string | null) {
  const r = await built!.inject({
    method: 'POST',
    url: '/v1/nodes',
    payload: { node_id: id, advertise_addr: `${id}:5001`, zone, incarnation: 1 },
  });
  expect(r.statusCode).toBe(200);
}

async function assignments(): Promise<AssignmentRecord[]> {
  return (await built!.inject({ method: 'GET', url: '/v1/shard-assignments' })).json().items;
}

describe('control plane placement', () => {
  it('assignments_follow_rendezvous_placement_across_zones', async () => {
    await start();
    const nodes = [
      ['a1', 'za'],
      ['a2', 'za'],
      ['b1', 'zb'],
      ['b2', 'zb'],
      ['c1', 'zc'],
      ['c2', 'zc'],
    ] as const;
    for (const [id, zone] of nodes) await register(id, zone);
    const created = await built!.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces/ns/streams',
      payload: { stream: 'orders', shards: 12, replication_factor: 3 },
    });
    expect(created.statusCode).toBe(201);
    await built!.placement.trigger();
    const got = await assignments();
    expect(got).toHaveLength(12);
    const view: PlacementNode[] = nodes.map(([id, zone]) => ({
      nodeId: id,
      zone,
      eligible: true,
      routable: true,
      maxShards: 0,
    }));
    const zoneOf = new Map<string, string>(nodes.map(([id, zone]) => [id, zone]));
    for (const a of got) {
      const expected = placeShard(
        {
          key: { kind: 'stream', tenant: 't1', namespace: 'ns', name: 'orders', shard: a.shard },
          replicationFactor: 3,
        },
        view,
      );
      if (!expected.placed) throw new Error('expected a placement');
      expect({ leader: a.leader, replicas: a.replicas, generation: a.generation }).toEqual(
        expected.assignment,
      );
      expect(new Set(a.replicas.map((id) => zoneOf.get(id))).size).toBe(3);
    }
    // Leadership is spread, not piled on one node.
    expect(new Set(got.map((a) => a.leader)).size).toBeGreaterThan(2);
  });

  it('a_stream_and_a_cache_with_one_name_are_different_shards', async () => {
    await start();
    for (let i = 0; i < 8; i++) await register(`n${i}`, null);
    const app = built!;
    await app.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces/ns/streams',
      payload: { stream: 'x', shards: 8 },
    });
    await app.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces/ns/caches',
      payload: { cache: 'x', shards: 8 },
    });
    await built!.placement.trigger();
    const all = await assignments();
    expect(all).toHaveLength(16);
    const streams = all.filter((a) => a.kind === 'stream');
    const caches = all.filter((a) => a.kind === 'cache');
    expect(streams).toHaveLength(8);
    expect(caches).toHaveLength(8);
    const differ = streams.filter(
      (s) => caches.find((c) => c.shard === s.shard)!.leader !== s.leader,
    );
    expect(differ.length).toBeGreaterThan(0);
    // Deleting the stream leaves the cache's shards alone.
    const del = await app.inject({
      method: 'DELETE',
      url: '/v1/tenants/t1/namespaces/ns/streams/x',
    });
    expect(del.statusCode).toBe(204);
    const left = await assignments();
    expect(left.map((a) => a.kind)).toEqual(Array(8).fill('cache'));
    expect(left).toEqual(caches);
  });

  it('a_dead_leaders_shards_move_to_a_live_replica', async () => {
    await start(FAST_LIVENESS);
    for (const id of ['n1', 'n2', 'n3']) await register(id, id);
    await built!.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces/ns/streams',
      payload: { stream: 'failover', shards: 6, replication_factor: 2 },
    });
    await built!.placement.trigger();
    const before = await assignments();
    expect(before).toHaveLength(6);
    const victim = before[0]!.leader;
    const led = before.filter((a) => a.leader === victim);
    for (const id of ['n1', 'n2', 'n3'].filter((id) => id !== victim)) {
      timers.push(
        setInterval(
          () =>
            void built?.inject({
              method: 'POST',
              url: `/v1/nodes/${id}/heartbeat`,
              payload: { incarnation: 1 },
            }),
          100,
        ),
      );
    }
    const after = await waitFor(
      async () => {
        const now = await assignments();
        return now.every((a) => !a.replicas.includes(victim)) ? now : undefined;
      },
      'the dead node to vanish from every replica set',
      15_000,
    );
    for (const old of led) {
      const next = after.find((a) => a.shard === old.shard)!;
      expect(old.replicas.filter((id) => id !== victim)).toContain(next.leader);
      expect(next.generation).toBeGreaterThan(old.generation);
      expect(next.replicas).toHaveLength(2);
    }
    const feed = (
      await built!.inject({ method: 'GET', url: '/v1/shard-assignments/changes?since=1' })
    ).json();
    expect(feed.items.some((c: { op: string }) => c.op === 'updated')).toBe(true);
  });

  it('a_stream_created_while_nodes_are_up_is_assigned_by_its_own_write', async () => {
    await start();
    for (const id of ['n1', 'n2']) await register(id, id);
    await built!.placement.trigger(); // settle the passes registration asked for
    const passes = built!.placement.passes;
    const r = await built!.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces/ns/streams',
      payload: { stream: 'now', shards: 3, replication_factor: 2 },
    });
    expect(r.statusCode).toBe(201);
    // No placement pass ran in between: the create placed its own shards.
    expect(built!.placement.passes).toBe(passes);
    const got = await assignments();
    expect(got.map((a) => [a.shard, a.replicas.length, a.generation])).toEqual([
      [0, 2, 1],
      [1, 2, 1],
      [2, 2, 1],
    ]);
  });

  it('the_dry_run_plan_shows_pending_placements_without_writing_them', async () => {
    await start();
    await built!.inject({
      method: 'POST',
      url: '/v1/tenants/t1/namespaces/ns/streams',
      payload: { stream: 'p', shards: 2 },
    });
    await built!.placement.trigger();
    const unplaceable = (await built!.inject({ method: 'GET', url: '/v1/placement/plan' })).json();
    expect(unplaceable.items.map((i: { action: string }) => i.action)).toEqual([
      'unplaceable',
      'unplaceable',
    ]);
    // Write a node straight into the store so no pass runs, then ask for the plan.
    await opened!.store.nodes.register({
      node_id: 'n1',
      advertise_addr: 'n1:1',
      client_addr: null,
      region: 'local',
      zone: null,
      labels: {},
      capacity: { max_shards: 0, weight: 1 },
      incarnation: 1,
    });
    const plan = (await built!.inject({ method: 'GET', url: '/v1/placement/plan' })).json();
    expect(plan.items.map((i: { action: string; leader: string }) => [i.action, i.leader])).toEqual(
      [
        ['place', 'n1'],
        ['place', 'n1'],
      ],
    );
    expect(await assignments()).toEqual([]);
  });
});
