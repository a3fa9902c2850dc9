// Goal: whom placement promotes when a durable stream's leader is lost: the most caught-up
// replica the leader's last report names, never one behind the caught-up bound (the whole
// reported log under `Leader`, unless the report names it in sync within the leader's lag
// window; the commit mark under `Quorum`), never a halted one, no one on a
// report that is missing, from another generation or too old; a durable single copy waits for
// its owner. Replica reports only move forward and are believed only from the current leader.
// Method: the store on SQLite and on the real Postgres (the store contract's backends), nodes
// registered and marked down directly, placement passes with an injected clock; the choice
// itself as a pure function is failover-policy.test.ts.
import type { PlacementNode } from '@felix/router';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { placementNodes } from '../src/cluster/liveness.js';
import { TRUST_ALL, reportTrust } from '../src/cluster/promotion.js';
import type { LivenessConfig } from '../src/config.js';
import type { ReportInput } from '../src/store/replica-reports.js';
import type { ControlStore } from '../src/store/store.js';
import type { AssignmentRecord, NodeLiveness, RegisterInput, Stream } from '../src/store/types.js';
import {
  type Backend,
  ManualClock,
  type OpenedStore,
  openTestStore,
  lifecycleView as view,
} from './helpers.js';

function stream(name: string, extra: Partial<Stream> = {}): Stream {
  return {
    tenant_id: 't1',
    namespace: 'ns',
    stream: name,
    kind: 'Stream',
    shards: 1,
    replication_factor: 1,
    retention: { max_age_seconds: null, max_size_bytes: null },
    consistency: 'Leader',
    durable: false,
    routing: 'modulo',
    uid: '',
    ...extra,
  };
}

function registration(id: string, extra: Partial<RegisterInput> = {}): RegisterInput {
  return {
    node_id: id,
    advertise_addr: `${id}:5001`,
    client_addr: null,
    region: 'local',
    zone: id,
    labels: {},
    capacity: { max_shards: 0, weight: 1 },
    incarnation: 1,
    ...extra,
  };
}

function reportOf(a: AssignmentRecord, extra: Partial<ReportInput>): ReportInput {
  return {
    tenant_id: a.tenant_id,
    namespace: a.namespace,
    kind: a.kind,
    stream: a.stream,
    shard: a.shard,
    generation: a.generation,
    leader_offset: 0,
    commit_offset: 0,
    replica_offsets: [],
    halted: [],
    drained: false,
    caught_up: [],
    in_sync: [],
    ...extra,
  };
}

