// Goal: the cluster-aware client against real brokers (issue 23, routing): given one seed it
// learns every broker (`topology`) and reaches each shard's leader (`shard_owners`); a
// subscription whose leader is SIGKILLed resumes on the promoted follower from the next offset
// it had not delivered, so the application sees every record once, in order.
// Method: 3-broker clusters from startCluster. Discovery: a 3-shard stream whose shards are led
// across the brokers, a client seeded with one broker reads a keyed record from every shard.
// Failover: a 1-shard stream at replication factor 3; a subscriber seeded with a broker that is
// not the leader reads from earliest while records are published; once the followers confirmed
// them (the leader's lag gauge at 0, and a replica report at the control plane saying so) the
// leader is SIGKILLed, a follower is promoted (assignment generation), more records are
// published through a client seeded with a surviving broker, and the subscriber's offsets and
// values are checked to be exactly 0..n-1. The same with the killed
// leader as the reader's only seed: it reconnects through the brokers its topology named. And
// a group consume loop seeded with a follower keeps consuming on the promoted leader, and a
// watch of a one-shard cache seeded with a follower sees every change once across the kill.
import type { StreamEvent } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, metricOf, publishAll } from './support.js';

const FAILOVER_MS = 60_000;
const TEXT = new TextDecoder();

/**
 * Waits until the control plane holds a replica report of `stream` naming every follower at
 * `records` (under `leader` consistency only a follower holding the whole reported log may be
 * promoted, so a kill before it leaves the shard unplaced).
 */
async function reportCaughtUp(c: FelixCluster, stream: string, records: number): Promise<void> {
  await waitFor(
    async () => {
      const page = (await c.operatorGet('/v1/replica-reports')) as {
        items: Array<{
          stream: string;
          leader_offset: number;
          replica_offsets: Array<{ durable_offset: number }>;
        }>;
      };
      const r = page.items.find((x) => x.stream === stream);
      return (
        r?.leader_offset === records && r.replica_offsets.every((o) => o.durable_offset === records)
      );
    },
    'a replica report naming the followers caught up',
    scaled(FAILOVER_MS),
  );
}

