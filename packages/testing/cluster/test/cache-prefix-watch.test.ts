// Goal: a prefix watch that names no shard of a multi-shard cache (docs/caches-and-watches.md,
// "Watching a prefix across shards"): a client routing in a cluster watches every shard, each on
// its own leader, as one iterator whose events name their shard, and a retained one completes
// its state once every shard's current values are in; a client that does not route is refused
// the same typed error by every broker, never left watching nothing.
// Method: 3 real brokers from startCluster, a 3-shard cache whose shards are led by different
// brokers, clients seeded with one broker. Every wait on the watch has a deadline: the watch's
// signal aborts then, which ends it, and the test fails on what it did not see.
import { type FelixClient, InvalidRequestError } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { shardForKey } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, metricOf } from './support.js';

const SHARDS = 3;
const STEP_MS = 60_000;
const UTF8 = new TextEncoder();
const TEXT = new TextDecoder();

const shardOf = (key: string) => shardForKey(UTF8.encode(key), SHARDS, 'modulo');

/** `n` keys under `p`, spread over every shard (at least one each). */
function keysOverShards(prefix: string, n: number): string[] {
  const keys: string[] = [];
  const hit = new Set<number>();
  for (let i = 0; keys.length < n || hit.size < SHARDS; i++) {
    const key = `${prefix}${i}`;
    if (keys.length >= n && hit.has(shardOf(key))) continue;
    keys.push(key);
    hit.add(shardOf(key));
  }
  return keys;
}

/** A cluster whose cache `users` has its shards led by more than one broker, and the id of a
 *  broker that does not lead shard 0 (the shard a watch without one was taken for). */
async function spreadCluster(held: { cluster: FelixCluster | undefined }, replicationFactor = 1) {
  const c = await startCluster({
    brokers: 3,
    replication: true,
    caches: [{ name: 'users', shards: SHARDS, replicationFactor }],
  });
  held.cluster = c;
  const leaders: string[] = [];
  for (let shard = 0; shard < SHARDS; shard++)
    leaders.push((await c.leaderOf('users', shard, 'cache'))!.id);
  expect(new Set(leaders).size).toBeGreaterThan(1);
  const seed = c.nodes.find((n) => n.id !== leaders[0])!;
  return { c, seed };
}

/** Whether the control plane holds a replica report of every shard of the cache naming every
 *  follower caught up (only such a follower may be promoted). */
async function cacheReportsCaughtUp(c: FelixCluster): Promise<boolean> {
  const page = (await c.operatorGet('/v1/replica-reports')) as {
    items: Array<{
      kind: string;
      leader_offset: number;
      replica_offsets: Array<{ durable_offset: number }>;
    }>;
  };
  const reports = page.items.filter((x) => x.kind === 'cache');
  return (
    reports.length >= SHARDS &&
    reports.every((r) => r.replica_offsets.every((o) => o.durable_offset >= r.leader_offset))
  );
}

