// Goal: a quorum shard's leadership returns to its preferred member (the set's first by
// rendezvous rank) once that broker has been registered for the rebalance delay and its leader's
// report at its generation names it in sync: placement asks that leader to hand the shard off,
// and moves it there over the same members in a new generation once the leader reports it
// drained; never for a `leader` shard, a stale or earlier report, a member not serving, or with
// the delay off.
// Method: the pure policy with hand-built inputs; then the store on SQLite and on the real
// Postgres, a hand-off and a return driven through registrations, reports and placement passes.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReportTrust } from '../src/cluster/promotion.js';
import {
  type RebalanceInput,
  preferredLeaderOf,
  preferredMember,
} from '../src/cluster/rebalance.js';
import type { ReportInput } from '../src/store/replica-reports.js';
import type { ControlStore } from '../src/store/store.js';
import type { AssignmentRecord, ReplicaReport, Stream } from '../src/store/types.js';
import {
  type Backend,
  ManualClock,
  type OpenedStore,
  openTestStore,
  lifecycleView as view,
} from './helpers.js';

const key = { kind: 'stream' as const, tenant: 't1', namespace: 'ns', name: 's', shard: 0 };
const members = ['n1', 'n2', 'n3'];
const preferred = preferredMember(key, members)!;
const others = members.filter((id) => id !== preferred);

function input(extra: Partial<RebalanceInput> = {}): RebalanceInput {
  const leader = others[0]!;
  const current = { leader, replicas: [leader, preferred, others[1]!], generation: 4 };
  const report: ReplicaReport = {
    tenant_id: 't1',
    namespace: 'ns',
    kind: 'stream',
    stream: 's',
    shard: 0,
    generation: 4,
    leader,
    leader_offset: 10,
    commit_offset: 10,
    replica_offsets: [],
    halted: [],
    drained: false,
    caught_up: [],
    in_sync: [preferred, others[1]!],
    reported_at_ms: 100_000,
  };
  const nodes = new Map(members.map((id) => [id, { serving: true, registeredAtMs: 50_000 }]));
  return {
    key,
    current,
    report,
    trust: { nowMs: 101_000, trustMs: 10_000 },
    quorum: true,
    nodes,
    delayMs: 30_000,
    ...extra,
  };
}

describe('the preferred-leader policy', () => {
  it('a_quorum_shards_leadership_returns_to_its_preferred_member_once_it_is_in_sync_and_settled', () => {
    expect(preferredLeaderOf(input())).toBe(preferred);
    // Registered too recently (a broker just back from its restart).
    const fresh = new Map(input().nodes);
    fresh.set(preferred, { serving: true, registeredAtMs: 90_000 });
    expect(preferredLeaderOf(input({ nodes: fresh }))).toBeUndefined();
    // Not named in sync by the leader's report, or halted.
    const base = input().report!;
    expect(
      preferredLeaderOf(input({ report: { ...base, in_sync: [others[1]!] } })),
    ).toBeUndefined();
    const halted = { ...base, halted: [{ node_id: preferred, reason: 'diverged' as const }] };
    expect(preferredLeaderOf(input({ report: halted }))).toBeUndefined();
  });

  it('leadership_does_not_move_for_a_leader_shard_a_stale_report_a_member_not_serving_or_with_the_delay_off', () => {
    expect(preferredLeaderOf(input({ quorum: false }))).toBeUndefined();
    expect(preferredLeaderOf(input({ delayMs: 0 }))).toBeUndefined();
    const base = input().report!;
    // The leader has not reported at its generation (not established), or another leader did.
    expect(preferredLeaderOf(input({ report: { ...base, generation: 3 } }))).toBeUndefined();
    expect(preferredLeaderOf(input({ report: { ...base, leader: preferred } }))).toBeUndefined();
    const stale: ReportTrust = { nowMs: 200_000, trustMs: 10_000 };
    expect(preferredLeaderOf(input({ trust: stale }))).toBeUndefined();
    const away = new Map(input().nodes);
    away.set(others[1]!, { serving: false, registeredAtMs: 50_000 });
    expect(preferredLeaderOf(input({ nodes: away }))).toBeUndefined();
    // Already led by its preferred member.
    const home = { leader: preferred, replicas: [preferred, ...others], generation: 4 };
    expect(
      preferredLeaderOf(input({ current: home, report: { ...base, leader: preferred } })),
    ).toBeUndefined();
  });
});

function stream(name: string, consistency: Stream['consistency']): Stream {
  return {
    tenant_id: 't1',
    namespace: 'ns',
    stream: name,
    kind: 'Stream',
    shards: 1,
    replication_factor: 3,
    retention: { max_age_seconds: null, max_size_bytes: null },
    consistency,
    durable: true,
    routing: 'modulo',
    uid: '',
  };
}

