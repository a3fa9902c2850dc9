// Goal: the state that rides with a shard survives its owner's loss: a cache's values and a
// counter's sums (the cache shard's cache and counter logs), a consumer group's position (the
// stream shard's group-cursor log) and its dead letters (its dead-letter log) are shipped to the
// shard's followers, and the follower the control plane promotes after a SIGKILL of the leader
// serves them, rebuilt by replay.
// Method: 3 real brokers with internal listeners (mutual TLS), one 1-shard cache or stream at
// replication factor 3; writes on the leader, then a wait until the leader's
// `felix_broker_replication_lag_records` (every log of every shard it ships) is 0, so nothing
// acknowledged is still unshipped (acks are the leader's own: the window is documented in
// docs/replication.md); SIGKILL of the leader; reads on the promoted follower. And a follower's
// copy of a riding log is trimmed after its leader compacts: 64 KiB cache values overwritten until
// the leader compacts on its own, then a follower's cache-log directory watched for its first
// segment file to go.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { FelixClient } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Assignment,
  type ClusterSpec,
  type FelixCluster,
  scaled,
  startCluster,
} from '../src/index.js';
import { clusterPerTest, metricOf, served, shippedAndReported, text } from './support.js';

const FAILOVER_MS = 60_000;
const TEST_MS = 180_000;

/** Clients of the test, closed before its cluster shuts down (after hooks run last-first). */
const clients: FelixClient[] = [];

