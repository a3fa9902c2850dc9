// Goal: `POST /v1/nodes/{node_id}/replica-status` answers each shard's outcome (200 when every
// report was accepted, 409 naming each otherwise), refuses a wrong JSON type rather than
// converting it, refuses an older incarnation as a heartbeat does, and takes a broker's own
// credential only for its own node id; `GET /v1/replica-reports` shows what is stored.
// Method: fastify inject over a SQLite store, brokers simulated by requests.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type OpenedStore, SLOW_LIVENESS, openTestStore, testApp } from './helpers.js';

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

async function placedStream(
  consistency?: 'Quorum',
): Promise<{ leader: string; replicas: string[]; generation: number }> {
  for (const id of ['n1', 'n2', 'n3']) {
    const r = await built.inject({
      method: 'POST',
      url: '/v1/nodes',
      payload: { node_id: id, advertise_addr: `${id}:5001`, zone: id, incarnation: 1 },
    });
    expect(r.statusCode).toBe(200);
  }
  expect(
    (await built.inject({ method: 'POST', url: '/v1/tenants', payload: { tenant_id: 't1' } }))
      .statusCode,
  ).toBe(201);
  await built.inject({
    method: 'POST',
    url: '/v1/tenants/t1/namespaces',
    payload: { namespace: 'ns' },
  });
  const created = await built.inject({
    method: 'POST',
    url: '/v1/tenants/t1/namespaces/ns/streams',
    payload: {
      stream: 's',
      shards: 1,
      replication_factor: 3,
      durable: true,
      ...(consistency === undefined ? {} : { consistency }),
    },
  });
  expect(created.statusCode).toBe(201);
  await built.placement.trigger();
  const page = (await built.inject({ method: 'GET', url: '/v1/shard-assignments' })).json();
  return page.items[0];
}

function shard(generation: number, extra: Record<string, unknown> = {}) {
  return {
    tenant_id: 't1',
    namespace: 'ns',
    kind: 'stream',
    stream: 's',
    shard: 0,
    generation,
    leader_offset: 10,
    commit_offset: 8,
    replica_offsets: [{ node_id: 'n2', durable_offset: 9 }],
    ...extra,
  };
}

function report(nodeId: string, body: unknown, authorization?: string) {
  return built.inject({
    method: 'POST',
    url: `/v1/nodes/${nodeId}/replica-status`,
    payload: body as Record<string, unknown>,
    ...(authorization === undefined ? {} : { headers: { authorization } }),
  });
}