describe('the cluster-aware client', () => {
  const held = clusterPerTest();

  it('a_client_discovers_every_broker_from_one_seed', async () => {
    const c = await startCluster({
      brokers: 3,
      streams: [{ name: 'spread', shards: 3, replicationFactor: 1 }],
    });
    held.cluster = c;
    const client = await c.connect({ servers: [c.node(0).url()] });
    try {
      // Every shard is written on its own leader, wherever it is, through that one seed.
      const keys = Array.from({ length: 30 }, (_, i) => `k${i}`);
      for (const k of keys) await client.publish('spread', k, { key: k });
      await waitFor(
        () => client.brokers.length === 3,
        'the client to learn every broker from one seed',
        scaled(FAILOVER_MS),
      );
      const addrs = client.brokers.map((b) => b.addr).sort();
      expect(addrs).toEqual(c.nodes.map((n) => n.url()).sort());
      const leaders = new Set<string>();
      for (let shard = 0; shard < 3; shard++) leaders.add((await c.leaderOf('spread', shard))!.id);
      // And read from every shard's leader, merged.
      const seen = new Set<string>();
      const ac = new AbortController();
      const sub = client.subscribe('spread', { from: 'earliest', signal: ac.signal });
      for await (const ev of sub) {
        seen.add(TEXT.decode(ev.data));
        if (seen.size === keys.length) break;
      }
      ac.abort();
      expect([...seen].sort()).toEqual([...keys].sort());
      // The shards were led by more than the seed (else this proved no routing).
      expect(leaders.size).toBeGreaterThan(1);
    } finally {
      await client.close();
    }
  }, 180_000);

  it('a_group_consumer_follows_a_failover_to_the_promoted_leader', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'jobs', shards: 1, replicationFactor: 3 }],
    });
    held.cluster = c;
    const leader = (await c.leaderOf('jobs'))!;
    const before = (await c.assignments()).find((a) => a.stream === 'jobs')!;
    const follower = c.nodes.find((n) => n.id !== leader.id)!;
    const worker = await c.connect({
      servers: [follower.url()],
      failoverDeadlineMs: scaled(FAILOVER_MS * 2),
    });
    const writer = await c.connect({ servers: [follower.url()] });
    const seen = new Set<number>();
    const ac = new AbortController();
    // One consume loop for the whole test: it must carry on across the failover by itself.
    const consuming = (async () => {
      const g = worker.group('jobs', 'workers');
      for await (const m of g.consume({ max: 10, waitMs: 1_000, signal: ac.signal })) {
        seen.add(m.offset);
        await m.ack().catch(() => undefined); // a claim lost with the old leader comes back
        if (seen.size === 40) return;
      }
    })();
    // The loop ending with an error is the cause the waits below time out with.
    let ended: unknown;
    consuming.catch((err: unknown) => {
      ended = err;
    });
    const consumed = (n: number) => () => {
      if (ended !== undefined) throw ended;
      return seen.size >= n;
    };
    try {
      await publishAll(
        writer,
        'jobs',
        Array.from({ length: 20 }, (_, i) => `job-${i}`),
      );
      await waitFor(consumed(20), 'the first jobs consumed', scaled(FAILOVER_MS));
      await waitFor(
        async () => (await metricOf(leader, 'felix_broker_replication_lag_records')) === 0,
        'the followers to confirm every record and ack',
        scaled(FAILOVER_MS),
      );
      await reportCaughtUp(c, 'jobs', 20);
      await c.kill(leader.id);
      await waitFor(
        async () => {
          const a = (await c.assignments()).find((x) => x.stream === 'jobs');
          return a && a.leader !== leader.id && a.generation > before.generation ? a : undefined;
        },
        'a follower to be promoted',
        scaled(FAILOVER_MS),
      );
      await publishAll(
        writer,
        'jobs',
        Array.from({ length: 20 }, (_, i) => `job-${i + 20}`),
      );
      await waitFor(consumed(40), 'every job consumed', scaled(FAILOVER_MS * 2));
      await consuming;
    } finally {
      ac.abort();
      await writer.close();
      await worker.close();
    }
    // At least once, and nothing lost: every offset was handed to the worker.
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  }, 300_000);

  it('a_cache_watch_follows_a_failover_to_the_promoted_leader', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      caches: [{ name: 'kv', shards: 1, replicationFactor: 3 }],
    });
    held.cluster = c;
    const leaderId = (await c.assignments()).find((a) => a.kind === 'cache')!.leader;
    const before = (await c.assignments()).find((a) => a.kind === 'cache')!;
    const leader = c.node(leaderId);
    const follower = c.nodes.find((n) => n.id !== leaderId)!;
    const watcher = await c.connect({
      servers: [follower.url()],
      failoverDeadlineMs: scaled(FAILOVER_MS * 2),
    });
    const puts: string[] = [];
    const ac = new AbortController();
    const watching = (async () => {
      for await (const ev of watcher
        .cache('kv')
        .watch({ prefix: 'k' }, { fromOffset: 0, signal: ac.signal })) {
        if (ev.type === 'put') puts.push(`${ev.key}=${TEXT.decode(ev.value)}`);
        if (puts.length === 20) return;
      }
    })();
    let ended: unknown;
    watching.catch((err: unknown) => {
      ended = err;
    });
    const watched = (n: number) => () => {
      if (ended !== undefined) throw ended;
      return puts.length >= n;
    };
    try {
      // The writer is seeded with the leader of the moment (any broker would do: a cache call
      // goes to its key's owner, a_routed_client_reads_and_writes_every_shard_of_a_cache_through_one_seed).
      const onLeader = await c.connect({ servers: [leader.url()] });
      for (let i = 0; i < 10; i++) await onLeader.cache('kv').put(`k${i}`, `v${i}`);
      await onLeader.close();
      await waitFor(watched(10), 'the first puts watched', scaled(FAILOVER_MS));
      await waitFor(
        async () => (await metricOf(leader, 'felix_broker_replication_lag_records')) === 0,
        'the followers to confirm every log',
        scaled(FAILOVER_MS),
      );
      // A cache shard, like a durable stream, goes only to a follower its leader's last report
      // names holding the whole cache log.
      await waitFor(
        async () => {
          const page = (await c.operatorGet('/v1/replica-reports')) as {
            items: Array<{
              kind: string;
              leader_offset: number;
              replica_offsets: Array<{ durable_offset: number }>;
            }>;
          };
          const r = page.items.find((x) => x.kind === 'cache');
          return (
            r !== undefined &&
            r.leader_offset > 0 &&
            r.replica_offsets.every((o) => o.durable_offset >= r.leader_offset)
          );
        },
        'a replica report naming the followers caught up',
        scaled(FAILOVER_MS),
      );
      await c.kill(leaderId);
      const promoted = await waitFor(
        async () => {
          const a = (await c.assignments()).find((x) => x.kind === 'cache');
          return a && a.leader !== leaderId && a.generation > before.generation ? a : undefined;
        },
        'a follower to be promoted',
        scaled(FAILOVER_MS),
      );
      const onNew = await c.connect({ servers: [c.node(promoted.leader).url()] });
      for (let i = 10; i < 20; i++) {
        const k = `k${i}`;
        await waitFor(
          async () =>
            (await onNew
              .cache('kv')
              .put(k, `v${i}`)
              .then(() => true)) === true,
          `put ${k} on the new leader`,
          scaled(FAILOVER_MS),
        );
      }
      await onNew.close();
      await waitFor(watched(20), 'every put watched', scaled(FAILOVER_MS * 2));
      await watching;
    } finally {
      ac.abort();
      await watcher.close();
    }
    // Each change once, in order: the watch resumed at the next offset it had not seen.
    expect(puts).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}=v${i}`));
  }, 300_000);

  it('a_subscription_follows_a_failover_without_gap_or_duplicate', async () => {
    await followFailover(held, 'a follower');
  }, 300_000);

  it('a_client_seeded_only_with_the_killed_leader_resumes_through_the_brokers_it_learned', async () => {
    await followFailover(held, 'the leader');
  }, 300_000);
});

/**
 * Subscribes from earliest through a client seeded with one broker (`seeded`: a follower of the
 * stream's leader, or the leader itself), publishes, SIGKILLs the leader once its followers
 * confirmed, publishes more after the promotion, and checks the subscriber saw offsets 0..n-1
 * with the values in order. The cluster goes in `held` (shut down after the test).
 */
async function followFailover(
  held: { cluster: FelixCluster | undefined },
  seeded: 'a follower' | 'the leader',
): Promise<void> {
  const c = await startCluster({
    brokers: 3,
    replication: true,
    streams: [{ name: 'orders', shards: 1, replicationFactor: 3 }],
  });
  held.cluster = c;
  const leader = (await c.leaderOf('orders'))!;
  const before = (await c.assignments()).find((a) => a.stream === 'orders')!;
  const follower = c.nodes.find((n) => n.id !== leader.id)!;
  const seedUrl = (seeded === 'the leader' ? leader : follower).url();
  const reader = await c.connect({
    servers: [seedUrl],
    failoverDeadlineMs: scaled(FAILOVER_MS * 2),
  });
  const got: StreamEvent[] = [];
  const ac = new AbortController();
  const total = 200;
  const reading = (async () => {
    for await (const ev of reader.subscribe('orders', {
      shard: 0,
      from: 'earliest',
      signal: ac.signal,
    })) {
      got.push(ev);
      if (got.length === total) return;
    }
  })();
  const first = Array.from({ length: total / 2 }, (_, i) => `r-${i}`);
  const second = Array.from({ length: total / 2 }, (_, i) => `r-${i + total / 2}`);
  try {
    // The reader learned the other brokers before its seed may die.
    await waitFor(() => reader.brokers.length === 3, 'the topology', scaled(FAILOVER_MS));
    const writer = await c.connect({ servers: [seedUrl] });
    await publishAll(writer, 'orders', first);
    await writer.close();
    await waitFor(
      async () => (await metricOf(leader, 'felix_broker_replication_lag_records')) === 0,
      'the followers to confirm every record',
      scaled(FAILOVER_MS),
    );
    await reportCaughtUp(c, 'orders', first.length);
    await waitFor(() => got.length >= first.length, 'the first records read', scaled(FAILOVER_MS));
    await c.kill(leader.id);
    await waitFor(
      async () => {
        const a = (await c.assignments()).find((x) => x.stream === 'orders');
        return a && a.leader !== leader.id && a.generation > before.generation ? a : undefined;
      },
      'a follower to be promoted',
      scaled(FAILOVER_MS),
    );
    const after = await c.connect({ servers: [follower.url()] });
    await publishAll(after, 'orders', second);
    await after.close();
    await waitFor(() => got.length >= total, 'every record read', scaled(FAILOVER_MS * 2));
    await reading;
  } finally {
    ac.abort();
    await reader.close();
  }
  expect(got.map((e) => e.offset)).toEqual(Array.from({ length: total }, (_, i) => i));
  expect(got.map((e) => TEXT.decode(e.data))).toEqual([...first, ...second]);
  expect(got.every((e) => e.lostBefore === 0)).toBe(true);
}
