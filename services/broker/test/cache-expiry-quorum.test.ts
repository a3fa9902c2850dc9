// Goal: the expiry pass is not held up by a quorum cache shard whose followers do not answer:
// it moves on after the quorum timeout and expires the keys of every other shard it leads, and
// the stuck shard's deletes still apply once its mark covers them.
// Method: a CacheService on a scratch data dir with two caches, an expiring key in each, the
// first one's cache log put under a commit wait (as a quorum shard's leader does) that the test
// moves by hand; one CacheExpiry pass, awaited with a deadline.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LogCache } from '@felix/storage';
import { waitFor } from '@felix/testing-harness';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { CacheService } from '../src/caches/cache-service.js';
import { CacheExpiry } from '../src/caches/expiry.js';
import type { BrokerConfig, CacheConfig } from '../src/config/types.js';

const UTF8 = new TextEncoder();
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('cache expiry beside a quorum shard', () => {
  it('an_expiry_pass_moves_past_a_quorum_shard_without_a_majority_and_expires_the_others', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'felix-expiry-quorum-'));
    dirs.push(dir);
    const stuck = { tenant: 't', namespace: 'n', name: 'a', shards: 1 } as CacheConfig;
    const free = { tenant: 't', namespace: 'n', name: 'b', shards: 1 } as CacheConfig;
    const config = {
      caches: [stuck, free],
      durable: { data_dir: dir },
      broker: { cache_hot_bytes: 0 },
    } as unknown as BrokerConfig;
    const svc = new CacheService(config);
    try {
      for (const c of [stuck, free])
        await (await svc.cache(c, 0)).put('k', UTF8.encode('v'), { ttlMs: 1 });
      const id = { tenant: 't', namespace: 'n', stream: 'a', shard: 0 };
      const waits = svc.holdToCommit('cache', id, 50)!;
      await waitFor(
        async () => (await svc.cache(free, 0)).get('k').then((v) => v === undefined),
        'the keys to expire',
        5_000,
      );
      const expiry = new CacheExpiry(svc, () => true, pino({ level: 'silent' }));
      const deleted = await Promise.race([
        expiry.pass(),
        new Promise<string>((r) => setTimeout(() => r('stuck'), 5_000).unref()),
      ]);
      // The stuck shard's delete timed out (not counted); the other shard's was applied.
      expect(deleted).toBe(1);
      const freeLog = (await svc.cache(free, 0)) as LogCache;
      expect(freeLog.frontier).toBe(2);
      const stuckLog = (await svc.cache(stuck, 0)) as LogCache;
      expect(stuckLog.frontier).toBe(1);
      waits.advance(2);
      await waitFor(() => stuckLog.frontier === 2, 'the stuck delete to apply on the mark', 5_000);
    } finally {
      await svc.close();
    }
  });
});