describe('replica status', () => {
  it('a_replica_status_request_answers_each_shards_outcome', async () => {
    const a = await placedStream();
    const ok = await report(a.leader, { incarnation: 1, shards: [shard(a.generation)] });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().shards).toEqual([expect.objectContaining({ outcome: 'accepted' })]);
    const follower = a.replicas.find((id) => id !== a.leader)!;
    const notLeader = await report(follower, { incarnation: 1, shards: [shard(a.generation)] });
    expect(notLeader.json().shards[0].outcome).toBe('not_leader');
    const mixed = await report(a.leader, {
      incarnation: 1,
      shards: [
        shard(a.generation, { halted: [{ node_id: 'n3', reason: 'diverged' }] }),
        shard(a.generation + 1),
        shard(a.generation, { stream: 'gone' }),
      ],
    });
    expect(mixed.statusCode).toBe(409);
    expect(mixed.json().code).toBe('FELIX_CONTROLPLANE_REPORT_NOT_ACCEPTED');
    expect(mixed.json().shards.map((s: { outcome: string }) => s.outcome)).toEqual([
      'accepted',
      'future_generation',
      'unassigned',
    ]);
    const stored = (await built.inject({ method: 'GET', url: '/v1/replica-reports' })).json();
    expect(stored.items).toEqual([
      expect.objectContaining({
        leader: a.leader,
        generation: a.generation,
        leader_offset: 10,
        commit_offset: 8,
        halted: [{ node_id: 'n3', reason: 'diverged' }],
      }),
    ]);
  });

  it('a_leaders_first_report_at_its_generation_runs_a_placement_pass_and_a_repeat_does_not', async () => {
    // Established by that report, the leader's quorum set may change now (a member that left
    // dropped, the set topped up), not at the next timed pass.
    const a = await placedStream();
    await built.placement.idle();
    const before = built.placement.passes;
    expect(
      (await report(a.leader, { incarnation: 1, shards: [shard(a.generation)] })).statusCode,
    ).toBe(200);
    await built.placement.idle();
    expect(built.placement.passes).toBeGreaterThan(before);
    const after = built.placement.passes;
    expect(
      (await report(a.leader, { incarnation: 1, shards: [shard(a.generation)] })).statusCode,
    ).toBe(200);
    await built.placement.idle();
    expect(built.placement.passes).toBe(after);
  });

  it('a_leaders_report_is_answered_with_the_shards_to_hand_back_to_their_preferred_broker', async () => {
    // A rebalance delay of 1 ms: the only condition left is the placement pass that asks.
    await built.app.close();
    built = await testApp(opened.store, {
      liveness: { ...SLOW_LIVENESS, leaderRebalanceDelayMs: 1 },
    });
    const a = await placedStream('Quorum');
    const others = a.replicas.filter((id) => id !== a.leader);
    // The first leader, the preferred member, hands the shard off on SIGTERM and comes back.
    expect(
      (await built.inject({ method: 'POST', url: `/v1/nodes/${a.leader}/drain` })).statusCode,
    ).toBe(200);
    const drained = shard(a.generation, {
      leader_offset: 10,
      replica_offsets: others.map((node_id) => ({ node_id, durable_offset: 10 })),
      drained: true,
      caught_up: others,
    });
    expect((await report(a.leader, { incarnation: 1, shards: [drained] })).statusCode).toBe(200);
    await built.placement.idle();
    const moved = (await built.inject({ method: 'GET', url: '/v1/shard-assignments' })).json()
      .items[0];
    expect(moved.leader).not.toBe(a.leader);
    const back = await built.inject({
      method: 'POST',
      url: '/v1/nodes',
      payload: {
        node_id: a.leader,
        advertise_addr: `${a.leader}:5001`,
        zone: a.leader,
        incarnation: 2,
      },
    });
    expect(back.statusCode).toBe(200);
    const inSync = moved.replicas.filter((id: string) => id !== moved.leader);
    const status = shard(moved.generation, {
      replica_offsets: inSync.map((node_id: string) => ({ node_id, durable_offset: 10 })),
      in_sync: inSync,
    });
    await report(moved.leader, { incarnation: 1, shards: [status] });
    await built.placement.trigger();
    const answer = await report(moved.leader, { incarnation: 1, shards: [status] });
    expect(answer.statusCode).toBe(200);
    expect(answer.json().transfers).toEqual([
      {
        tenant_id: 't1',
        namespace: 'ns',
        kind: 'stream',
        stream: 's',
        shard: 0,
        generation: moved.generation,
        to: a.leader,
      },
    ]);
    // Another node's report names none of it.
    const other = await report(a.leader, { incarnation: 2, shards: [] });
    expect(other.json().transfers).toBeUndefined();
  });

  it('a_replica_status_with_a_wrong_type_or_an_old_incarnation_is_refused_whole', async () => {
    const a = await placedStream();
    const asText = await report(a.leader, {
      incarnation: 1,
      shards: [shard(a.generation, { leader_offset: '10' })],
    });
    expect(asText.statusCode).toBe(400);
    const extra = await report(a.leader, {
      incarnation: 1,
      shards: [shard(a.generation, { surprise: true })],
    });
    expect(extra.statusCode).toBe(400);
    await built.inject({
      method: 'POST',
      url: '/v1/nodes',
      payload: { node_id: a.leader, advertise_addr: `${a.leader}:5001`, incarnation: 2 },
    });
    const old = await report(a.leader, { incarnation: 1, shards: [shard(a.generation)] });
    expect(old.statusCode).toBe(409);
    expect(old.json().code).toBe('FELIX_CONTROLPLANE_STALE_INCARNATION');
    expect(
      (await built.inject({ method: 'GET', url: '/v1/replica-reports' })).json().items,
    ).toEqual([]);
  });

  it('a_broker_reports_replica_status_only_for_its_own_node', async () => {
    const a = await placedStream();
    const other = a.replicas.find((id) => id !== a.leader)!;
    const token = await built.tokens.mint('operator', [`node.manage:node:${other}`]);
    const r = await report(
      a.leader,
      { incarnation: 1, shards: [shard(a.generation)] },
      `Bearer ${token}`,
    );
    expect(r.statusCode).toBe(403);
    const own = await built.tokens.mint('operator', [`node.manage:node:${a.leader}`]);
    const mine = await report(
      a.leader,
      { incarnation: 1, shards: [shard(a.generation)] },
      `Bearer ${own}`,
    );
    expect(mine.statusCode).toBe(200);
  });
});

