// Goal: a cache shard's failover and hand-off follow the same rules as a durable stream's
// (docs/replication.md, "Replica reports and promotion", "Hand-off on SIGTERM"): its leader
// reports its cache log's replicas, so a SIGKILLed leader's shard goes only to a follower holding
// every write the leader acknowledged (never to one that lacks them: the shard then waits for its
// leader, and no emptier cache comes back), and a leader stopping with SIGTERM ships until a
// follower holds every log, then hands the shard to it.
// Method: 3 real brokers with internal listeners, a 1-shard cache at replication factor 3.
// Promotion: one value shipped everywhere, both followers paused (SIGSTOP), a second value
// acknowledged by the leader alone, its report showing it ahead of both, SIGKILL of the leader,
// the followers resumed: the control plane counts the shard unplaced (not handed to a follower),
// and once the leader is started again it serves the second value. Hand-off: both followers'
// fsyncs slowed so they trail the leader, 40 values put, SIGTERM at once: the shard moves to a
// follower that serves all 40.
import type { FelixClient } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { type Assignment, type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, gauge, served, text } from './support.js';

const STEP_MS = 60_000;
const TEST_MS = 180_000;
/** Follower fsyncs slowed this much trail a leader putting as fast as it acks. */
const SLOW_FSYNC_MS = 150;
const VALUES = 40;

const clients: FelixClient[] = [];

interface StoredReport {
  kind: string;
  stream: string;
  generation: number;
  leader_offset: number;
  replica_offsets: { node_id: string; durable_offset: number }[];
}

describe('cache shard failover and hand-off', () => {
  const held = clusterPerTest();
  afterEach(async () => {
    // A client of a killed broker may fail to close: the test's verdict is already in.
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  });

  async function cluster(): Promise<FelixCluster> {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      caches: [{ name: 'sessions', shards: 1, replicationFactor: 3 }],
    });
    held.cluster = c;
    return c;
  }

  async function connectTo(c: FelixCluster, nodeId: string): Promise<FelixClient> {
    const node = c.nodes.find((n) => n.id === nodeId)!;
    const client = await c.connect({ servers: [node.url()] });
    clients.push(client);
    return client;
  }

  it(
    'a_cache_shard_is_never_promoted_to_followers_missing_acknowledged_writes',
    async () => {
      const c = await cluster();
      const before = await cacheAssignment(c);
      const followers = before.replicas.filter((id) => id !== before.leader);
      const onLeader = await connectTo(c, before.leader);
      const cache = onLeader.cache('sessions');
      await cache.put('k', 'shipped');
      await reported(c, before, (r) =>
        r.replica_offsets.every((o) => o.durable_offset >= r.leader_offset),
      );
      const shippedAt = (await report(c, before))!.leader_offset;
      for (const f of followers) await c.pause(f);
      await cache.put('k', 'leader only');
      // The leader reports on: its log is now ahead of both (paused) followers.
      await reported(c, before, (r) => r.leader_offset > shippedAt);
      await c.kill(before.leader);
      for (const f of followers) await c.resume(f);
      await waitFor(
        async () => (await unplacedShards(c)) >= 1,
        'the control plane to leave the cache shard unplaced',
        scaled(STEP_MS),
      );
      expect((await cacheAssignment(c)).leader).toBe(before.leader);
      await c.start(before.leader);
      const back = await connectTo(c, before.leader);
      const got = await served(
        () => back.cache('sessions').get('k'),
        'the returned leader to serve',
      );
      expect(text(got)).toBe('leader only');
    },
    TEST_MS,
  );

  it(
    'a_cache_leader_stopped_with_sigterm_hands_every_acknowledged_write_to_its_successor',
    async () => {
      const c = await cluster();
      const before = await cacheAssignment(c);
      const followers = before.replicas.filter((id) => id !== before.leader);
      const onLeader = await connectTo(c, before.leader);
      await onLeader.cache('sessions').put('warm', 'up');
      await reported(c, before, () => true);
      for (const f of followers) await c.slowFsync(f, SLOW_FSYNC_MS);
      const cache = onLeader.cache('sessions');
      for (let i = 0; i < VALUES; i++) await cache.put(`v${i}`, `value ${i}`);
      await c.stop(before.leader);
      const after = await waitFor(
        async () => {
          // The control plane may answer nothing useful mid-move: ask again.
          const a = await cacheAssignment(c).catch(() => undefined);
          return a && a.leader !== before.leader ? a : undefined;
        },
        'the cache shard to move to a follower',
        scaled(STEP_MS),
      );
      expect(followers).toContain(after.leader);
      for (const f of followers) await c.healFsync(f);
      const next = (await connectTo(c, after.leader)).cache('sessions');
      await served(() => next.get('warm'), 'the successor to serve');
      for (let i = 0; i < VALUES; i++)
        expect(text(await next.get(`v${i}`)), `v${i}`).toBe(`value ${i}`);
    },
    TEST_MS,
  );
});

async function cacheAssignment(c: FelixCluster): Promise<Assignment> {
  const a = (await c.assignments()).find((x) => x.kind === 'cache' && x.stream === 'sessions');
  if (a === undefined) throw new Error('no assignment of cache sessions');
  return a;
}

async function report(c: FelixCluster, a: Assignment): Promise<StoredReport | undefined> {
  const page = (await c.operatorGet('/v1/replica-reports')) as { items: StoredReport[] };
  return page.items.find(
    (r) => r.kind === 'cache' && r.stream === 'sessions' && r.generation === a.generation,
  );
}

/** Waits until the control plane holds a report of the cache shard at `a`'s generation that
 *  satisfies `ok`. */
async function reported(
  c: FelixCluster,
  a: Assignment,
  ok: (r: StoredReport) => boolean,
): Promise<void> {
  await waitFor(
    async () => {
      const r = await report(c, a);
      return r !== undefined && ok(r);
    },
    'a replica report of the cache shard',
    scaled(STEP_MS),
  );
}

async function unplacedShards(c: FelixCluster): Promise<number> {
  const page = await (await fetch(`${c.controlPlaneUrl}/metrics`)).text();
  return gauge(page, 'felix_controlplane_unplaced_shards');
}
