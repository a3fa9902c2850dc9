// Goal: a prefix watch that names no shard of a multi-shard cache (docs/caches-and-watches.md,
// "Watching a prefix across shards"): a client routing in a cluster watches every shard, each on
// its own leader, as one iterator whose events name their shard, and a retained one completes
// its state once every shard's current values are in; a client that does not route is refused
// the same typed error by every broker, never left watching nothing.
// Method: 3 real brokers from startCluster, a 3-shard cache whose shards are led by different
// brokers, clients seeded with one broker. Every wait on the watch has a deadline: the watch's
// signal aborts then, which ends it, and the test fails on what it did not see.
import { type FelixClient, InvalidRequestError } from '@felix/client';
import { shardForKey } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest } from './support.js';

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
async function spreadCluster(held: { cluster: FelixCluster | undefined }) {
  const c = await startCluster({
    brokers: 3,
    replication: true,
    caches: [{ name: 'users', shards: SHARDS }],
  });
  held.cluster = c;
  const leaders: string[] = [];
  for (let shard = 0; shard < SHARDS; shard++)
    leaders.push((await c.leaderOf('users', shard, 'cache'))!.id);
  expect(new Set(leaders).size).toBeGreaterThan(1);
  const seed = c.nodes.find((n) => n.id !== leaders[0])!;
  return { c, seed };
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
});