describe('replica status order', () => {
  // A report the broker gave up on (its request timed out) may still be applied after the one it
  // sent next: a leader's reports carry a sequence number, and an older one is refused.
  it('a_replica_report_older_than_the_one_stored_is_refused_as_stale', async () => {
    const a = await placedStream();
    const [b, c] = a.replicas.filter((id) => id !== a.leader);
    const newer = await report(a.leader, {
      incarnation: 1,
      seq: 2,
      shards: [shard(a.generation, { in_sync: [b] })],
    });
    expect(newer.statusCode).toBe(200);
    const late = await report(a.leader, {
      incarnation: 1,
      seq: 1,
      shards: [shard(a.generation, { in_sync: [b, c], drained: true })],
    });
    expect(late.statusCode).toBe(409);
    expect(late.json().shards[0].outcome).toBe('stale');
    const stored = (await built.inject({ method: 'GET', url: '/v1/replica-reports' })).json();
    expect(stored.items).toEqual([expect.objectContaining({ in_sync: [b], drained: false })]);
    // The next report goes on from there; one without a sequence (an older broker) is taken.
    const next = await report(a.leader, {
      incarnation: 1,
      seq: 3,
      shards: [shard(a.generation, { in_sync: [c] })],
    });
    expect(next.statusCode).toBe(200);
    const unnumbered = await report(a.leader, {
      incarnation: 1,
      shards: [shard(a.generation, { in_sync: [b, c] })],
    });
    expect(unnumbered.statusCode).toBe(200);
    const after = (await built.inject({ method: 'GET', url: '/v1/replica-reports' })).json();
    expect(after.items).toEqual([expect.objectContaining({ in_sync: [b, c] })]);
  });

  it('a_control_plane_tells_each_broker_it_reads_a_replica_reports_number', async () => {
    const reg = await built.inject({
      method: 'POST',
      url: '/v1/nodes',
      payload: { node_id: 'n1', advertise_addr: 'n1:5001', incarnation: 1 },
    });
    expect(reg.json().control_plane_features).toContain('replica_report_seq');
    const hb = await built.inject({
      method: 'POST',
      url: '/v1/nodes/n1/heartbeat',
      payload: { incarnation: 1 },
    });
    expect(hb.json().control_plane_features).toContain('replica_report_seq');
    expect(hb.json().control_plane_features).toContain('replica_report_uid');
  });

  it('a_new_incarnations_first_report_is_taken_whatever_its_sequence', async () => {
    const a = await placedStream();
    const [b] = a.replicas.filter((id) => id !== a.leader);
    expect(
      (await report(a.leader, { incarnation: 1, seq: 50, shards: [shard(a.generation)] }))
        .statusCode,
    ).toBe(200);
    // The leader's process restarted: a new incarnation, its sequence from 1 again.
    await built.inject({
      method: 'POST',
      url: '/v1/nodes',
      payload: { node_id: a.leader, advertise_addr: `${a.leader}:5001`, incarnation: 2 },
    });
    const assigned = (await built.inject({ method: 'GET', url: '/v1/shard-assignments' })).json()
      .items[0];
    const first = await report(a.leader, {
      incarnation: 2,
      seq: 1,
      shards: [shard(assigned.generation, { in_sync: [b] })],
    });
    expect(first.json().shards[0].outcome).toBe('accepted');
  });
});
