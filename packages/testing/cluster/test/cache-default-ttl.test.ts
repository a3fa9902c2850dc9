// Goal: a cache created through the control plane with a default TTL gives that TTL to every put
// that names none, as a cache of the broker's own config file does (docs/caches-and-watches.md),
// and a put that names one keeps its own.
// Method: a real control plane and broker; the cache created with `default_ttl_ms` 600; two puts,
// one without a TTL and one with an hour's; the first must expire, the second must not.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { scaled, startCluster } from '../src/index.js';
import { clusterPerTest, text } from './support.js';

const HOUR_MS = 3_600_000;

describe('a control-plane cache with a default TTL', () => {
  const holder = clusterPerTest();

  it('a_cache_created_with_a_default_ttl_expires_the_values_put_without_one', async () => {
    const c = await startCluster({
      brokers: 1,
      caches: [{ name: 'sessions', shards: 1, defaultTtlMs: 600 }],
    });
    holder.cluster = c;
    const client = await c.connect();
    try {
      const sessions = client.cache('sessions');
      await sessions.put('kept', 'an hour', { ttlMs: HOUR_MS });
      await sessions.put('default', 'the cache default');
      expect(text(await sessions.get('default'))).toBe('the cache default');
      await waitFor(
        async () => (await sessions.get('default')) === undefined,
        'the value put without a TTL to expire',
        scaled(30_000),
      );
      expect(text(await sessions.get('kept'))).toBe('an hour');
    } finally {
      await client.close();
    }
  }, 120_000);
});
