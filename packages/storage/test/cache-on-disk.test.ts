// Goal: LogCache over the real segment log keeps what it acknowledged across restarts, catches
// its index up with records appended to the log behind it, lets the later write win, and keeps
// expiries absolute; a cache never shares a directory with a stream of the same name.
// Method: SegmentLog-backed caches in temp directories, closed and reopened.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@felix/testing-harness';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cacheShards, counterShards } from '../src/cache/projection-store.js';
import { encodeCacheRecord } from '../src/cache/record.js';
import { LogCache } from '../src/cache/log-cache.js';
import { SegmentLogPort } from '../src/compaction/segment-log-port.js';
import { LogPoisonedError, ProjectionReleasedError } from '../src/errors.js';
import { FaultyIo } from '../src/io/faulty-io.js';
import { nodeIo } from '../src/io/node-io.js';
import { SegmentLog } from '../src/log/segment-log.js';
import { shardDirName } from '../src/log/layout.js';
import { ManualClock, bytes, text } from './projection-support/cache-fixture.js';
import { SHARD, openDiskCache, tempDir } from './projection-support/disk.js';

let dir: { path: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  dir = await tempDir('felix-cache-');
});
afterEach(async () => {
  await dir.cleanup();
});

describe('LogCache on disk', () => {
  it('a_cache_survives_a_restart', async () => {
    const { cache } = await openDiskCache(dir.path, { fsync: 'onCommit' });
    const versions: number[] = [];
    for (let i = 0; i < 200; i++) versions.push(await cache.put(`k${i}`, bytes(`v${i}`)));
    await cache.close();
    const { cache: again, port } = await openDiskCache(dir.path, { fsync: 'onCommit' });
    expect(port.segmentLog.segmentCount).toBeGreaterThan(1);
    for (let i = 0; i < 200; i++) {
      const e = await again.getEntry(`k${i}`);
      expect(text(e?.value)).toBe(`v${i}`);
      expect(e?.version).toBe(versions[i]);
    }
    await again.close();
  });

  it('a_later_write_wins', async () => {
    const { cache } = await openDiskCache(dir.path, { fsync: 'onCommit' });
    await Promise.all([...Array(16).keys()].map((i) => cache.put('k', bytes(`w${i}`))));
    expect(text(await cache.get('k'))).toBe('w15');
    await cache.close();
    const { cache: again } = await openDiskCache(dir.path);
    expect(text(await again.get('k'))).toBe('w15');
    await again.close();
  });

  it('a_deleted_key_stays_deleted_across_a_restart', async () => {
    const { cache } = await openDiskCache(dir.path);
    await cache.put('gone', bytes('1'));
    await cache.put('kept', bytes('2'));
    expect(text(await cache.delete('gone'))).toBe('1');
    await cache.close();
    const { cache: again } = await openDiskCache(dir.path);
    expect(await again.get('gone')).toBeUndefined();
    expect(text(await again.get('kept'))).toBe('2');
    await again.close();
  });

  it('an_expiry_survives_a_restart', async () => {
    const clock = new ManualClock();
    const { cache } = await openDiskCache(dir.path, { now: clock.now });
    await cache.put('short', bytes('s'), { ttlMs: 1000 });
    await cache.put('forever', bytes('f'));
    await cache.close();
    clock.advance(999);
    const { cache: again } = await openDiskCache(dir.path, { now: clock.now });
    expect(text(await again.get('short'))).toBe('s');
    clock.advance(1);
    expect(await again.get('short')).toBeUndefined();
    expect(text(await again.get('forever'))).toBe('f');
    await again.close();
  });

  it('the_index_catches_up_with_records_appended_behind_it', async () => {
    const { cache, port } = await openDiskCache(dir.path);
    await cache.put('local', bytes('1'));
    // As replication would: records appended to the log without going through put.
    await port.segmentLog.append([
      encodeCacheRecord({ op: 'put', key: 'replicated', expiresAtMillis: 0, value: bytes('r') }),
      encodeCacheRecord({
        op: 'delete',
        key: 'local',
        expiresAtMillis: 0,
        value: new Uint8Array(),
      }),
    ]);
    expect(text(await cache.get('replicated'))).toBe('r');
    expect(await cache.get('local')).toBeUndefined();
    // Appended while a put is racing it: the put applies them first, in offset order.
    const behind = port.segmentLog.append([
      encodeCacheRecord({ op: 'put', key: 'more', expiresAtMillis: 0, value: bytes('m') }),
    ]);
    const v = await cache.put('after', bytes('a'));
    await behind;
    expect(v).toBe(4);
    expect(text(await cache.get('more'))).toBe('m');
    expect(text(await cache.get('after'))).toBe('a');
    await cache.close();
  });

  it('a_get_on_a_poisoned_periodic_cache_fails_with_the_poison_not_corruption', async () => {
    const io = new FaultyIo(nodeIo);
    const port = await SegmentLogPort.open({
      root: dir.path,
      shard: SHARD,
      fsync: 'periodic',
      flushIntervalMs: 60_000,
      io,
    });
    // A commit gate (a quorum's) that a test can hold shut for the writes made from then on.
    let gate: Promise<void> | undefined;
    let gated = 0;
    const commitGate = () => {
      if (gate !== undefined) gated++;
      return gate;
    };
    const cache = await LogCache.open({ log: port, compaction: { auto: false }, commitGate });
    await cache.put('durable', bytes('d'));
    await cache.put('gone', bytes('g'));
    await port.flush();
    // Acknowledged under `periodic`, not yet durable when the flush that would cover it fails.
    await cache.put('k', bytes('v1'));
    await cache.put('gone', bytes('g2'));
    // A delete written before the poison, reading the value it removes after it.
    let openGate!: () => void;
    gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const deleting = cache.delete('gone');
    await waitFor(() => gated === 1, 'the delete to wait on its commit gate', 5_000);
    gate = undefined;
    io.failDatasyncs('EIO');
    await expect(port.flush()).rejects.toBeInstanceOf(LogPoisonedError);
    expect(port.segmentLog.poisoned).toBe(true);
    openGate();
    await expect(deleting).rejects.toBeInstanceOf(LogPoisonedError);
    await expect(cache.get('k')).rejects.toBeInstanceOf(LogPoisonedError);
    await expect(cache.delete('k')).rejects.toBeInstanceOf(LogPoisonedError);
    // What was durable before the poison still reads.
    expect(text(await cache.get('durable'))).toBe('d');
    await expect(cache.close()).rejects.toBeInstanceOf(LogPoisonedError);
  });

  it('a_cache_and_a_stream_with_one_name_never_share_a_directory', async () => {
    const stream = await SegmentLog.open({ root: dir.path, shard: SHARD, fsync: 'none' });
    const { cache, port } = await openDiskCache(dir.path);
    await stream.append([bytes('a stream record')]);
    await cache.put('k', bytes('v'));
    expect(port.dir).not.toBe(stream.dir);
    expect(port.dir).toBe(join(dir.path, 'caches', shardDirName(SHARD)));
    expect(stream.dir).toBe(join(dir.path, shardDirName(SHARD)));
    const res = await stream.read(0);
    expect(res.kind === 'records' && res.records.map((r) => text(r.payload))).toEqual([
      'a stream record',
    ]);
    expect(text(await cache.get('k'))).toBe('v');
    expect((await readdir(dir.path)).sort()).toEqual([
      'acme_default_orders_0-0d3aed4b998d2798',
      'caches',
    ]);
    await stream.close();
    await cache.close();
  });
});

