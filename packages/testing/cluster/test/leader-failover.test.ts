// Goal: a `leader` stream fails over under steady writes (issue 23): when its leader dies while
// it acks records its followers have not confirmed yet, the control plane promotes the most
// caught-up follower in sync (one that held the leader's whole log within the lag window,
// `cluster.replica_lag_max_ms`), and the new leader serves a prefix of the old leader's log:
// only acked records above what the surviving replicas held are lost, the documented `leader`
// exposure. A follower cut from its leader for longer than the window is out of sync and never
// promoted: the shard waits for its leader, which returns with every acked record. The leader's
// exposure gauge names, before a kill, exactly the acked records that failover loses.
// Method: three real brokers from startCluster (internal listeners, mutual TLS), a one-shard
// stream at replication factor 3 and `leader` consistency, fsync on commit; the followers'
// fsyncs slowed (20 ms) so that under a publisher writing without pause neither is ever level
// with the leader's log when it reports (the old rule, "holds the leader's whole reported log",
// then names no one). The leader is SIGKILLed mid-stream; the test reads the control plane's
// stored replica reports, its assignments and placement plan, and the new (or returned) leader.
import type { FelixClient, StatusEvent, StreamEvent } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, metricOf, publishAll, readUpTo } from './support.js';

const STEP_MS = 60_000;
/** The followers' slowed fsync: a batch takes at least this to be answered. */
const FOLLOWER_FSYNC_MS = 20;

interface StoredReport {
  stream: string;
  generation: number;
  leader_offset: number;
  replica_offsets: { node_id: string; durable_offset: number }[];
  in_sync: string[] | undefined;
}

async function reportOf(c: FelixCluster, stream: string): Promise<StoredReport | undefined> {
  const page = (await c.operatorGet('/v1/replica-reports')) as { items: StoredReport[] };
  return page.items.find((r) => r.stream === stream);
}

async function assignmentOf(c: FelixCluster, stream: string) {
  const a = (await c.assignments()).find((x) => x.stream === stream);
  expect(a).toBeDefined();
  return a!;
}

/** Publishes `w-0`, `w-1`, ... one after another until stopped or refused; keeps what was acked
 *  at which offset. */
