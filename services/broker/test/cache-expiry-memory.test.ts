// Goal: a broker without durable storage removes the expired keys of its in-memory caches on its
// expiry timer, not only when a read meets them, so keys put with a TTL and never read again do
// not stay in memory. Method: a CacheService without a data dir, keys put into two in-memory
// shards with a 1 ms TTL and one key without a TTL, then one CacheExpiry pass once the clock has
// passed the TTL.
import { waitFor } from '@felix/testing-harness';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { CacheService } from '../src/caches/cache-service.js';
import { CacheExpiry } from '../src/caches/expiry.js';
import type { BrokerConfig, CacheConfig } from '../src/config/types.js';

const UTF8 = new TextEncoder();

describe('cache expiry in memory', () => {
  it('an_in_memory_broker_removes_expired_keys_that_nobody_reads', async () => {
    const sessions = { tenant: 't', namespace: 'n', name: 's', shards: 2 } as CacheConfig;
    const config = {
      caches: [sessions],
      durable: { data_dir: null },
      broker: { cache_hot_bytes: 0 },
    } as unknown as BrokerConfig;
    const svc = new CacheService(config);
    try {
      const shards = [svc.memoryCache(sessions, 0)!, svc.memoryCache(sessions, 1)!];
      for (let i = 0; i < 100; i++) shards[i % 2]!.putNow(`s-${i}`, UTF8.encode('v'), { ttlMs: 1 });
      shards[0]!.putNow('kept', UTF8.encode('k'));
      const putAt = Date.now();
      await waitFor(() => Date.now() > putAt + 1, 'the TTL to pass');
      const expiry = new CacheExpiry(svc, () => true, pino({ level: 'silent' }));
      // Before, the pass visited log-backed shards only: every expired key stayed.
      expect(await expiry.pass()).toBe(100);
      expect(shards.map((s) => s.size)).toEqual([1, 0]);
    } finally {
      await svc.close();
    }
  });
});
