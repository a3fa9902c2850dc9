// Cache and counter benchmark (storage projections). Side by side in one run:
//  - put under onCommit with 1, 8 and 64 concurrent writers, next to raw SegmentLog.append with
//    the same writers and payloads (the stream log's group commit the cache must keep up with);
//  - get latency p50/p99 over N keys (default 1M), next to EphemeralCache (a plain in-memory map);
//  - index rebuild time for those N keys (LogCache.open replaying the log);
//  - compaction throughput (one overwrite of every key, then a pass with no pacing);
//  - counter add throughput under onCommit (1 and 64 writers) and with fsync none.
// Run: npx pnpm@10.34.9 exec tsx scripts/bench/cache/main.ts [--keys 1000000] [--seconds 2]
// Imports @felix/storage's public entry (its dist): a src/ newer than the build stops the run.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CounterLog,
  EphemeralCache,
  LogCache,
  SegmentLog,
  SegmentLogPort,
  projectionRoot,
} from '@felix/storage';
import {
  argValue,
  assertFreshBuild,
  markdownTable,
  opsPerSecond,
  percentile,
} from '@felix/testing-bench-kit';

assertFreshBuild(import.meta.resolve('@felix/storage'));

const arg = (name: string, def: number) => Number(argValue(name, String(def)));
const KEYS = arg('--keys', 1_000_000);
const SECONDS = arg('--seconds', 2);
const VALUE_BYTES = 100;
const SHARD = { tenant: 'bench', namespace: 'default', stream: 'cache', shard: 0 };
const value = new Uint8Array(VALUE_BYTES).fill(42);
const noCompaction = { auto: false, bytesPerSec: 0 };

async function scratch(): Promise<{ path: string; done: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'felix-bench-cache-'));
  return { path, done: () => rm(path, { recursive: true, force: true }) };
}

/** Runs `writers` loops of `op` for SECONDS; answers completed ops per second. */
const rate = (writers: number, op: (w: number, i: number) => Promise<unknown>) =>
  opsPerSecond(writers, SECONDS, op);

async function putScaling(): Promise<void> {
  console.log('\n### put under onCommit (100-byte values)\n');
  const rows: string[][] = [];
  let single = 0;
  for (const writers of [1, 8, 64]) {
    const dir = await scratch();
    const port = await SegmentLogPort.open({
      root: projectionRoot(dir.path, 'caches'),
      shard: SHARD,
      fsync: 'onCommit',
    });
    const cache = await LogCache.open({ log: port, compaction: noCompaction });
    const flushesBefore = port.segmentLog.flushCount;
    let puts = 0;
    const putRate = await rate(writers, async (w, i) => {
      await cache.put(`w${w}-${i % 1000}`, value);
      puts++;
    });
    const perFlush = puts / Math.max(1, port.segmentLog.flushCount - flushesBefore);
    await cache.close();
    const stream = await SegmentLog.open({ root: dir.path, shard: SHARD, fsync: 'onCommit' });
    const appendRate = await rate(writers, () => stream.append([value]));
    await stream.close();
    await dir.done();
    if (writers === 1) single = putRate;
    rows.push([
      String(writers),
      putRate.toFixed(0),
      perFlush.toFixed(1),
      appendRate.toFixed(0),
      `${(putRate / single).toFixed(1)}x`,
    ]);
  }
  const right = (title: string) => ({ title, align: 'right' as const });
  console.log(
    markdownTable(
      [
        right('writers'),
        right('LogCache put/s'),
        right('records per fsync'),
        right('SegmentLog.append/s (1 record)'),
        right('ratio to 1 writer'),
      ],
      rows,
    ),
  );
}

async function fill(cache: LogCache, keys: number): Promise<void> {
  const batch = 256;
  for (let i = 0; i < keys; i += batch) {
    const n = Math.min(batch, keys - i);
    await Promise.all(Array.from({ length: n }, (_, j) => cache.put(`key-${i + j}`, value)));
  }
}