describe('a prefix watch across the shards of a cache', () => {
  const held = clusterPerTest();

  it('a_prefix_watch_on_a_multi_shard_cache_sees_puts_to_every_shard', async () => {
    const { c, seed } = await spreadCluster(held);
    const client: FelixClient = await c.connect({ servers: [seed.url()] });
    try {
      const cache = client.cache('users');
      const signal = AbortSignal.timeout(scaled(STEP_MS));
      const seen = new Map<string, { value: string; shard: number | undefined }>();
      const keys = keysOverShards('p', 12);
      let completed = false;
      for await (const ev of cache.watch({ prefix: 'p' }, { retained: true, signal })) {
        if (ev.type === 'state_complete') {
          completed = true;
          // Every shard watches now: the puts that follow are all live changes.
          for (const key of keys) await cache.put(key, `v-${key}`);
        }
        if (ev.type === 'put') seen.set(ev.key, { value: TEXT.decode(ev.value), shard: ev.shard });
        if (seen.size === keys.length) break;
      }
      expect(completed).toBe(true);
      expect([...seen.keys()].sort()).toEqual([...keys].sort());
      for (const key of keys)
        expect(seen.get(key)).toEqual({ value: `v-${key}`, shard: shardOf(key) });
    } finally {
      await client.close();
    }
  }, 180_000);

  it('a_prefix_watch_across_shards_completes_its_state_after_every_shards_retained_values', async () => {
    const { c, seed } = await spreadCluster(held);
    const client: FelixClient = await c.connect({ servers: [seed.url()] });
    try {
      const cache = client.cache('users');
      const keys = keysOverShards('r', 9);
      for (const key of keys) await cache.put(key, `v-${key}`);
      const signal = AbortSignal.timeout(scaled(STEP_MS));
      const before: string[] = [];
      let complete: { retainedCount: number; resumeOffsets?: number[]; shard?: number } | undefined;
      let live: { key: string; shard: number | undefined } | undefined;
      for await (const ev of cache.watch({ prefix: 'r' }, { retained: true, signal })) {
        if (ev.type === 'put' && complete === undefined) before.push(ev.key);
        else if (ev.type === 'state_complete') {
          expect(complete).toBeUndefined(); // one for the span, not one per shard
          complete = ev;
          await cache.put('r-live', 'after');
        } else if (ev.type === 'put') {
          live = { key: ev.key, shard: ev.shard };
          break;
        }
      }
      expect(before.sort()).toEqual([...keys].sort());
      expect(complete?.retainedCount).toBe(keys.length);
      expect(complete?.shard).toBeUndefined();
      expect(complete?.resumeOffsets).toHaveLength(SHARDS);
      expect(live).toEqual({ key: 'r-live', shard: shardOf('r-live') });
    } finally {
      await client.close();
    }
  }, 180_000);

  it('a_prefix_watch_naming_no_shard_from_a_client_that_does_not_route_is_refused_by_every_broker', async () => {
    const { c } = await spreadCluster(held);
    for (const node of c.nodes) {
      const client = await c.connect({ servers: [node.url()], routing: false });
      try {
        const signal = AbortSignal.timeout(scaled(STEP_MS));
        const watch = client.cache('users').watch({ prefix: 'p' }, { signal });
        // Before, a broker not leading shard 0 answered `not_leader`, retried for ever: the
        // watch ended only at this deadline, having seen nothing.
        await expect(watch[Symbol.asyncIterator]().next(), node.id).rejects.toBeInstanceOf(
          InvalidRequestError,
        );
      } finally {
        await client.close();
      }
    }
  }, 240_000);

  it('a_prefix_watch_across_shards_follows_one_shards_failover_and_sees_each_put_once', async () => {
    const { c, seed } = await spreadCluster(held, 3);
    const before = (await c.assignments()).filter((a) => a.kind === 'cache');
    const victim = before.find((a) => a.leader !== seed.id)!.leader;
    const moved = before.filter((a) => a.leader === victim);
    const watcher = await c.connect({
      servers: [seed.url()],
      failoverDeadlineMs: scaled(STEP_MS * 2),
    });
    const writer = await c.connect({ servers: [seed.url()] });
    const signal = AbortSignal.timeout(scaled(STEP_MS * 4));
    const puts: string[] = [];
    let completed = false;
    let ended: unknown;
    const watch = watcher.cache('users').watch({ prefix: 'f' }, { retained: true, signal });
    const watching = (async () => {
      for await (const ev of watch) {
        if (ev.type === 'state_complete') completed = true;
        if (ev.type === 'put') puts.push(`${ev.key}@${ev.shard}`);
      }
    })().catch((err: unknown) => {
      ended = err;
    });
    const watched = (n: number) => () => {
      if (ended !== undefined) throw ended;
      return puts.length >= n;
    };
    // Each half has a key of every shard: the failed-over shard gets puts after its failover too.
    const first = keysOverShards('fa', 6);
    const keys = [...first, ...keysOverShards('fb', 6)];
    try {
      await waitFor(() => completed, 'every shard watched', scaled(STEP_MS));
      for (const key of first) await writer.cache('users').put(key, 'v');
      await waitFor(watched(first.length), 'the first puts watched', scaled(STEP_MS));
      await waitFor(
        async () => (await metricOf(c.node(victim), 'felix_broker_replication_lag_records')) === 0,
        'the followers to confirm every log',
        scaled(STEP_MS),
      );
      // A cache shard goes only to a follower its leader's last report names holding it all.
      await waitFor(
        async () => await cacheReportsCaughtUp(c),
        'caught-up reports',
        scaled(STEP_MS),
      );
      await c.kill(victim);
      await waitFor(
        async () => {
          const now = (await c.assignments()).filter((a) => a.kind === 'cache');
          return moved.every((m) => {
            const a = now.find((x) => x.shard === m.shard);
            return a !== undefined && a.leader !== victim && a.generation > m.generation;
          });
        },
        "the killed broker's shards promoted",
        scaled(STEP_MS),
      );
      // A routed put retries a failover's refusals within its request timeout: repeated until taken.
      for (const key of keys.slice(first.length))
        await waitFor(
          async () =>
            (await writer
              .cache('users')
              .put(key, 'v')
              .then(() => true)) === true,
          `put ${key} after the failover`,
          scaled(STEP_MS),
        );
      await waitFor(watched(keys.length), 'every put watched', scaled(STEP_MS * 2));
    } finally {
      await writer.close();
      await watcher.close();
      await watching;
    }
    // Each put once, from its own shard: the failed-over shard's watch resumed where it was.
    expect([...puts].sort()).toEqual(keys.map((k) => `${k}@${shardOf(k)}`).sort());
  }, 300_000);
});
