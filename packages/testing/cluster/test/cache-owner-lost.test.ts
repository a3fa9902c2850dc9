// Goal: the README's path from one broker to a cluster loses no cache value silently. A broker
// with a data dir but no internal listener (so it never sends a replica report) holds a one-copy
// cache; it stops with SIGTERM and three new brokers join. The cache shard must not reopen empty
// on one of them: a get is refused with a typed error while its owner is away, and once the owner
// returns it serves the value and the counter it held (docs/control-plane.md, "Placement").
// Method: a real control plane and one real broker from startCluster (no `replication`, as the
// README starts it), a put with a 1 h TTL and a counter add of 40, SIGTERM, three brokers started
// beside it (each with its own data dir and internal listener), a wait until placement has
// judged the shard (its lease over), a get and an add through a new broker, then the owner
// restarted.
import { ShardUnavailableError } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { scaled, startCluster } from '../src/index.js';
import { clusterPerTest } from './support.js';

const STEP_MS = 60_000;
const TEST_MS = 240_000;
const HOUR_MS = 3_600_000;

describe('a one-copy cache whose owner leaves', () => {
  const held = clusterPerTest();

  it(
    'a_one_copy_cache_of_a_broker_that_never_reported_is_refused_not_emptied_when_brokers_join',
    async () => {
      const c = await startCluster({ brokers: 1, caches: [{ name: 'users', shards: 1 }] });
      held.cluster = c;
      const owner = c.node(0);
      const writer = await c.connect({ servers: [owner.url()] });
      try {
        await writer.cache('users').put('u1', 'alice', { ttlMs: HOUR_MS });
        expect(await writer.counter('users').add('page:/', 40n)).toBe(40n);
      } finally {
        await writer.close();
      }
      const before = (await c.assignments()).find((a) => a.kind === 'cache')!;
      await c.stop(owner.id);
      const joined = [];
      for (let i = 0; i < 3; i++)
        joined.push(await c.startOutsider({ FELIX_INTERNAL_ALLOW_UNAUTHENTICATED: 'true' }));
      // Placement judges the shard once the owner's lease is over: it is either left unplaced
      // (right) or handed to a new broker (the loss this test guards against).
      await waitFor(
        async () => {
          const now = (await c.assignments()).find((a) => a.kind === 'cache');
          if (now && now.leader !== owner.id) return true;
          const plan = (await c.operatorGet('/v1/placement/plan')) as {
            items: { kind: string; action: string }[];
          };
          return plan.items.some((i) => i.kind === 'cache' && i.action === 'unplaceable');
        },
        'placement to judge the cache shard of the departed owner',
        scaled(STEP_MS),
      );
      expect((await c.assignments()).find((a) => a.kind === 'cache')).toEqual(before);
      const reader = await c.connect({ servers: [joined[0]!.url()] });
      try {
        const got = await reader
          .cache('users')
          .get('u1')
          .then(
            (v) => ({ value: v }),
            (err: unknown) => ({ err }),
          );
        // A typed refusal naming why, not a redirect to a broker that is gone (nor `undefined`).
        expect(got).toMatchObject({ err: expect.any(ShardUnavailableError) });
        expect(String((got as { err: Error }).err.message)).toContain('leader_not_live');
        const add = await reader
          .counter('users')
          .add('page:/', 1n)
          .then(
            (v) => ({ value: v }),
            (err: unknown) => ({ err }),
          );
        expect(add).toMatchObject({ err: expect.any(ShardUnavailableError) });
      } finally {
        await reader.close();
      }
      // The owner returns with its data dir: it leads again and serves what it held.
      await c.start(owner.id);
      await c.waitServed();
      const back = await c.connect({ servers: [owner.url()] });
      try {
        const v = await back.cache('users').get('u1');
        expect(v === undefined ? undefined : new TextDecoder().decode(v)).toBe('alice');
        expect(await back.counter('users').get('page:/')).toBe(40n);
      } finally {
        await back.close();
      }
    },
    TEST_MS,
  );
});