describe('state that rides with a shard', () => {
  const held = clusterPerTest();
  afterEach(async () => {
    // A client of a killed broker may fail to close: the test's verdict is already in.
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  });

  async function cluster(spec: Omit<ClusterSpec, 'brokers' | 'replication'>) {
    const c = await startCluster({ brokers: 3, replication: true, ...spec });
    held.cluster = c;
    return c;
  }

  it(
    'a_cache_value_survives_the_loss_of_its_owner',
    async () => {
      const c = await cluster({ caches: [{ name: 'profiles', shards: 1, replicationFactor: 3 }] });
      const values = new Map<string, string>();
      for (let i = 0; i < 50; i++) values.set(`user-${i}`, `profile-${i}`);
      const next = await failover(c, 'profiles', 'cache', async (onLeader) => {
        const cache = onLeader.cache('profiles');
        for (const [k, v] of values) await cache.put(k, v);
        // Overwrites and a delete: the follower must replay to the last word, not the first.
        await cache.put('user-0', 'rewritten');
        values.set('user-0', 'rewritten');
        await cache.delete('user-1');
        values.delete('user-1');
      });
      const cache = next.cache('profiles');
      await served(() => cache.get('user-0'), 'the promoted follower to serve the cache');
      for (const [k, v] of values) expect(text(await cache.get(k)), k).toBe(v);
      expect(await cache.get('user-1')).toBeUndefined();
      // The new leader writes on top of what it was shipped.
      await cache.put('user-50', 'after failover');
      expect(text(await cache.get('user-50'))).toBe('after failover');
    },
    TEST_MS,
  );

  it(
    'a_counter_survives_the_loss_of_its_owner',
    async () => {
      const c = await cluster({ caches: [{ name: 'hits', shards: 1, replicationFactor: 3 }] });
      const next = await failover(c, 'hits', 'cache', async (onLeader) => {
        const counter = onLeader.counter('hits');
        for (let i = 0; i < 30; i++) await counter.add('page-a', 2n);
        await counter.add('page-b', -7n);
      });
      const counter = next.counter('hits');
      const a = await served(
        () => counter.get('page-a'),
        'the promoted follower to serve counters',
      );
      expect(a).toBe(60n);
      expect(await counter.get('page-b')).toBe(-7n);
      expect(await counter.add('page-a', 1n)).toBe(61n);
    },
    TEST_MS,
  );

  it(
    'a_stream_and_a_cache_of_one_name_have_their_own_replication_gauges',
    async () => {
      const c = await cluster({
        streams: [{ name: 'users', shards: 1, replicationFactor: 3 }],
        caches: [{ name: 'users', shards: 1, replicationFactor: 3 }],
      });
      const client = await c.connect();
      clients.push(client);
      await client.publish('users', 'u1 joined');
      await client.cache('users').put('u1', 'alice');
      // Each shard's leader names it by kind: one series each, not one overwriting the other.
      const series = async () => {
        const lines: string[] = [];
        for (const n of c.nodes) {
          const page = await (await fetch(`http://127.0.0.1:${n.httpPort}/metrics`)).text();
          for (const l of page.split('\n'))
            if (l.startsWith('felix_broker_replication_in_sync_followers{')) lines.push(l);
        }
        return lines;
      };
      const both = await waitFor(
        async () => {
          const lines = await series();
          const of = (kind: string) =>
            lines.filter((l) => l.includes(`kind="${kind}"`) && l.includes('stream="users"'));
          return of('stream').length === 1 && of('cache').length === 1 ? lines : undefined;
        },
        'an in-sync gauge for the stream shard and one for the cache shard',
        scaled(FAILOVER_MS),
      );
      expect(both).toHaveLength(2);
    },
    TEST_MS,
  );

  it(
    'a_group_position_survives_a_leader_failover',
    async () => {
      const c = await cluster({ streams: [{ name: 'jobs', shards: 1, replicationFactor: 3 }] });
      const next = await failover(c, 'jobs', 'stream', async (onLeader) => {
        for (let i = 0; i < 20; i++) await onLeader.publish('jobs', `job-${i}`);
        const g = onLeader.group('jobs', 'workers');
        const acked: number[] = [];
        while (acked.length < 12) {
          const batch = await g.poll({ max: 12 - acked.length, waitMs: 5_000 });
          for (const m of batch) {
            await m.ack();
            acked.push(m.offset);
          }
        }
        expect(acked).toEqual([...Array(12).keys()]);
      });
      const g = next.group('jobs', 'workers');
      const info = await served(() => g.describe(), 'the promoted follower to know the group');
      // Every ack was shipped before the kill: the group resumes exactly after them, and hands
      // out each record past its position once, none it acknowledged.
      expect(info.committed).toBe(12);
      const seen: number[] = [];
      await waitFor(
        async () => {
          for (const m of await g.poll({ max: 20, waitMs: 1_000 })) {
            seen.push(m.offset);
            await m.ack();
          }
          return seen.length >= 8;
        },
        'the records after the acked position',
        scaled(FAILOVER_MS),
      );
      expect(seen).toEqual([12, 13, 14, 15, 16, 17, 18, 19]);
    },
    TEST_MS,
  );

  it(
    'a_dead_letter_can_be_redriven_on_the_new_leader',
    async () => {
      const c = await cluster({ streams: [{ name: 'tasks', shards: 1, replicationFactor: 3 }] });
      let dead = -1;
      const next = await failover(c, 'tasks', 'stream', async (onLeader) => {
        for (let i = 0; i < 3; i++) await onLeader.publish('tasks', `task-${i}`);
        const g = onLeader.group('tasks', 'handlers');
        const got = await g.poll({ max: 3, waitMs: 5_000 });
        expect(got.map((m) => m.offset)).toEqual([0, 1, 2]);
        dead = got[1]!.offset;
        await got[1]!.deadLetter();
        await got[0]!.ack();
        await got[2]!.ack();
        expect(await g.deadLetters()).toEqual([dead]);
      });
      const g = next.group('tasks', 'handlers');
      const letters = await served(() => g.deadLetters(), 'the promoted follower to list them');
      expect(letters).toEqual([dead]);
      await g.redrive(dead);
      const again = await g.poll({ max: 3, waitMs: 5_000 });
      expect(again.map((m) => m.offset)).toEqual([dead]);
      expect(text(again[0]!.payload)).toBe('task-1');
      await again[0]!.ack();
      expect(await g.deadLetters()).toEqual([]);
    },
    TEST_MS,
  );
});