async function readsRebuildCompaction(): Promise<void> {
  const dir = await scratch();
  const root = projectionRoot(dir.path, 'caches');
  const open = async () =>
    LogCache.open({
      log: await SegmentLogPort.open({ root, shard: SHARD, fsync: 'none' }),
      compaction: noCompaction,
    });
  let cache = await open();
  let t = performance.now();
  await fill(cache, KEYS);
  const fillSeconds = (performance.now() - t) / 1000;

  const ephemeral = new EphemeralCache();
  for (let i = 0; i < KEYS; i++) await ephemeral.put(`key-${i}`, value);
  const samples = Math.min(100_000, KEYS * 2);
  const lat = async (get: (k: string) => Promise<unknown>) => {
    const out: number[] = [];
    for (let s = 0; s < samples; s++) {
      const k = `key-${Math.floor(Math.random() * KEYS)}`;
      const t0 = performance.now();
      await get(k);
      out.push((performance.now() - t0) * 1000);
    }
    return out.sort((a, b) => a - b);
  };
  const logLat = await lat((k) => cache.get(k));
  const memLat = await lat((k) => ephemeral.get(k));
  console.log(`\n### get latency, ${KEYS} keys, ${samples} random gets (µs)\n`);
  const p = (sorted: number[], q: number) => percentile(sorted, q).toFixed(1);
  console.log(
    markdownTable(
      ['cache', { title: 'p50', align: 'right' }, { title: 'p99', align: 'right' }],
      [
        ['LogCache (index in memory, value read from the log)', p(logLat, 50), p(logLat, 99)],
        ['EphemeralCache (in-memory map)', p(memLat, 50), p(memLat, 99)],
      ],
    ),
  );

  await cache.close();
  t = performance.now();
  cache = await open();
  const rebuildSeconds = (performance.now() - t) / 1000;
  console.log(`\n### index rebuild\n`);
  console.log(`- fill of ${KEYS} keys (fsync none, 256 in flight): ${fillSeconds.toFixed(1)} s`);
  console.log(
    `- LogCache.open replaying ${cache.log.tailOffset} records into ${cache.size} keys: ${rebuildSeconds.toFixed(2)} s (${(cache.log.tailOffset / rebuildSeconds).toFixed(0)} records/s)`,
  );

  await fill(cache, KEYS); // every key overwritten once: half the log is garbage
  const sizeBefore = cache.log.sizeBytes;
  t = performance.now();
  const result = await cache.compact();
  const compactSeconds = (performance.now() - t) / 1000;
  console.log(`\n### compaction\n`);
  console.log(
    `- pass over ${KEYS} live keys: copied ${result.copiedRecords} records (${(result.copiedBytes / 1e6).toFixed(1)} MB) in ${compactSeconds.toFixed(2)} s = ${(result.copiedRecords / compactSeconds).toFixed(0)} records/s, ${(result.copiedBytes / 1e6 / compactSeconds).toFixed(1)} MB/s; log ${(sizeBefore / 1e6).toFixed(1)} MB -> ${(cache.log.sizeBytes / 1e6).toFixed(1)} MB, trimmed=${result.trimmed}`,
  );
  await cache.close();
  await dir.done();
}

async function counters(): Promise<void> {
  console.log('\n### counter add\n');
  const rows: string[][] = [];
  for (const [fsync, writers] of [
    ['onCommit', 1],
    ['onCommit', 64],
    ['none', 1],
    ['none', 64],
  ] as const) {
    const dir = await scratch();
    const port = await SegmentLogPort.open({
      root: projectionRoot(dir.path, 'counters'),
      shard: SHARD,
      fsync,
    });
    const c = await CounterLog.open({ log: port, compaction: noCompaction });
    const r = await rate(writers, (w, i) => c.add(`c${(w * 7 + i) % 1000}`, 1n));
    await c.close();
    await dir.done();
    rows.push([fsync, String(writers), r.toFixed(0)]);
  }
  const right = (title: string) => ({ title, align: 'right' as const });
  console.log(markdownTable(['fsync', right('writers'), right('adds/s')], rows));
}

console.log(`cache bench: keys=${KEYS} seconds=${SECONDS} node=${process.version}`);
await putScaling();
await readsRebuildCompaction();
await counters();
