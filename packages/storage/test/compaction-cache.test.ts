// Goal: cache compaction restates the live set at the tail and drops the rest without changing
// what the cache answers: offsets continue, versions are kept, staged keys are left alone, and
// writers never wait on a pass. Method: LogCache over an in-memory segmented log.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { LogCache } from '../src/cache/log-cache.js';
import { decodeCacheRecord } from '../src/cache/record.js';
import { bytes, text } from './projection-support/cache-fixture.js';
import { openDiskCache, tempDir } from './projection-support/disk.js';
import { MemoryLog } from './projection-support/memory-log.js';

const open = (log: MemoryLog, extra: object = {}) =>
  LogCache.open({ log, compaction: { auto: false, bytesPerSec: 0, ...extra } });

describe('cache compaction', () => {
  it('compaction_does_not_rewind_the_offset_space', async () => {
    const dir = await tempDir('felix-compact-');
    try {
      const { cache, port } = await openDiskCache(dir.path);
      const versions = new Map<string, number>();
      for (let i = 0; i < 400; i++)
        versions.set(`k${i % 8}`, await cache.put(`k${i % 8}`, bytes(`v${i}`)));
      const tailBefore = port.tailOffset;
      const result = await cache.compact();
      expect(result.trimmed).toBe(true);
      expect(port.baseOffset).toBe(tailBefore);
      const next = await cache.put('fresh', bytes('x'));
      expect(next).toBe(tailBefore + 8);
      for (const [k, v] of versions) expect((await cache.getEntry(k))?.version).toBe(v);
      const below = await port.read(0);
      expect(below.kind).toBe('trimmed');
      await cache.close();
      const { cache: again, port: port2 } = await openDiskCache(dir.path);
      expect(port2.baseOffset).toBe(tailBefore);
      for (const [k, v] of versions) expect((await again.getEntry(k))?.version).toBe(v);
      expect(await again.put('later', bytes('y'))).toBe(next + 1);
      await again.close();
    } finally {
      await dir.cleanup();
    }
  });

  it('compaction_reclaims_overwritten_records', async () => {
    const dir = await tempDir('felix-compact-');
    try {
      const { cache, port } = await openDiskCache(dir.path, { segmentBytes: 64 * 1024 });
      const big = new Uint8Array(1000).fill(7);
      for (let i = 0; i < 500; i++) await cache.put(`k${i % 5}`, big);
      await cache.delete('k4');
      const sizeBefore = port.sizeBytes;
      expect(cache.wantsCompaction()).toBe(false); // under the 1 MiB floor
      const result = await cache.compact();
      expect(result.trimmed).toBe(true);
      expect(result.copiedRecords).toBe(4);
      expect(port.sizeBytes).toBeLessThan(sizeBefore / 50);
      for (let i = 0; i < 4; i++) expect((await cache.get(`k${i}`))?.length).toBe(1000);
      expect(await cache.get('k4')).toBeUndefined();
      await cache.close();
      const { cache: again } = await openDiskCache(dir.path, { segmentBytes: 64 * 1024 });
      for (let i = 0; i < 4; i++) expect((await again.get(`k${i}`))?.length).toBe(1000);
      expect(await again.get('k4')).toBeUndefined();
      await again.close();
    } finally {
      await dir.cleanup();
    }
  });

  it('compaction_starts_itself_past_four_times_the_live_bytes', async () => {
    const log = new MemoryLog();
    const cache = await LogCache.open({ log, compaction: { floorBytes: 10_000, bytesPerSec: 0 } });
    const v = new Uint8Array(500);
    let i = 0;
    while (cache.compacting === undefined) await cache.put(`k${i++ % 4}`, v);
    expect(log.sizeBytes).toBeGreaterThan(10_000);
    await cache.compacting;
    expect(log.baseOffset).toBeGreaterThan(0);
    expect(log.sizeBytes).toBeLessThanOrEqual(cache.liveBytes + 4 * 600);
  });

  it('a_projection_does_not_compact_again_while_its_last_cut_waits_on_the_floor', async () => {
    const dir = await tempDir('felix-compact-');
    try {
      let passes = 0;
      const compaction = { auto: true, floorBytes: 8_000, bytesPerSec: 0 };
      const { cache, port } = await openDiskCache(dir.path, {
        compaction: { ...compaction, beforeTrim: async () => void passes++ },
      });
      // A floor at 0 (as a leader holds it for a follower that confirmed nothing yet).
      port.segmentLog.setRetentionFloor(0);
      const v = new Uint8Array(500);
      let i = 0;
      while (passes === 0) await cache.put(`k${i++ % 4}`, v);
      await cache.compacting;
      expect(port.baseOffset).toBe(0);
      expect(port.trimWaiting).toBe(true);
      // Ten times the garbage that started the pass: no pass restates the live keys again.
      for (let n = 0; n < 10 * i; n++) await cache.put(`k${n % 4}`, v);
      await cache.compacting;
      expect(passes).toBe(1);
      // The floor goes: the held cut is trimmed, and compaction runs again as the log grows.
      port.segmentLog.setRetentionFloor(undefined);
      await waitFor(() => !port.trimWaiting, 'the held cut trimmed', 5_000);
      expect(port.baseOffset).toBeGreaterThan(0);
      while (passes === 1) await cache.put(`k${i++ % 4}`, v);
      await cache.compacting;
      expect((await cache.get('k3'))?.length).toBe(500);
      await cache.close();
    } finally {
      await dir.cleanup();
    }
  });

  it('a_key_with_a_write_in_flight_is_not_copied', async () => {
    const log = new MemoryLog();
    const cache = await open(log);
    await cache.put('busy', bytes('old'));
    await cache.put('idle', bytes('i'));
    log.shutGate();
    const staged = cache.put('busy', bytes('new'));
    await waitFor(() => log.stagedCount === 1, 'the write to be staged');
    log.passNewClaims();
    const pass = cache.compact();
    // The copy batch is claimed while the write is staged; then the write's flush completes.
    await waitFor(() => log.tailOffset === 4, 'the copy batch to be claimed');
    log.openGate();
    await staged;
    const result = await pass;
    expect(result.trimmed).toBe(true);
    const res = await log.read(log.baseOffset);
    if (res.kind !== 'records') throw new Error('trimmed');
    const copies = res.records
      .map((r) => decodeCacheRecord(r.payload))
      .filter((r) => r.carriedVersion !== undefined);
    // The first batch skipped the staged key; a later round copied the value the write left.
    expect(copies.map((r) => `${r.key}=${text(r.value)}@${r.carriedVersion}`)).toEqual([
      'idle=i@1',
      'busy=new@2',
    ]);
    expect(text(await cache.get('busy'))).toBe('new');
    expect(text(await cache.get('idle'))).toBe('i');
    await cache.close();
    const again = await open(new MemoryLog(log.store));
    expect(text(await again.get('busy'))).toBe('new');
  });

  it('writes_do_not_wait_on_a_slow_compaction', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    let batches = 0;
    const dir = await tempDir('felix-compact-');
    try {
      const { cache, port } = await openDiskCache(dir.path, {
        fsync: 'onCommit',
        compaction: {
          auto: false,
          bytesPerSec: 0,
          beforeBatch: async () => {
            batches++;
            await held;
          },
        },
      });
      for (let i = 0; i < 100; i++) await cache.put(`k${i}`, bytes(`a${i}`));
      const pass = cache.compact();
      await waitFor(() => batches > 0, 'the pass to reach its first batch');
      // The pass has sealed and is held before copying: writes and reads go on regardless.
      for (let i = 0; i < 100; i++) await cache.put(`k${i}`, bytes(`b${i}`));
      expect(text(await cache.delete('k0'))).toBe('b0');
      expect(text(await cache.get('k1'))).toBe('b1');
      release();
      const result = await pass;
      expect(result.trimmed).toBe(true);
      expect(await cache.get('k0')).toBeUndefined();
      for (let i = 1; i < 100; i++) expect(text(await cache.get(`k${i}`))).toBe(`b${i}`);
      expect(port.baseOffset).toBe(result.cut);
      await cache.close();
    } finally {
      await dir.cleanup();
    }
  });
});

describe('cache compaction shutdown', () => {
  it('closing_a_cache_stops_a_held_compaction_without_losing_a_write', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    let batches = 0;
    const log = new MemoryLog();
    const cache = await open(log, {
      beforeBatch: async () => {
        batches++;
        await held;
      },
    });
    for (let i = 0; i < 200; i++) await cache.put(`k${i % 100}`, bytes(`v${i}`));
    const pass = cache.compact();
    await waitFor(() => batches > 0, 'the pass to reach its first batch');
    const closing = cache.close();
    release();
    await closing;
    const result = await pass;
    expect(result.trimmed).toBe(false);
    expect(batches).toBe(1);
    const again = await open(new MemoryLog(log.store));
    for (let i = 100; i < 200; i++) expect(text(await again.get(`k${i % 100}`))).toBe(`v${i}`);
  });
});
