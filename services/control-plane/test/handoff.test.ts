// Goal: a leaving leader's drained shard moves at once (no expiry, no down-marking) to the most
// caught-up follower its report names as holding every log, at a new generation, keeping the
// old leader in the set; without a drained report, or with no follower holding the whole log,
// nothing moves. Method: the store on SQLite and on the real Postgres, nodes registered and
// drained directly, a report recorded, one placement pass with the liveness view.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { placementNodes } from '../src/cluster/liveness.js';
import type { LivenessConfig } from '../src/config.js';
import type { ReportInput } from '../src/store/replica-reports.js';
import type { ControlStore } from '../src/store/store.js';
import type { AssignmentRecord, NodeLiveness, Stream } from '../src/store/types.js';
import {
  type Backend,
  ManualClock,
  type OpenedStore,
  openTestStore,
  lifecycleView as view,
} from './helpers.js';

function durableQuorum(name: string): Stream {
  return {
    tenant_id: 't1',
    namespace: 'ns',
    stream: name,
    kind: 'Stream',
    shards: 1,
    replication_factor: 3,
    retention: { max_age_seconds: null, max_size_bytes: null },
    consistency: 'Quorum',
    durable: true,
    routing: 'modulo',
    uid: '',
  };
}

function report(a: AssignmentRecord, extra: Partial<ReportInput>): ReportInput {
  return {
    tenant_id: a.tenant_id,
    namespace: a.namespace,
    kind: a.kind,
    stream: a.stream,
    shard: a.shard,
    generation: a.generation,
    leader_offset: 100,
    commit_offset: 100,
    replica_offsets: [],
    halted: [],
    drained: false,
    caught_up: [],
    in_sync: [],
    ...extra,
  };
}