function promotionSuite(backend: Backend): void {
  describe(`promotion on ${backend}`, () => {
    let opened: OpenedStore;
    let store: ControlStore;
    let clock: ManualClock;
    beforeEach(async () => {
      clock = new ManualClock();
      opened = await openTestStore(backend, { clock });
      store = opened.store;
      await store.tenants.create({ tenant_id: 't1', display_name: 'T1' });
      await store.namespaces.create({ tenant_id: 't1', namespace: 'ns', display_name: 'ns' });
      for (const id of ['n1', 'n2', 'n3', 'n4']) await store.nodes.register(registration(id));
    });
    afterEach(async () => {
      await opened.cleanup();
    });

    /** Places a durable stream, reports `extra` from its leader, kills the leader, passes. */
    async function failover(
      consistency: 'Leader' | 'Quorum',
      rf: number,
      extra: (a: AssignmentRecord) => Partial<ReportInput>,
    ) {
      await store.streams.create(
        stream('s', { durable: true, replication_factor: rf, consistency }),
        view,
      );
      const [before] = (await store.assignments.list(10)).items;
      const outcomes = await store.replicaReports.record(before!.leader, 1, [
        reportOf(before!, extra(before!)),
      ]);
      expect(outcomes).toEqual(['accepted']);
      const stamp = (await store.nodes.liveStamps()).find((s) => s.node_id === before!.leader)!;
      expect(await store.nodes.markDown(before!.leader, stamp.stamp)).toBe(true);
      const pass = await store.assignments.pass(view);
      const [after] = (await store.assignments.list(10)).items;
      return { before: before!, after: after!, pass };
    }

    const liveness = { heartbeatIntervalMs: 1_000, expiryTimeoutMs: 3_000 } as LivenessConfig;

    /** A report of every member at `offset`, the commit mark there too. */
    const levelAt =
      (offset: number) =>
      (a: AssignmentRecord): Partial<ReportInput> => ({
        leader_offset: offset,
        commit_offset: offset,
        replica_offsets: a.replicas
          .filter((id) => id !== a.leader)
          .map((node_id) => ({ node_id, durable_offset: offset })),
      });

    it('placement_promotes_the_most_caught_up_replica_the_report_names', async () => {
      const { before, after } = await failover('Leader', 3, (a) => {
        const [, f1, f2] = a.replicas;
        // The better-ranked follower (f1, which placement would pick unaided) lags.
        return {
          leader_offset: 100,
          replica_offsets: [
            { node_id: f1!, durable_offset: 60 },
            { node_id: f2!, durable_offset: 100 },
          ],
        };
      });
      expect(after.leader).toBe(before.replicas[2]);
      expect(after.generation).toBe(before.generation + 1);
      expect(after.replicas).not.toContain(before.leader);
    });

    it('placement_leaves_a_quorum_shard_unplaced_when_every_live_replica_is_behind_the_mark_or_halted', async () => {
      const { before, after, pass } = await failover('Quorum', 3, (a) => {
        const [, f1, f2] = a.replicas;
        // f2 holds more than anyone but is halted (its log diverged); f1 is behind the mark.
        return {
          leader_offset: 100,
          commit_offset: 50,
          replica_offsets: [
            { node_id: f1!, durable_offset: 49 },
            { node_id: f2!, durable_offset: 100 },
          ],
          halted: [{ node_id: f2!, reason: 'diverged' }],
        };
      });
      expect(after).toEqual(before);
      expect(pass.unplaced).toBe(1);
      expect(pass.written).toEqual([]);
    });

    it('a_quorum_failover_takes_a_replica_at_the_commit_mark_short_of_the_leaders_log', async () => {
      const { before, after } = await failover('Quorum', 3, (a) => ({
        leader_offset: 100,
        commit_offset: 50,
        replica_offsets: [
          { node_id: a.replicas[1]!, durable_offset: 49 },
          { node_id: a.replicas[2]!, durable_offset: 50 },
        ],
      }));
      expect(after.leader).toBe(before.replicas[2]);
    });

    /** A quorum stream at RF 3 whose leader reported the mark at 50: f1 at 49, f2 at it. */
    async function reportedQuorumStream() {
      await store.streams.create(
        stream('s', { durable: true, replication_factor: 3, consistency: 'Quorum' }),
        view,
      );
      const [before] = (await store.assignments.list(10)).items;
      const [leader, f1, f2] = before!.replicas;
      await store.replicaReports.record(leader!, 1, [
        reportOf(before!, {
          leader_offset: 60,
          commit_offset: 50,
          replica_offsets: [
            { node_id: f1!, durable_offset: 49 },
            { node_id: f2!, durable_offset: 50 },
          ],
        }),
      ]);
      return { before: before!, leader: leader!, f2: f2! };
    }

    it('a_caught_up_replica_returning_long_after_its_leader_died_is_still_promoted', async () => {
      // Found in CI: the leader and the caught-up follower were killed, and the follower came
      // back later than the report's trust window (2 × expiry + 1 heartbeat). The report was no
      // longer believed, so the shard waited for its leader although the follower held the mark.
      const { before, leader, f2 } = await reportedQuorumStream();
      for (const id of [leader!, f2!]) {
        const stamp = (await store.nodes.liveStamps()).find((s) => s.node_id === id)!;
        expect(await store.nodes.markDown(id, stamp.stamp)).toBe(true);
      }
      clock.advance(60_000);
      const waiting = await store.assignments.pass(view, reportTrust(liveness, clock.nowMs()));
      expect(waiting.unplaced).toBe(1);
      // The caught-up follower returns a minute after its leader's last heartbeat.
      await store.nodes.register(registration(f2!, { incarnation: 2 }));
      await store.assignments.pass(view, reportTrust(liveness, clock.nowMs()));
      const [after] = (await store.assignments.list(10)).items;
      expect(after!.leader).toBe(f2);
      expect(after!.generation).toBe(before!.generation + 1);
    });

    it('a_report_no_newer_than_the_trust_window_is_not_believed_while_its_leader_is_heard', async () => {
      const { before, leader } = await reportedQuorumStream();
      // The leader goes on heartbeating a minute without a report (its mark may have moved
      // since), then is lost: its old report names no candidate.
      clock.advance(60_000);
      await store.nodes.register(registration(leader!, { incarnation: 2 }));
      const stamp = (await store.nodes.liveStamps()).find((s) => s.node_id === leader)!;
      expect(await store.nodes.markDown(leader!, stamp.stamp)).toBe(true);
      const pass = await store.assignments.pass(view, reportTrust(liveness, clock.nowMs()));
      expect(pass.unplaced).toBe(1);
      const [after] = (await store.assignments.list(10)).items;
      expect(after).toEqual(before);
    });

    it('placement_promotes_the_most_caught_up_in_sync_follower_of_a_leader_stream', async () => {
      // Steady writes: no follower is level with the leader's log when it reports, but f1 held
      // it within the lag window; f2 holds more and was cut from the leader for longer.
      const { before, after } = await failover('Leader', 3, (a) => {
        const [, f1, f2] = a.replicas;
        return {
          leader_offset: 100,
          replica_offsets: [
            { node_id: f1!, durable_offset: 97 },
            { node_id: f2!, durable_offset: 98 },
          ],
          in_sync: [f1!],
        };
      });
      expect((await store.replicaReports.list(10))[0]!.in_sync).toEqual([before.replicas[1]]);
      expect(after.leader).toBe(before.replicas[1]);
      expect(after.generation).toBe(before.generation + 1);
    });

    it('a_leader_stream_with_no_follower_in_sync_stays_unplaced', async () => {
      const { before, after, pass } = await failover('Leader', 3, (a) => ({
        leader_offset: 100,
        replica_offsets: a.replicas.slice(1).map((id) => ({ node_id: id, durable_offset: 99 })),
        in_sync: [],
      }));
      expect(after).toEqual(before);
      expect(pass.unplaced).toBe(1);
    });

    it('a_durable_single_copy_is_not_placed_elsewhere_while_its_owner_is_down', async () => {
      const { before, after, pass } = await failover('Leader', 1, () => ({ leader_offset: 7 }));
      expect(after).toEqual(before);
      expect(pass.unplaced).toBe(1);
      // The owner returns (a newer incarnation): it leads again at the same generation.
      await store.nodes.register(registration(before.leader, { incarnation: 2 }));
      const back = await store.assignments.pass(view);
      expect(back.unplaced).toBe(0);
      expect((await store.assignments.list(10)).items[0]).toEqual(before);
    });

    it('an_in_memory_stream_still_moves_without_a_report', async () => {
      await store.streams.create(stream('m', { durable: false, replication_factor: 1 }), view);
      const [before] = (await store.assignments.list(10)).items;
      const stamp = (await store.nodes.liveStamps()).find((s) => s.node_id === before!.leader)!;
      await store.nodes.markDown(before!.leader, stamp.stamp);
      await store.assignments.pass(view);
      const [after] = (await store.assignments.list(10)).items;
      expect(after!.leader).not.toBe(before!.leader);
    });

    /** A one-shard cache of `rf` copies, placed on the four live nodes; its assignment. */
    async function placedCache(rf = 1): Promise<AssignmentRecord> {
      const c = { tenant_id: 't1', namespace: 'ns', cache: 'users', display_name: 'users' };
      await store.caches.create(
        { ...c, shards: 1, replication_factor: rf, consistency: 'Leader', default_ttl_ms: null },
        view,
      );
      return (await store.assignments.list(10)).items[0]!;
    }

    it('a_one_copy_cache_never_moves_to_an_empty_broker_when_its_unreporting_owner_is_lost', async () => {
      // The README's broker: a data dir but no internal listener, so it never sends a report.
      const before = await placedCache();
      expect(await store.replicaReports.list(10)).toEqual([]);
      // SIGTERM deregisters it; three live brokers remain, none holding the cache's log.
      await store.nodes.deregister(before.leader);
      const pass = await store.assignments.pass(view);
      expect(pass.unplaced).toBe(1);
      expect((await store.assignments.list(10)).items[0]).toEqual(before);
      // The same when it crashes (marked down) rather than leaving.
      await store.nodes.register(registration(before.leader, { incarnation: 2 }));
      const stamp = (await store.nodes.liveStamps()).find((s) => s.node_id === before.leader)!;
      expect(await store.nodes.markDown(before.leader, stamp.stamp)).toBe(true);
      expect((await store.assignments.pass(view)).unplaced).toBe(1);
      // Its owner returns: it leads again at the same generation, with what it holds.
      await store.nodes.register(registration(before.leader, { incarnation: 3 }));
      expect((await store.assignments.pass(view)).unplaced).toBe(0);
      expect((await store.assignments.list(10)).items[0]).toEqual(before);
    });

    it('accepting_a_lost_nodes_data_reopens_the_shards_waiting_for_it_on_live_nodes', async () => {
      const cache = await placedCache();
      await store.streams.create(stream('s', { durable: true }), view);
      const s = (await store.assignments.list(10)).items.find((a) => a.kind === 'stream')!;
      const accept = () => store.assignments.acceptLoss(view, TRUST_ALL, cache.leader);
      // Only a node that is down or gone: a live one's data is not given up.
      await expect(accept()).rejects.toMatchObject({
        code: 'FELIX_CONTROLPLANE_NODE_STATE_CONFLICT',
      });
      await expect(store.assignments.acceptLoss(view, TRUST_ALL, 'nope')).rejects.toMatchObject({
        code: 'FELIX_CONTROLPLANE_NODE_NOT_FOUND',
      });
      const stamp = (await store.nodes.liveStamps()).find((x) => x.node_id === cache.leader)!;
      await store.nodes.markDown(cache.leader, stamp.stamp);
      expect((await store.assignments.pass(view)).unplaced).toBeGreaterThanOrEqual(1);
      const out = await accept();
      const led = [cache, ...(s.leader === cache.leader ? [s] : [])];
      expect(out.still_led).toBe(0);
      expect(out.moved.map((a) => a.kind).sort()).toEqual(led.map((a) => a.kind).sort());
      for (const a of out.moved) {
        const was = led.find((x) => x.kind === a.kind)!;
        expect(a.leader).not.toBe(cache.leader);
        expect(a.generation).toBe(was.generation + 1);
      }
      // The new owner now holds the shard: losing it in turn makes it wait again, not move.
      const moved = out.moved.find((a) => a.kind === 'cache')!;
      const next = (await store.nodes.liveStamps()).find((x) => x.node_id === moved.leader)!;
      await store.nodes.markDown(moved.leader, next.stamp);
      await store.assignments.pass(view);
      const after = (await store.assignments.list(10)).items.find((a) => a.kind === 'cache');
      expect(after).toEqual(moved);
    });

    it('a_quorum_failover_keeps_its_set_until_the_new_leader_reports_and_then_tops_it_up', async () => {
      // Four nodes, RF 3: the fourth is free to top the set up with.
      const { before, after } = await failover('Quorum', 3, levelAt(10));
      expect(after.generation).toBe(before.generation + 1);
      expect(after.leader).not.toBe(before.leader);
      expect([...after.replicas].sort()).toEqual([...before.replicas].sort());
      // Passes before the new leader reports (it has not fenced yet) change nothing.
      await store.assignments.pass(view);
      expect((await store.assignments.list(10)).items[0]).toEqual(after);
      // Reported at its generation: the dead leader is replaced by the fourth node.
      await store.replicaReports.record(after.leader, 1, [reportOf(after, levelAt(10)(after))]);
      await store.assignments.pass(view);
      const topped = (await store.assignments.list(10)).items[0]!;
      expect(topped.leader).toBe(after.leader);
      expect(topped.generation).toBe(after.generation + 1);
      expect(topped.replicas).not.toContain(before.leader);
      expect(topped.replicas).toHaveLength(3);
    });

    it('accepting_a_dead_members_loss_drops_it_from_a_quorum_set_whose_leader_cannot_fence', async () => {
      const { before, after } = await failover('Quorum', 3, levelAt(10));
      // The other follower dies too: the new leader cannot fence a majority and never reports.
      const other = after.replicas.find((id) => id !== after.leader && id !== before.leader)!;
      const stamp = (await store.nodes.liveStamps()).find((x) => x.node_id === other)!;
      await store.nodes.markDown(other, stamp.stamp);
      await store.assignments.pass(view);
      expect((await store.assignments.list(10)).items[0]).toEqual(after);
      // Each loss accepted drops that member alone; no empty node joins in the same step.
      await store.assignments.acceptLoss(view, TRUST_ALL, before.leader);
      const one = (await store.assignments.list(10)).items[0]!;
      expect(one).toMatchObject({ leader: after.leader, replicas: [after.leader, other] });
      await store.assignments.acceptLoss(view, TRUST_ALL, other);
      const alone = (await store.assignments.list(10)).items[0]!;
      expect(alone).toMatchObject({ leader: after.leader, replicas: [after.leader] });
    });

    it('a_report_from_a_generation_newer_than_the_assignment_moves_the_assignment_past_it', async () => {
      // A database restored from a backup: the brokers lead at generations it never wrote.
      await store.streams.create(
        stream('s', { durable: true, replication_factor: 3, consistency: 'Quorum' }),
        view,
      );
      const [a] = (await store.assignments.list(10)).items;
      const { uid } = await store.streams.get('t1', 'ns', 's');
      const member = a!.replicas[1]!;
      const others = a!.replicas.filter((id) => id !== member);
      const ahead = {
        ...reportOf(a!, {
          replica_offsets: others.map((node_id) => ({ node_id, durable_offset: 0 })),
        }),
        generation: a!.generation + 3,
      };
      // Without the creation id (an older broker), or naming another creation, nothing moves.
      expect(await store.replicaReports.record(member, 1, [ahead])).toEqual(['future_generation']);
      const other = { ...ahead, uid: 'an-earlier-creation' };
      expect(await store.replicaReports.record(member, 1, [other])).toEqual(['future_generation']);
      expect((await store.assignments.list(10)).items[0]).toEqual(a);
      const named = { ...ahead, uid };
      expect(await store.replicaReports.record(member, 1, [named])).toEqual(['future_generation']);
      const [moved] = (await store.assignments.list(10)).items;
      // One past the reported generation, led by the member that leads it now, over its set.
      expect(moved).toMatchObject({ leader: member, generation: a!.generation + 4 });
      expect(moved!.replicas).toEqual([member, ...others]);
      // Its next report is believed; a broker claiming the same generation moves it on.
      const at = { ...reportOf(moved!, {}) };
      expect(await store.replicaReports.record(member, 1, [at])).toEqual(['accepted']);
      const outsider = ['n1', 'n2', 'n3', 'n4'].find((id) => !a!.replicas.includes(id))!;
      const same = { ...at, uid, replica_offsets: [{ node_id: member, durable_offset: 0 }] };
      expect(await store.replicaReports.record(outsider, 1, [same])).toEqual(['not_leader']);
      const [again] = (await store.assignments.list(10)).items;
      expect(again).toMatchObject({ leader: outsider, generation: moved!.generation + 1 });
      expect(again!.replicas).toEqual([outsider, member]);
    });

    /**
     * A quorum stream at RF 3 whose database went back: `f1` reports leading three generations
     * on, over `x` (not in the restored set, holding offsets to 100) and `f2` (at 40).
     */
    async function restoredBehind() {
      await store.streams.create(
        stream('s', { durable: true, replication_factor: 3, consistency: 'Quorum' }),
        view,
      );
      const [a] = (await store.assignments.list(10)).items;
      const { uid } = await store.streams.get('t1', 'ns', 's');
      const [, f1, f2] = a!.replicas as [string, string, string];
      const x = ['n1', 'n2', 'n3', 'n4'].find((id) => !a!.replicas.includes(id))!;
      const ahead = {
        ...reportOf(a!, {}),
        uid,
        generation: a!.generation + 3,
        leader_offset: 100,
        commit_offset: 100,
        replica_offsets: [
          { node_id: x, durable_offset: 100 },
          { node_id: f2, durable_offset: 40 },
        ],
      };
      return { f1, f2, x, ahead };
    }

    // Review h1: the set a restored database names may not be the set the reporter ships to.
    // Its report names its followers (replica_offsets): the members that acknowledged at the
    // reported generation. Moving past it with the restored set swaps members in one step (the
    // very thing "Quorum sets change one step at a time" forbids), and with a reporter outside
    // the restored set hands the shard to the restored leader at a generation high enough to
    // win its fence over the stale members it names.
    it('a_report_from_a_newer_generation_keeps_the_set_that_acknowledged_at_it', async () => {
      // Since the backup: f1 leads over {f1, x, f2} (the old leader replaced by x).
      const { f1, f2, x, ahead } = await restoredBehind();
      expect(await store.replicaReports.record(f1, 1, [ahead])).toEqual(['future_generation']);
      const [moved] = (await store.assignments.list(10)).items;
      expect(moved!.leader).toBe(f1);
      // Before the fix: {f1, a.leader, f2}: x, which holds offsets 40..100 with f1, was dropped.
      expect([...moved!.replicas].sort()).toEqual([f1, x, f2].sort());
    });

    it('a_leader_lost_after_a_restored_assignment_moved_past_it_is_replaced_only_by_a_member_holding_its_acks', async () => {
      // f1 leads {f1, x, f2} at a generation the restored database never wrote; 40..100 were
      // acknowledged by f1 and x (f2 lagging).
      const { f1, f2, x, ahead } = await restoredBehind();
      await store.replicaReports.record(f1, 1, [ahead]);
      const [moved] = (await store.assignments.list(10)).items;
      // f1 goes on leading (no new fence) at the moved generation; its shipper restarted there,
      // so its first report's mark is the new set's: {f1: 100, old: 10 (a stale copy), f2: 40}.
      const first = reportOf(moved!, {
        leader_offset: 100,
        commit_offset: 40,
        replica_offsets: moved!.replicas
          .filter((id) => id !== f1)
          .map((node_id) => ({ node_id, durable_offset: node_id === f2 ? 40 : 10 })),
      });
      expect(await store.replicaReports.record(f1, 1, [first])).toEqual(['accepted']);
      const stamp = (await store.nodes.liveStamps()).find((s) => s.node_id === f1)!;
      await store.nodes.markDown(f1, stamp.stamp);
      await store.assignments.pass(view);
      const [after] = (await store.assignments.list(10)).items;
      // Before the fix: f2 (40) led {f2, f1, old}; its fence was answered by `old` (10), and 40..100,
      // held by x alone, were gone. Safe outcomes: x is in the set, or no one is promoted.
      if (after!.generation > moved!.generation) expect(after!.replicas).toContain(x);
    });

    it('a_newer_generation_moved_to_by_one_report_is_not_claimed_by_another_leader', async () => {
      await store.streams.create(
        stream('s', { durable: true, replication_factor: 3, consistency: 'Quorum' }),
        view,
      );
      const [a] = (await store.assignments.list(10)).items;
      const [, f1, f2] = a!.replicas as [string, string, string];
      const g = a!.generation;
      const { uid } = await store.streams.get('t1', 'ns', 's');
      // Before the database lost its last writes: f1 led at g+2, then f2 was promoted at g+3
      // (f1 cut off from the control plane, so it never heard). f1 is back and reports first.
      const stale = { ...reportOf(a!, {}), generation: g + 2, uid };
      expect(await store.replicaReports.record(f1, 1, [stale])).toEqual(['future_generation']);
      const [moved] = (await store.assignments.list(10)).items;
      expect(moved).toMatchObject({ leader: f1, generation: g + 3 });
      // f2 leads at g+3 too (it fenced the set there). A broker ignores an assignment at or
      // below the generation it holds (shard-table.ts putAssignment), so f2 goes on leading at
      // g+3 while f1 leads g+3 unfenced: two leaders of one generation, for as long as nothing
      // else moves the shard. f2's report says so; the assignment must move past it.
      const real = { ...reportOf(a!, {}), generation: g + 3, uid };
      const outcome = await store.replicaReports.record(f2, 1, [real]);
      const [now] = (await store.assignments.list(10)).items;
      expect({ outcome, past: now!.generation > g + 3 }).toMatchObject({ past: true });
    });

    it('a_promoted_quorum_leader_lost_before_its_first_report_is_replaced_once_a_majority_of_its_set_is_back', async () => {
      // Review h1. The failover kept the set, so any majority of it overlaps every majority
      // that acknowledged at either generation: a member fencing a majority of that same set
      // and taking the furthest tail (by last generation) holds every ack. Yet with no report
      // from the promoted leader, no one qualifies, and the shard waits for that one broker.
      const { before, after } = await failover('Quorum', 3, levelAt(10));
      expect([...after.replicas].sort()).toEqual([...before.replicas].sort());
      // The promoted leader fenced, served and acked with the third member, then died before
      // it reported; the old leader comes back.
      const stamp = (await store.nodes.liveStamps()).find((x) => x.node_id === after.leader)!;
      await store.nodes.markDown(after.leader, stamp.stamp);
      await store.nodes.register(registration(before.leader, { incarnation: 2 }));
      const pass = await store.assignments.pass(view);
      const [now] = (await store.assignments.list(10)).items;
      // Before the fix: unplaced (no_caught_up_replica) until after.leader itself returned.
      expect(pass.entries[0]!.placement).toEqual({
        placed: true,
        assignment: expect.anything(),
        changed: true,
      });
      expect(pass.unplaced).toBe(0);
      expect(now!.leader).not.toBe(after.leader);
    });

    it('a_promoted_quorum_leader_lost_before_its_first_report_is_not_replaced_by_a_member_behind_the_mark', async () => {
      // CI (no_replica_behind_the_commit_mark_is_ever_promoted): the leader and the caught-up
      // follower were killed together; placement promoted the caught-up one, marked down 74 ms
      // after the leader, and then the member the leader's report put behind the commit mark,
      // the only one left live. It could not have served (its fence needs a majority), but it
      // is what the failover's rule forbids: the shard waits for a member at the mark.
      const { before, after } = await failover('Quorum', 3, (a) => {
        const [, f1, f2] = a.replicas;
        return {
          leader_offset: 20,
          commit_offset: 20,
          replica_offsets: [
            { node_id: f1!, durable_offset: 20 },
            { node_id: f2!, durable_offset: 10 },
          ],
        };
      });
      expect(after.leader).toBe(before.replicas[1]);
      const stamp = (await store.nodes.liveStamps()).find((x) => x.node_id === after.leader)!;
      await store.nodes.markDown(after.leader, stamp.stamp);
      const pass = await store.assignments.pass(view);
      const [now] = (await store.assignments.list(10)).items;
      expect(now!.leader).toBe(after.leader);
      expect(pass.unplaced).toBe(1);
      // The old leader, at the mark, comes back: it may lead.
      await store.nodes.register(registration(before.leader, { incarnation: 2 }));
      await store.assignments.pass(view);
      const [back] = (await store.assignments.list(10)).items;
      expect(back!.leader).toBe(before.leader);
    });

    it('accepting_a_lost_nodes_data_keeps_its_most_caught_up_live_replica', async () => {
      // Both followers are behind the commit mark, so no failover may promote either; accepting
      // the loss takes the one the report says holds more, not the better-ranked one.
      const { before, after } = await failover('Quorum', 3, (a) => {
        const [, f1, f2] = a.replicas;
        return {
          leader_offset: 100,
          commit_offset: 100,
          replica_offsets: [
            { node_id: f1!, durable_offset: 40 },
            { node_id: f2!, durable_offset: 90 },
          ],
        };
      });
      expect(after).toEqual(before);
      const out = await store.assignments.acceptLoss(view, TRUST_ALL, before.leader);
      expect(out.moved).toHaveLength(1);
      expect(out.moved[0]!.leader).toBe(before.replicas[2]);
      expect(out.moved[0]!.generation).toBe(before.generation + 1);
      // The restart continues that replica's copy: the floor names it as its base.
      expect(out.moved[0]).toMatchObject({
        floor_generation: before.generation + 1,
        floor_base: before.replicas[2],
      });
    });

    it('a_leader_stream_keeps_a_member_that_left_for_its_window', async () => {
      // Its writes need no other member, so a broker back from a restart within the window
      // keeps its copy (no full copy made elsewhere meanwhile); a leader that left may still
      // hold its lease and keeps its shard for the same window.
      const real = (nodes: readonly NodeLiveness[]) =>
        placementNodes(nodes, { ...liveness, regrantMarginMs: 750 }, clock.nowMs());
      await store.streams.create(stream('s', { durable: true, replication_factor: 2 }), view);
      const [before] = (await store.assignments.list(10)).items;
      await store.nodes.deregister(before!.replicas[1]!);
      await store.assignments.pass(real);
      expect((await store.assignments.list(10)).items[0]).toEqual(before);
      await store.nodes.deregister(before!.leader);
      await store.assignments.pass(real);
      expect((await store.assignments.list(10)).items[0]).toEqual(before);
    });

    it('an_accepted_loss_that_leaves_a_shard_with_its_still_routable_leader_sets_no_floor', async () => {
      // A departed leader stays routable until its lease is over, so placement keeps it; the
      // same pass drops a lost follower. Nothing restarted: no floor, and nothing moved.
      const leftRoutable = (nodes: readonly NodeLiveness[]): PlacementNode[] =>
        view(nodes).map((n, i) => ({
          ...n,
          routable: n.routable || nodes[i]!.lifecycle === 'left',
        }));
      await store.streams.create(stream('s', { durable: true, replication_factor: 3 }), view);
      const [before] = (await store.assignments.list(10)).items;
      const [leader, , follower] = before!.replicas;
      await store.nodes.deregister(leader!);
      const stamp = (await store.nodes.liveStamps()).find((x) => x.node_id === follower)!;
      expect(await store.nodes.markDown(follower!, stamp.stamp)).toBe(true);
      const out = await store.assignments.acceptLoss(leftRoutable, TRUST_ALL, leader!);
      const [after] = (await store.assignments.list(10)).items;
      expect(after!.leader).toBe(leader);
      expect(after!.replicas).not.toContain(follower);
      expect(after).not.toHaveProperty('floor_generation');
      expect(out.moved).toEqual([]);
    });

    it('an_accepted_loss_that_restarts_a_shard_empty_gives_it_a_floor_kept_through_later_moves', async () => {
      await store.streams.create(stream('s', { durable: true, replication_factor: 2 }), view);
      const [before] = (await store.assignments.list(10)).items;
      expect(before).not.toHaveProperty('floor_generation');
      const down = async (id: string) => {
        const stamp = (await store.nodes.liveStamps()).find((x) => x.node_id === id)!;
        expect(await store.nodes.markDown(id, stamp.stamp)).toBe(true);
      };
      // Both copies are lost: accepting the leader's loss restarts the shard on two empty nodes.
      for (const id of before!.replicas) await down(id);
      await store.assignments.pass(view);
      const out = await store.assignments.acceptLoss(view, TRUST_ALL, before!.leader);
      expect(out.moved).toHaveLength(1);
      const restarted = out.moved[0]!;
      expect(before!.replicas).not.toContain(restarted.leader);
      expect(restarted.floor_generation).toBe(restarted.generation);
      expect(restarted).not.toHaveProperty('floor_base');
      // A later move (its follower lost, dropped from the set) keeps the floor.
      await down(restarted.replicas.find((id) => id !== restarted.leader)!);
      await store.assignments.pass(view);
      const [later] = (await store.assignments.list(10)).items;
      expect(later!.generation).toBeGreaterThan(restarted.generation);
      expect(later!.leader).toBe(restarted.leader);
      expect(later!.floor_generation).toBe(restarted.generation);
    });

    it('an_in_memory_brokers_cache_shard_still_moves_without_a_report', async () => {
      // Values of an in-memory broker die with it: nothing is left to wait for.
      for (const id of ['n1', 'n2', 'n3', 'n4'])
        await store.nodes.register(registration(id, { incarnation: 2, durable_storage: false }));
      const before = await placedCache();
      await store.nodes.deregister(before.leader);
      expect((await store.assignments.pass(view)).unplaced).toBe(0);
      const [after] = (await store.assignments.list(10)).items;
      expect(after!.leader).not.toBe(before.leader);
      expect(after!.generation).toBe(before.generation + 1);
    });

    it('a_replica_report_is_believed_only_from_the_current_leader_and_only_moves_forward', async () => {
      await store.streams.create(stream('s', { durable: true, replication_factor: 3 }), view);
      const [a] = (await store.assignments.list(10)).items;
      const [leader, f1, f2] = a!.replicas as [string, string, string];
      const at = (leaderOffset: number, o1: number, o2: number) =>
        reportOf(a!, {
          leader_offset: leaderOffset,
          replica_offsets: [
            { node_id: f1, durable_offset: o1 },
            { node_id: f2, durable_offset: o2 },
          ],
        });
      expect(await store.replicaReports.record(leader, 1, [at(10, 10, 4)])).toEqual(['accepted']);
      clock.advance(5);
      // A later report that says less (a restarted cursor) takes nothing back.
      expect(await store.replicaReports.record(leader, 1, [at(12, 3, 12)])).toEqual(['accepted']);
      const [stored] = await store.replicaReports.list(10);
      expect(stored).toMatchObject({ leader, leader_offset: 12, generation: a!.generation });
      expect(stored!.replica_offsets).toEqual([
        { node_id: f1, durable_offset: 10 },
        { node_id: f2, durable_offset: 12 },
      ]);
      expect(stored!.reported_at_ms).toBe(clock.nowMs());
      const outcomes = await store.replicaReports.record(f1, 1, [
        at(99, 99, 99),
        { ...at(1, 1, 1), generation: a!.generation + 1 },
        { ...at(1, 1, 1), generation: a!.generation - 1 },
        { ...at(1, 1, 1), stream: 'nope' },
      ]);
      expect(outcomes).toEqual(['not_leader', 'future_generation', 'stale', 'unassigned']);
      expect((await store.replicaReports.list(10))[0]).toEqual(stored);
      // Deleting the stream removes its report with its assignments.
      await store.streams.delete('t1', 'ns', 's');
      expect(await store.replicaReports.list(10)).toEqual([]);
    });
  });
}

promotionSuite('sqlite');
promotionSuite('postgres');