function steadyWriter(client: FelixClient, stream: string) {
  const acked = new Map<number, string>();
  let stopped = false;
  const done = (async () => {
    for (let i = 0; !stopped; i++) {
      let offset: number | null;
      try {
        offset = (await client.publish(stream, `w-${i}`)).offset;
      } catch {
        return; // the leader died (or refused): the writer stops, nothing resent
      }
      // A durable stream's ack names where its log holds the record.
      if (offset === null) throw new Error(`w-${i} was acked without an offset`);
      acked.set(offset, `w-${i}`);
    }
  })();
  return {
    acked,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

/** A broker's gauge for one stream's shard 0, from its /metrics page (NaN when absent). */
async function shardGauge(c: FelixCluster, nodeId: string, name: string, stream: string) {
  const page = await (await fetch(`http://127.0.0.1:${c.node(nodeId).httpPort}/metrics`)).text();
  const line = page
    .split('\n')
    .find(
      (l) =>
        l.startsWith(`${name}{`) && l.includes(`stream="${stream}"`) && l.includes('shard="0"'),
    );
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** A stored report in which no follower is level with the leader's log (steady writes). */
const nobodyLevel = (r: StoredReport) =>
  r.replica_offsets.every((o) => o.durable_offset < r.leader_offset);

describe('leader failover under steady writes', () => {
  const held = clusterPerTest();

  it('a_leader_stream_fails_over_to_an_in_sync_follower_under_steady_writes', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      env: { FELIX_DURABLE_FSYNC_MODE: 'onCommit' },
      streams: [{ name: 'steady', shards: 1, replicationFactor: 3, consistency: 'leader' }],
    });
    held.cluster = c;
    const before = await assignmentOf(c, 'steady');
    const followers = before.replicas.filter((id) => id !== before.leader);
    for (const f of followers) await c.slowFsync(f, FOLLOWER_FSYNC_MS);
    const onLeader = await c.connect({ servers: [c.node(before.leader).url()] });
    const writer = steadyWriter(onLeader, 'steady');
    await waitFor(
      async () => {
        const r = await reportOf(c, 'steady');
        return (
          r !== undefined && r.leader_offset > 200 && r.in_sync?.length === 2 && nobodyLevel(r)
        );
      },
      'a report naming both followers in sync, neither level with the leader',
      scaled(STEP_MS),
    );
    await c.kill(before.leader);
    await writer.stop();
    // Its broker is gone: closing may fail, and there is nothing left to close.
    await onLeader.close().catch(() => undefined);
    // The leader's last report: neither follower held its whole log when it was taken.
    const last = (await reportOf(c, 'steady'))!;
    expect(nobodyLevel(last)).toBe(true);
    const promoted = await waitFor(
      async () => {
        const a = await assignmentOf(c, 'steady');
        return a.generation > before.generation ? a : undefined;
      },
      'an in-sync follower to be promoted',
      scaled(STEP_MS),
    );
    // The most caught up of the followers the last report named in sync.
    const ranked = [...last.replica_offsets].sort(
      (a, b) => b.durable_offset - a.durable_offset || (a.node_id < b.node_id ? -1 : 1),
    );
    expect(promoted.leader).toBe(ranked[0]!.node_id);
    const onNew = await c.connect({ servers: [c.node(promoted.leader).url()] });
    try {
      await publishAll(onNew, 'steady', ['after']);
      const got = await readUpTo(onNew, 'steady', 'after');
      const kept = got.slice(0, -1);
      // A prefix of the old leader's log: each record at its offset, none twice, no hole.
      expect(kept).toEqual(kept.map((_, i) => `w-${i}`));
      expect(kept.length).toBeGreaterThanOrEqual(ranked[0]!.durable_offset);
      // What is lost is acked records above it only (the `leader` exposure), never one below.
      const lost = [...writer.acked.keys()].filter((o) => o >= kept.length);
      for (const [o, v] of writer.acked) if (o < kept.length) expect(kept[o]).toBe(v);
      console.log(
        `acked ${writer.acked.size}, new leader holds ${kept.length}, lost ${lost.length} acked`,
      );
    } finally {
      await onNew.close();
    }
  }, 240_000);

  it('a_follower_out_of_sync_longer_than_the_lag_window_is_never_promoted', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      env: { FELIX_DURABLE_FSYNC_MODE: 'onCommit', FELIX_REPLICA_LAG_MAX_MS: '1500' },
      streams: [{ name: 'steady', shards: 1, replicationFactor: 3, consistency: 'leader' }],
    });
    held.cluster = c;
    const before = await assignmentOf(c, 'steady');
    const followers = before.replicas.filter((id) => id !== before.leader);
    for (const f of followers) await c.slowFsync(f, FOLLOWER_FSYNC_MS);
    const onLeader = await c.connect({ servers: [c.node(before.leader).url()] });
    const writer = steadyWriter(onLeader, 'steady');
    await waitFor(
      async () => (await reportOf(c, 'steady'))?.in_sync?.length === 2,
      'a report naming both followers in sync',
      scaled(STEP_MS),
    );
    // Both followers cut from the leader (not from the control plane: both stay live and
    // eligible); the leader acks on its own for longer than the window.
    for (const f of followers) await c.partition(before.leader, f);
    await waitFor(
      async () => {
        const r = await reportOf(c, 'steady');
        return r?.in_sync?.length === 0 && nobodyLevel(r);
      },
      'a report naming no follower in sync',
      scaled(STEP_MS),
    );
    await writer.stop();
    await onLeader.close();
    const acked = [...writer.acked.values()];
    await c.kill(before.leader);
    const outcome = await waitFor(
      async () => {
        const a = await assignmentOf(c, 'steady');
        if (a.generation !== before.generation) return { promoted: a.leader };
        const plan = (await c.operatorGet('/v1/placement/plan')) as {
          items: { stream: string; action: string }[];
        };
        const unplaced = plan.items.some(
          (i) => i.stream === 'steady' && i.action === 'unplaceable',
        );
        return unplaced ? { promoted: undefined } : undefined;
      },
      'placement to pass over the shard once its leader is down',
      scaled(STEP_MS),
    );
    expect(outcome.promoted).toBeUndefined();
    expect(await assignmentOf(c, 'steady')).toEqual(before);
    // Back with every record it acked, at the same generation.
    await c.heal();
    await c.start(before.leader);
    await c.waitServed();
    const back = await c.connect({ servers: [c.node(before.leader).url()] });
    try {
      expect(await readUpTo(back, 'steady', acked.at(-1)!)).toEqual(acked);
      expect(await assignmentOf(c, 'steady')).toEqual(before);
    } finally {
      await back.close();
    }
  }, 240_000);

  it('the_exposure_gauge_names_the_acked_records_a_leader_failover_loses', async () => {
    // A window longer than the test's cut: both followers stay in sync (promotable) while
    // the leader acks on its own.
    const c = await startCluster({
      brokers: 3,
      replication: true,
      env: { FELIX_DURABLE_FSYNC_MODE: 'onCommit', FELIX_REPLICA_LAG_MAX_MS: '60000' },
      streams: [{ name: 'exposed', shards: 1, replicationFactor: 3, consistency: 'leader' }],
    });
    held.cluster = c;
    const before = await assignmentOf(c, 'exposed');
    const leader = c.node(before.leader);
    const followers = before.replicas.filter((id) => id !== before.leader);
    const onLeader = await c.connect({ servers: [leader.url()] });
    const shipped = Array.from({ length: 100 }, (_, i) => `s-${i}`);
    await publishAll(onLeader, 'exposed', shipped);
    await waitFor(
      async () =>
        (await metricOf(leader, 'felix_broker_replication_lag_records')) === 0 &&
        (await shardGauge(
          c,
          leader.id,
          'felix_broker_replication_in_sync_followers',
          'exposed',
        )) === 2 &&
        (await shardGauge(c, leader.id, 'felix_broker_replication_exposed_records', 'exposed')) ===
          0,
      'both followers level and in sync, nothing exposed',
      scaled(STEP_MS),
    );
    // Cut from both followers (not from the control plane), the leader acks 40 more alone.
    for (const f of followers) await c.partition(before.leader, f);
    const alone = Array.from({ length: 40 }, (_, i) => `a-${i}`);
    await publishAll(onLeader, 'exposed', alone);
    const exposed = await shardGauge(
      c,
      leader.id,
      'felix_broker_replication_exposed_records',
      'exposed',
    );
    expect(exposed).toBe(alone.length);
    expect(
      await shardGauge(c, leader.id, 'felix_broker_replication_in_sync_followers', 'exposed'),
    ).toBe(2);
    await c.kill(before.leader);
    // Its broker is gone: closing may fail, and there is nothing left to close.
    await onLeader.close().catch(() => undefined);
    await c.heal();
    const promoted = await waitFor(
      async () => {
        const a = await assignmentOf(c, 'exposed');
        return a.generation > before.generation ? a : undefined;
      },
      'an in-sync follower to be promoted',
      scaled(STEP_MS),
    );
    const onNew = await c.connect({ servers: [c.node(promoted.leader).url()] });
    try {
      await publishAll(onNew, 'exposed', ['after']);
      const kept = (await readUpTo(onNew, 'exposed', 'after')).slice(0, -1);
      expect(kept).toEqual(shipped);
      // What the failover lost is what the gauge named the moment before the kill.
      expect(shipped.length + alone.length - kept.length).toBe(exposed);
    } finally {
      await onNew.close();
    }
  }, 240_000);

  it('a_leader_stream_subscriber_gets_every_record_the_new_leader_writes_after_a_failover', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'parted', shards: 1, replicationFactor: 3, consistency: 'leader' }],
    });
    held.cluster = c;
    const before = await assignmentOf(c, 'parted');
    const followers = before.replicas.filter((id) => id !== before.leader);
    const reader = await c.connect({
      servers: [c.node(followers[0]!).url()],
      failoverDeadlineMs: scaled(STEP_MS),
    });
    const diverged: StatusEvent[] = [];
    const stop = new AbortController();
    void (async () => {
      for await (const e of reader.status({ signal: stop.signal }))
        if (e.type === 'diverged') diverged.push(e);
    })();
    const got: StreamEvent[] = [];
    const value = (e: StreamEvent) => new TextDecoder().decode(e.data);
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const reading = (async () => {
      const sub = reader.subscribe('parted', { shard: 0, from: 'earliest', signal: stop.signal });
      for await (const e of sub) {
        got.push(e);
        // Busy with the old leader's last record while the failover happens.
        if (value(e) === 'cut-4') await released;
      }
    })().catch(() => undefined); // ended by the test's abort
    const onLeader = await c.connect({ servers: [c.node(before.leader).url()] });
    await publishAll(
      onLeader,
      'parted',
      Array.from({ length: 20 }, (_, i) => `w-${i}`),
    );
    await waitFor(
      async () => {
        const r = await reportOf(c, 'parted');
        return r !== undefined && r.leader_offset >= 20 && r.in_sync?.length === 2;
      },
      'a report naming both followers in sync',
      scaled(STEP_MS),
    );
    // Acked by the leader alone, read by the subscriber, then lost with it (`leader` exposure).
    for (const f of followers) await c.partition(before.leader, f);
    await publishAll(
      onLeader,
      'parted',
      Array.from({ length: 5 }, (_, i) => `cut-${i}`),
    );
    await waitFor(() => got.some((e) => value(e) === 'cut-4'), 'cut-4 read', scaled(STEP_MS));
    const cursor = got.at(-1)!.offset + 1;
    await c.kill(before.leader);
    await c.heal();
    // Its broker is gone: closing may fail, and there is nothing left to close.
    await onLeader.close().catch(() => undefined);
    const promoted = await waitFor(
      async () => {
        const a = await assignmentOf(c, 'parted');
        return a.generation > before.generation ? a : undefined;
      },
      'a follower to be promoted',
      scaled(STEP_MS),
    );
    const onNew = await c.connect({ servers: [c.node(promoted.leader).url()] });
    await publishAll(
      onNew,
      'parted',
      Array.from({ length: 10 }, (_, i) => `after-${i}`),
    );
    const written = await readUpTo(onNew, 'parted', 'after-9');
    release();
    await waitFor(() => got.some((e) => value(e) === 'after-9'), 'after-9 read', scaled(STEP_MS));
    stop.abort();
    await reading;
    // Every record the new leader wrote reaches the subscriber, once, at its offset.
    const after = got.filter((e) => value(e).startsWith('after-'));
    expect(after.map((e) => `${e.offset}:${value(e)}`)).toEqual(
      written.flatMap((v, o) => (v.startsWith('after-') ? [`${o}:${v}`] : [])),
    );
    // And it was told the records it had read from where the logs parted are gone.
    const parted = written.indexOf('after-0');
    expect(diverged).toEqual([
      { type: 'diverged', stream: 'parted', shard: 0, from: parted, to: cursor },
    ]);
    await reader.close();
    await onNew.close();
  }, 240_000);
});