function handoffSuite(backend: Backend): void {
  describe(`hand-off on ${backend}`, () => {
    let opened: OpenedStore;
    let store: ControlStore;
    let clock: ManualClock;
    beforeEach(async () => {
      clock = new ManualClock();
      opened = await openTestStore(backend, { clock });
      store = opened.store;
      await store.tenants.create({ tenant_id: 't1', display_name: 'T1' });
      await store.namespaces.create({ tenant_id: 't1', namespace: 'ns', display_name: 'ns' });
      for (const id of ['n1', 'n2', 'n3']) {
        await store.nodes.register({
          node_id: id,
          advertise_addr: `${id}:5001`,
          client_addr: null,
          region: 'local',
          zone: id,
          labels: {},
          capacity: { max_shards: 0, weight: 1 },
          incarnation: 1,
        });
      }
      await store.streams.create(durableQuorum('s'), view);
    });
    afterEach(async () => {
      await opened.cleanup();
    });

    /** The leader drains and reports `extra`; one pass; the assignment before and after. */
    async function leave(extra: (a: AssignmentRecord) => Partial<ReportInput>) {
      const [before] = (await store.assignments.list(10)).items;
      await store.nodes.drain(before!.leader);
      const outcomes = await store.replicaReports.record(before!.leader, 1, [
        report(before!, extra(before!)),
      ]);
      expect(outcomes).toEqual(['accepted']);
      await store.assignments.pass(view);
      const [after] = (await store.assignments.list(10)).items;
      return { before: before!, after: after! };
    }

    it('a_leaving_leaders_drained_shard_moves_at_once_to_its_most_caught_up_follower', async () => {
      const { before, after } = await leave((a) => {
        const [, f1, f2] = a.replicas;
        return {
          drained: true,
          caught_up: [f1!, f2!],
          replica_offsets: [
            { node_id: f1!, durable_offset: 100 },
            { node_id: f2!, durable_offset: 100 },
          ],
        };
      });
      // No node was marked down: the move happened on the report alone.
      expect(before.replicas.slice(1)).toContain(after.leader);
      expect(after.leader).not.toBe(before.leader);
      expect(after.generation).toBe(before.generation + 1);
      // The old leader stays a member, so the quorum's fence majority overlaps its acks.
      expect([...after.replicas].sort()).toEqual([...before.replicas].sort());
    });

    it('a_handoff_goes_only_to_a_follower_holding_every_log_of_the_shard', async () => {
      const { before, after } = await leave((a) => {
        const [, f1, f2] = a.replicas;
        // f1 holds the whole stream log but not every riding log; f2 holds everything.
        return {
          drained: true,
          caught_up: [f2!],
          replica_offsets: [
            { node_id: f1!, durable_offset: 100 },
            { node_id: f2!, durable_offset: 100 },
          ],
        };
      });
      expect(after.leader).toBe(before.replicas[2]);
    });

    it('a_leaving_leader_without_a_level_follower_keeps_its_shard', async () => {
      const { before, after } = await leave((a) => {
        const [, f1, f2] = a.replicas;
        return {
          drained: true,
          caught_up: [f1!, f2!],
          replica_offsets: [
            { node_id: f1!, durable_offset: 99 },
            { node_id: f2!, durable_offset: 80 },
          ],
        };
      });
      expect(after).toEqual(before);
    });

    it('a_leaver_that_leads_nothing_leaves_a_quorum_set_of_two_once_its_successor_reports_but_stays_in_a_larger_one', async () => {
      // The real view: a left node stays routable for L + margin after its last heartbeat.
      const liveness = { heartbeatIntervalMs: 1_000, expiryTimeoutMs: 3_000, regrantMarginMs: 750 };
      const real = (nodes: readonly NodeLiveness[]) =>
        placementNodes(nodes, liveness as LivenessConfig, clock.nowMs());
      await store.streams.create({ ...durableQuorum('pair'), replication_factor: 2 }, view);
      const byName = async () =>
        new Map((await store.assignments.list(10)).items.map((a) => [a.stream, a]));
      const leaver = (await byName()).get('pair')!.leader;
      // It hands off every shard it leads (both followers of each hold its whole log).
      await store.nodes.drain(leaver);
      const led = [...(await byName()).values()].filter((a) => a.leader === leaver);
      const drained = led.map((a) => {
        const followers = a.replicas.filter((id) => id !== leaver);
        return report(a, {
          drained: true,
          caught_up: followers,
          replica_offsets: followers.map((id) => ({ node_id: id, durable_offset: 100 })),
        });
      });
      expect(await store.replicaReports.record(leaver, 1, drained)).toEqual(
        drained.map(() => 'accepted'),
      );
      await store.assignments.pass(real);
      const moved = await byName();
      expect(moved.get('pair')!.leader).not.toBe(leaver);
      expect(moved.get('pair')!.replicas).toContain(leaver);
      await store.nodes.deregister(leaver);
      // Its successor has not reported at its generation: the set stays as it is.
      await store.assignments.pass(real);
      expect((await byName()).get('pair')).toEqual(moved.get('pair'));
      // Every leader reports at its generation (established).
      for (const a of (await byName()).values()) {
        const others = a.replicas.filter((id) => id !== a.leader);
        const offsets = others.map((id) => ({ node_id: id, durable_offset: 100 }));
        expect(
          await store.replicaReports.record(a.leader, 1, [report(a, { replica_offsets: offsets })]),
        ).toEqual(['accepted']);
      }
      await store.assignments.pass(real);
      const after = await byName();
      // The set of two had no majority without it: dropped and topped up with the third node.
      expect(after.get('pair')!.replicas).not.toContain(leaver);
      expect(after.get('pair')!.replicas).toHaveLength(2);
      // The set of three keeps a live majority: the leaver keeps its copy for the window.
      expect(after.get('s')!.replicas).toContain(leaver);
    });

    it('a_draining_leader_that_did_not_report_drained_keeps_its_shard', async () => {
      const { before, after } = await leave((a) => {
        const [, f1, f2] = a.replicas;
        return {
          caught_up: [f1!, f2!],
          replica_offsets: [
            { node_id: f1!, durable_offset: 100 },
            { node_id: f2!, durable_offset: 100 },
          ],
        };
      });
      expect(after).toEqual(before);
    });
  });
}

handoffSuite('sqlite');
handoffSuite('postgres');