describe('a follower trims what rides with a shard', () => {
  const held = clusterPerTest();
  afterEach(async () => {
    // A client failing to close changes nothing of the verdict, already in.
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  });

  it(
    'a_followers_cache_log_drops_its_first_segment_after_its_leaders_compactions',
    async () => {
      const c = await startCluster({
        brokers: 3,
        replication: true,
        caches: [{ name: 'blobs', shards: 1, replicationFactor: 3 }],
      });
      held.cluster = c;
      const a = await assignmentOf(c, 'blobs', 'cache');
      const leader = c.nodes.find((n) => n.id === a.leader)!;
      const follower = c.nodes.find((n) => n.id !== a.leader && a.replicas.includes(n.id))!;
      const onLeader = await c.connect({ servers: [leader.url()] });
      clients.push(onLeader);
      const cache = onLeader.cache('blobs');
      const shipped = () =>
        waitFor(
          async () => (await metricOf(leader, 'felix_broker_replication_lag_records')) === 0,
          'the followers to confirm the cache log',
          scaled(FAILOVER_MS),
        );
      const blob = 'x'.repeat(64 * 1024);
      await cache.put('k0', `first:${blob}`);
      // The lag metric counts only logs already shipping: a cache log opened by this put may not
      // have its shipper yet, so lag 0 alone does not say the follower holds it (CI saw no
      // directory). Wait for the follower's copy itself.
      const [first] = await waitFor(
        async () => {
          const names = await segmentsOf(follower.dataDir);
          return names.length > 0 ? names : undefined;
        },
        "the follower's copy of the cache log",
        scaled(FAILOVER_MS),
      );
      expect(first).toBeDefined();
      // Two keys overwritten with 64 KiB values: past 1 MiB of log and four times its live bytes
      // the leader compacts on its own, about every 16 puts. A follower's copy is one 16 MiB
      // segment that would never roll here: only the trims (the first seals it, the next takes
      // it) remove it. The puts do not wait for shipping: the leader holds its trims at what its
      // in-sync followers confirmed, so a follower a pass behind is never halted (needs_bootstrap).
      for (let i = 0; i < 60; i++) await cache.put(`k${i % 2}`, `${i}:${blob}`);
      await shipped();
      await waitFor(
        async () => !(await segmentsOf(follower.dataDir)).includes(first!),
        "the follower's first segment to go",
        scaled(FAILOVER_MS),
      );
      expect(text(await cache.get('k1'))).toBe(`59:${blob}`);
    },
    TEST_MS,
  );
});

/** The segment files of the one cache shard's log under a broker's data directory, oldest first
 *  (none while the broker has not created its copy). */
async function segmentsOf(dataDir: string): Promise<string[]> {
  const root = join(dataDir, 'caches');
  const entries = await readdir(root, { withFileTypes: true }).catch((e: NodeJS.ErrnoException) => {
    // Not created yet: the follower holds nothing of the cache log so far.
    if (e.code === 'ENOENT') return [];
    throw e;
  });
  const shards = entries.filter((d) => d.isDirectory());
  if (shards.length === 0) return [];
  if (shards.length !== 1) throw new Error(`${shards.length} cache shard directories`);
  const names = await readdir(join(root, shards[0]!.name));
  return names.filter((n) => n.endsWith('.log')).sort();
}

/**
 * Writes with `write` on the leader of shard 0 of `name`, waits until the leader shipped every
 * log it holds, SIGKILLs it, and answers a client of the promoted follower (closed by the
 * cluster's shutdown).
 */
async function failover(
  c: FelixCluster,
  name: string,
  kind: 'stream' | 'cache',
  write: (onLeader: FelixClient) => Promise<void>,
): Promise<FelixClient> {
  const before = await assignmentOf(c, name, kind);
  const leader = c.nodes.find((n) => n.id === before.leader)!;
  const onLeader = await c.connect({ servers: [leader.url()] });
  try {
    await write(onLeader);
  } finally {
    await onLeader.close();
  }
  // Acks are the leader's own: every log on both followers, and a report naming one caught up.
  await shippedAndReported(c, leader, kind, name, before.generation);
  await c.kill(leader.id);
  const promoted = await waitFor(
    async () => {
      // The control plane may answer nothing useful mid-failover: ask again.
      const a = await assignmentOf(c, name, kind).catch(() => undefined);
      return a && a.leader !== leader.id && a.generation > before.generation ? a : undefined;
    },
    'a follower to be promoted',
    scaled(FAILOVER_MS),
  );
  expect(before.replicas).toContain(promoted.leader);
  const next = await c.connect({ servers: [c.nodes.find((n) => n.id === promoted.leader)!.url()] });
  clients.push(next);
  return next;
}

async function assignmentOf(
  c: FelixCluster,
  name: string,
  kind: 'stream' | 'cache',
): Promise<Assignment> {
  const a = (await c.assignments()).find((x) => x.kind === kind && x.stream === name);
  if (a === undefined) throw new Error(`no assignment of ${kind} ${name}`);
  return a;
}