function reportOf(a: AssignmentRecord, extra: Partial<ReportInput> = {}): ReportInput {
  return {
    tenant_id: a.tenant_id,
    namespace: a.namespace,
    kind: a.kind,
    stream: a.stream,
    shard: a.shard,
    generation: a.generation,
    leader_offset: 100,
    commit_offset: 100,
    replica_offsets: a.replicas
      .filter((id) => id !== a.leader)
      .map((node_id) => ({ node_id, durable_offset: 100 })),
    halted: [],
    drained: false,
    caught_up: [],
    in_sync: a.replicas.filter((id) => id !== a.leader),
    ...extra,
  };
}

function rebalanceSuite(backend: Backend): void {
  describe(`leaders return to preferred brokers on ${backend}`, () => {
    let opened: OpenedStore;
    let store: ControlStore;
    let clock: ManualClock;
    const register = (id: string, incarnation: number) =>
      store.nodes.register({
        node_id: id,
        advertise_addr: `${id}:5001`,
        client_addr: null,
        region: 'local',
        zone: id,
        labels: {},
        capacity: { max_shards: 0, weight: 1 },
        incarnation,
      });
    beforeEach(async () => {
      clock = new ManualClock();
      opened = await openTestStore(backend, { clock });
      store = opened.store;
      await store.tenants.create({ tenant_id: 't1', display_name: 'T1' });
      await store.namespaces.create({ tenant_id: 't1', namespace: 'ns', display_name: 'ns' });
      for (const id of members) await register(id, 1);
    });
    afterEach(async () => {
      await opened.cleanup();
    });

    const trust = (): ReportTrust => ({ nowMs: clock.nowMs(), trustMs: 60_000 });
    const only = async (name: string) =>
      (await store.assignments.list(10)).items.find((a) => a.stream === name)!;

    /** The first leader hands `name` off on SIGTERM and comes back (a new incarnation). */
    async function handOffAndReturn(name: string) {
      const first = await only(name);
      await store.nodes.drain(first.leader);
      const drained = reportOf(first, { drained: true, caught_up: first.replicas.slice(1) });
      await store.replicaReports.record(first.leader, 1, [drained]);
      await store.assignments.pass(view, trust());
      const moved = await only(name);
      expect(moved.leader).not.toBe(first.leader);
      await register(first.leader, 2);
      // The new leader reports at its generation, naming the returned broker in sync.
      await store.replicaReports.record(moved.leader, 1, [reportOf(moved)]);
      return { first, moved };
    }

    it('a_quorum_shard_handed_off_returns_to_its_preferred_broker_after_the_delay', async () => {
      await store.streams.create(stream('q', 'Quorum'), view);
      const { first, moved } = await handOffAndReturn('q');
      // The first leader was the set's preferred member: a fresh placement's leader.
      expect(first.leader).toBe(preferredMember({ ...key, name: 'q' }, first.replicas));
      const rebalance = { delayMs: 10_000 };
      clock.advance(5_000);
      expect((await store.assignments.pass(view, trust(), rebalance)).transfers).toEqual([]);
      expect(await only('q')).toEqual(moved);
      // Past the delay the pass asks the leader to hand the shard off; it moves nothing itself.
      clock.advance(5_000);
      const asked = await store.assignments.pass(view, trust(), rebalance);
      expect(asked.transfers).toEqual([
        {
          key: { ...key, name: 'q' },
          generation: moved.generation,
          from: moved.leader,
          to: first.leader,
        },
      ]);
      expect(await only('q')).toEqual(moved);
      // Drained with only the other follower level: a leader that stays hands it to no one but
      // the preferred member (else it would be asked to move it again).
      const other = moved.replicas.find((id) => id !== moved.leader && id !== first.leader)!;
      const short = reportOf(moved, { drained: true, caught_up: [other] });
      await store.replicaReports.record(moved.leader, 1, [short]);
      await store.assignments.pass(view, trust(), rebalance);
      expect(await only('q')).toEqual(moved);
      // The leader, still live, reports the shard drained with every member level: it goes to
      // the preferred member.
      const drained = reportOf(moved, { drained: true, caught_up: moved.replicas.slice(1) });
      await store.replicaReports.record(moved.leader, 1, [drained]);
      const out = await store.assignments.pass(view, trust(), rebalance);
      const back = await only('q');
      expect(out.returned).toEqual([back]);
      expect(back.leader).toBe(first.leader);
      expect(back.generation).toBe(moved.generation + 1);
      expect([...back.replicas].sort()).toEqual([...moved.replicas].sort());
      // Home: the next pass, once its leader reported there, asks nothing.
      await store.replicaReports.record(back.leader, 2, [reportOf(back)]);
      clock.advance(60_000);
      expect((await store.assignments.pass(view, trust(), rebalance)).transfers).toEqual([]);
      expect(await only('q')).toEqual(back);
    });

    it('a_leader_shard_handed_off_is_never_asked_to_move', async () => {
      await store.streams.create(stream('l', 'Leader'), view);
      const { moved } = await handOffAndReturn('l');
      clock.advance(60_000);
      const out = await store.assignments.pass(view, trust(), { delayMs: 10_000 });
      expect(out.transfers).toEqual([]);
      expect(await only('l')).toEqual(moved);
    });
  });
}

rebalanceSuite('sqlite');
rebalanceSuite('postgres');
