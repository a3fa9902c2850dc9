// Goal: a broker that comes back at once on an empty data directory (a lost volume) while the
// control plane still names it the leader of replicated shards does not lead them from nothing:
// it waits, unregistered, until they fail over to their followers, then follows them. So a
// consumer group keeps its position and a quorum cache its values and counters
// (services/broker/src/cluster/fresh-storage.ts; docs/operations.md, "Restore"). Before, the
// broker took the stream's records back but its groups started again from the first record,
// and its quorum cache never opened (its compacted logs' tails could not be taken from 0).
// Method: three real brokers with internal listeners, a one-shard stream and a one-shard cache
// at replication factor 3; writes on the shard's leader until every log is shipped and a
// report names a caught-up follower; the leader SIGKILLed, its data directory removed, and the
// broker started again at once; reads through the promoted follower, then the returned broker
// is checked to be following again with a full copy.
import { readFile, rm } from 'node:fs/promises';
import type { FelixClient } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type ClusterNode, type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, heldRecords, served, shippedAndReported, text } from './support.js';

const STEP_MS = 60_000;
const TEST_MS = 180_000;

async function assignmentOf(c: FelixCluster, name: string, kind: 'stream' | 'cache') {
  return (await c.assignments()).find((a) => a.stream === name && a.kind === kind)!;
}

/**
 * Writes with `write` on the leader of `name`, waits until every log is shipped and reported,
 * then SIGKILLs the leader, empties its data directory and starts it again at once. Answers the
 * broker and a client of the follower promoted meanwhile.
 */
async function leaderBackEmpty(
  c: FelixCluster,
  name: string,
  kind: 'stream' | 'cache',
  write: (onLeader: FelixClient) => Promise<void>,
  opts: { killedWhileWaiting?: boolean } = {},
): Promise<{ lost: ClusterNode; next: FelixClient }> {
  const before = await assignmentOf(c, name, kind);
  const lost = c.node(before.leader);
  const onLeader = await c.connect({ servers: [lost.url()] });
  await write(onLeader).finally(() => onLeader.close());
  await shippedAndReported(c, lost, kind, name, before.generation);
  await c.kill(lost.id);
  await rm(lost.dataDir, { recursive: true, force: true });
  await c.start(lost.id);
  if (opts.killedWhileWaiting === true) {
    // Killed again once it waits: its data dir now holds its lock and name files.
    await waitFor(
      async () => (await readFile(lost.logPath, 'utf8')).includes('waits, unregistered'),
      'the broker to wait for its failover',
      scaled(STEP_MS),
    );
    await c.kill(lost.id);
    await c.start(lost.id);
  }
  const promoted = await waitFor(
    async () => {
      // The control plane may answer nothing useful mid-failover: ask again.
      const a = await assignmentOf(c, name, kind).catch(() => undefined);
      return a && a.leader !== lost.id && a.generation > before.generation ? a : undefined;
    },
    'a follower to be promoted',
    scaled(STEP_MS),
  );
  expect(before.replicas).toContain(promoted.leader);
  return { lost, next: await c.connect({ servers: [c.node(promoted.leader).url()] }) };
}

/** Polls and acks the first `n` jobs of group `workers` on `jobs`. */
async function ackJobs(client: FelixClient, n: number): Promise<void> {
  const g = client.group('jobs', 'workers');
  let acked = 0;
  while (acked < n) {
    for (const m of await g.poll({ max: n - acked, waitMs: 5_000 })) {
      await m.ack();
      acked++;
    }
  }
}

describe('a broker back on an empty data directory', () => {
  const holder = clusterPerTest();

  it(
    'a_leader_back_on_an_empty_data_dir_lets_its_followers_lead_and_the_group_keeps_its_position',
    async () => {
      const c = await startCluster({
        brokers: 3,
        replication: true,
        streams: [{ name: 'jobs', shards: 1, replicationFactor: 3 }],
      });
      holder.cluster = c;
      const { lost, next } = await leaderBackEmpty(c, 'jobs', 'stream', async (onLeader) => {
        for (let i = 0; i < 20; i++) await onLeader.publish('jobs', `job-${i}`);
        await ackJobs(onLeader, 12);
      });
      try {
        const g = next.group('jobs', 'workers');
        const info = await served(() => g.describe(), 'the promoted follower to know the group');
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
          scaled(STEP_MS),
        );
        expect(seen).toEqual([12, 13, 14, 15, 16, 17, 18, 19]);
        // The returned broker follows again and copies the whole log from the new leader.
        await waitFor(
          async () => (await heldRecords(lost, 'jobs')).length === 20,
          'the returned broker to hold the whole log again',
          scaled(STEP_MS),
        );
      } finally {
        await next.close();
      }
    },
    TEST_MS,
  );

  it(
    'a_leader_killed_while_it_waits_for_its_failover_waits_again_when_it_restarts',
    async () => {
      const c = await startCluster({
        brokers: 3,
        replication: true,
        streams: [{ name: 'jobs', shards: 1, replicationFactor: 3 }],
      });
      holder.cluster = c;
      const write = async (onLeader: FelixClient) => {
        for (let i = 0; i < 10; i++) await onLeader.publish('jobs', `job-${i}`);
        await ackJobs(onLeader, 6);
      };
      const { next } = await leaderBackEmpty(c, 'jobs', 'stream', write, {
        killedWhileWaiting: true,
      });
      try {
        const g = next.group('jobs', 'workers');
        const info = await served(() => g.describe(), 'the promoted follower to know the group');
        expect(info.committed).toBe(6);
      } finally {
        await next.close();
      }
    },
    TEST_MS,
  );

  it(
    'a_quorum_cache_leader_back_on_an_empty_data_dir_lets_its_followers_serve_its_values',
    async () => {
      const c = await startCluster({
        brokers: 3,
        replication: true,
        caches: [{ name: 'users', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
      });
      holder.cluster = c;
      const { next } = await leaderBackEmpty(c, 'users', 'cache', async (onLeader) => {
        for (let i = 0; i < 30; i++) await onLeader.cache('users').put(`u${i % 3}`, `v${i}`);
        expect(await onLeader.counter('users').add('hits', 40n)).toBe(40n);
      });
      try {
        const got = await served(() => next.cache('users').get('u2'), 'the cache to be served');
        expect(text(got)).toBe('v29');
        expect(await next.counter('users').get('hits')).toBe(40n);
        expect(await next.counter('users').add('hits', 2n)).toBe(42n);
      } finally {
        await next.close();
      }
    },
    TEST_MS,
  );
});