describe('projection roots', () => {
  it('a_counter_and_a_cache_with_one_key_are_unrelated', async () => {
    const caches = cacheShards({ root: dir.path, fsync: 'none' });
    const counters = counterShards({ root: dir.path, fsync: 'none' });
    const cache = await caches.get(SHARD);
    const counter = await counters.get(SHARD);
    await cache.put('k', bytes('a value'));
    expect(await counter.add('k', 5n)).toBe(5n);
    expect(text(await cache.get('k'))).toBe('a value');
    expect(await counter.get('k')).toBe(5n);
    expect((await readdir(dir.path)).sort()).toEqual(['caches', 'counters']);
    await caches.close();
    await counters.close();
    const again = await cacheShards({ root: dir.path }).get(SHARD);
    expect(text(await again.get('k'))).toBe('a value');
    await again.close();
  });

  it('a_released_projection_shard_reopens_with_what_its_log_gained_meanwhile', async () => {
    // A leader demoted to follower releases its cache shard; the replica then appends to the
    // same log; admitted again (promoted), the cache opens by replay and serves what the
    // replica wrote.
    const caches = cacheShards({ root: dir.path, fsync: 'none' });
    const cache = await caches.get(SHARD);
    await cache.put('k', bytes('before'));
    const log = await caches.log(SHARD);
    expect(log.dir).toBe(join(dir.path, 'caches', shardDirName(SHARD)));
    await caches.release(SHARD);
    const behind = await SegmentLog.open({ root: join(dir.path, 'caches'), shard: SHARD });
    const record = encodeCacheRecord({
      op: 'put',
      key: 'k',
      expiresAtMillis: 0,
      value: bytes('after'),
    });
    await behind.append([record]);
    // Released: nothing reopens it (a request in flight would take the lock from the replica).
    await expect(caches.get(SHARD)).rejects.toBeInstanceOf(ProjectionReleasedError);
    await behind.close();
    caches.admit(SHARD);
    const again = await caches.get(SHARD);
    expect(again).not.toBe(cache);
    expect(text(await again.get('k'))).toBe('after');
    await caches.close();
  });
});
