// Goal: cache watches see applied writes in disk order with exact joins: filters, resumes that
// are gapless under concurrent writers, resnapshot below the base, overflow that names the
// first missed offset, retained starts. Method: LogCache over an in-memory log; concurrent
// writers race the join; events are checked against what the log itself reads back.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { LogCache } from '../src/cache/log-cache.js';
import { decodeCacheRecord } from '../src/cache/record.js';
import type { WatchEvent } from '../src/cache/watch.js';
import { bytes, collect, describeChanges, text } from './projection-support/cache-fixture.js';
import { openDiskCache, tempDir } from './projection-support/disk.js';
import { MemoryLog } from './projection-support/memory-log.js';

/** A memory log that counts reads and, while `hold` is set, parks each read until released. */
class CountingLog extends MemoryLog {
  reads = 0;
  hold = false;
  readonly held: Array<() => void> = [];
  override async read(
    from: number,
    budget?: { maxRecords?: number },
  ): ReturnType<MemoryLog['read']> {
    this.reads++;
    if (this.hold) await new Promise<void>((resolve) => this.held.push(resolve));
    return super.read(from, budget);
  }
}

async function openCache(log = new MemoryLog()) {
  return LogCache.open({ log, compaction: { auto: false, bytesPerSec: 0 } });
}

/** What the log says, in offset order, for keys matching `pred` (compaction copies skipped). */
async function logChanges(
  log: MemoryLog,
  from: number,
  pred: (k: string) => boolean,
): Promise<string[]> {
  const res = await log.read(from, { maxRecords: 1_000_000 });
  if (res.kind !== 'records') throw new Error('trimmed');
  return res.records.flatMap((r) => {
    const rec = decodeCacheRecord(r.payload);
    if (rec.carriedVersion !== undefined || !pred(rec.key)) return [];
    return [
      rec.op === 'put'
        ? `${rec.key}=${new TextDecoder().decode(rec.value)}@${r.offset}`
        : `${rec.key}-@${r.offset}`,
    ];
  });
}

function changesOnly(events: WatchEvent[]): string[] {
  return describeChanges(events.filter((e) => e.kind === 'change'));
}

describe('cache watch', () => {
  it('watch_order_is_disk_order', async () => {
    const log = new MemoryLog();
    const cache = await openCache(log);
    const w = collect(cache.watch({ prefix: '' }, { kind: 'live' }));
    log.shutGate();
    const writes = [...Array(20).keys()].map((i) => cache.put(`k${i % 3}`, bytes(`${i}`)));
    await waitFor(() => log.stagedCount === 20, 'all writes staged');
    log.openGateReversed();
    await Promise.all(writes);
    await waitFor(() => w.events.length === 20, 'every change delivered');
    expect(changesOnly(w.events)).toEqual(await logChanges(log, 0, () => true));
    await cache.close();
  });

  it('a_key_watch_sees_its_key_and_no_others', async () => {
    const cache = await openCache();
    const w = collect(cache.watch({ key: 'user:1' }, { kind: 'live' }));
    const p = collect(cache.watch({ prefix: 'user:' }, { kind: 'live' }));
    await cache.put('user:10', bytes('x'));
    await cache.put('user:1', bytes('a'));
    await cache.put('other', bytes('o'));
    await cache.delete('user:1');
    await waitFor(() => p.events.length === 3, 'prefix watch events');
    expect(describeChanges(w.events)).toEqual(['user:1=a@1', 'user:1-@3']);
    expect(describeChanges(p.events)).toEqual(['user:10=x@0', 'user:1=a@1', 'user:1-@3']);
    await cache.close();
  });

  it('a_resumed_watch_is_gapless_under_concurrent_writes', async () => {
    const log = new MemoryLog();
    const cache = await openCache(log);
    for (let i = 0; i < 30; i++) await cache.put(`k${i % 4}`, bytes(`pre${i}`));
    const writers = [...Array(4).keys()].map(async (w) => {
      for (let i = 0; i < 40; i++) await cache.put(`k${(w + i) % 4}`, bytes(`w${w}.${i}`));
    });
    // Join repeatedly while the writers run: each join must see exactly the log from its offset.
    const joins: { from: number; got: ReturnType<typeof collect> }[] = [];
    for (const from of [5, 17, 29]) {
      await new Promise((r) => setImmediate(r));
      joins.push({
        from,
        got: collect(cache.watch({ prefix: 'k' }, { kind: 'from', offset: from })),
      });
    }
    await Promise.all(writers);
    const total = log.tailOffset;
    for (const j of joins) {
      const want = await logChanges(log, j.from, () => true);
      await waitFor(
        () => j.got.events.length === total - j.from,
        `join from ${j.from} to catch up`,
      );
      expect(changesOnly(j.got.events)).toEqual(want);
    }
    await cache.close();
  });

  it('a_watch_from_a_compacted_offset_resnapshots', async () => {
    const log = new MemoryLog();
    const cache = await openCache(log);
    await cache.put('a', bytes('1'));
    await cache.put('b', bytes('2'));
    const vA = await cache.put('a', bytes('3'));
    await cache.delete('b');
    await cache.put('c', bytes('4'));
    const result = await cache.compact();
    expect(result.trimmed).toBe(true);
    expect(log.baseOffset).toBeGreaterThan(0);
    const watch = cache.watch({ prefix: '' }, { kind: 'from', offset: 0 });
    expect(watch.resnapshot).toBe(true);
    // The count tells the watcher where the current values end and live changes begin.
    expect(watch.retainedCount).toBe(2);
    const w = collect(watch);
    await waitFor(() => w.events.length === 2, 'the snapshot');
    expect(describeChanges(w.events)).toEqual([`a=3@${vA}`, 'c=4@4']);
    await cache.put('a', bytes('5'));
    await waitFor(() => w.events.length === 3, 'the live change');
    expect(describeChanges(w.events)[2]).toBe(`a=5@${log.tailOffset - 1}`);
    await cache.close();
  });

  it('compaction_is_invisible_to_watchers', async () => {
    const log = new MemoryLog();
    const cache = await openCache(log);
    await cache.put('a', bytes('1'));
    await cache.put('a', bytes('2'));
    const live = collect(cache.watch({ prefix: '' }, { kind: 'live' }));
    const replay = cache.watch({ prefix: '' }, { kind: 'from', offset: 1 });
    const r = collect(replay);
    await cache.compact();
    await cache.put('b', bytes('3'));
    await waitFor(
      () => live.events.length === 1 && r.events.length === 2,
      'the put after compaction',
    );
    expect(describeChanges(live.events)).toEqual([`b=3@${log.tailOffset - 1}`]);
    expect(describeChanges(r.events)).toEqual(['a=2@1', `b=3@${log.tailOffset - 1}`]);
    await cache.close();
  });

  it('overflow_ends_the_watch_and_names_the_first_missed_offset', async () => {
    const cache = await openCache();
    const watch = cache.watch({ prefix: '' }, { kind: 'live' }, { queueCapacity: 3 });
    for (let i = 0; i < 6; i++) await cache.put(`k${i}`, bytes(`${i}`));
    const got: WatchEvent[] = [];
    for await (const ev of watch) got.push(ev);
    expect(describeChanges(got)).toEqual(['k0=0@0', 'k1=1@1', 'k2=2@2', 'lagged@3']);
    // Re-watching from the named offset is gapless.
    const again = collect(cache.watch({ prefix: '' }, { kind: 'from', offset: 3 }));
    await waitFor(() => again.events.length === 3, 'the resumed watch');
    expect(describeChanges(again.events)).toEqual(['k3=3@3', 'k4=4@4', 'k5=5@5']);
    await cache.close();
  });

  it('a_retained_watch_delivers_current_state_then_live_under_concurrent_writes', async () => {
    const log = new MemoryLog();
    const cache = await openCache(log);
    for (let i = 0; i < 10; i++) await cache.put(`s${i % 5}`, bytes(`init${i}`));
    const writers = [...Array(3).keys()].map(async (w) => {
      for (let i = 0; i < 30; i++) await cache.put(`s${(w * 7 + i) % 5}`, bytes(`w${w}.${i}`));
    });
    await new Promise((r) => setImmediate(r));
    const watch = cache.watch({ prefix: 's' }, { kind: 'retained' });
    const w = collect(watch);
    await Promise.all(writers);
    const count = watch.retainedCount ?? -1;
    expect(count).toBeGreaterThan(0);
    expect(count).toBeLessThanOrEqual(5);
    const live = log.tailOffset - watch.resumeOffset;
    await waitFor(() => w.events.length >= count + live, 'snapshot plus every live change');
    // Folding snapshot then live changes yields exactly the cache's final state.
    const folded = new Map<string, string>();
    for (const ev of w.events) {
      if (ev.kind === 'change' && ev.change.value)
        folded.set(ev.change.key, new TextDecoder().decode(ev.change.value));
    }
    for (let k = 0; k < 5; k++) {
      expect(folded.get(`s${k}`)).toBe(new TextDecoder().decode(await cache.get(`s${k}`)));
    }
    const liveOffsets = w.events
      .slice(count)
      .map((e) => (e.kind === 'change' ? e.change.offset : -1));
    expect(liveOffsets).toEqual([...Array(live).keys()].map((i) => watch.resumeOffset + i));
    await cache.close();
  });

  it('a_retained_watch_on_an_empty_key_reports_no_value', async () => {
    const cache = await openCache();
    await cache.put('other', bytes('x'));
    const watch = cache.watch({ key: 'empty' }, { kind: 'retained' });
    expect(watch.retainedCount).toBe(0);
    const w = collect(watch);
    await cache.put('empty', bytes('now'));
    await waitFor(() => w.events.length === 1, 'the first live value');
    expect(describeChanges(w.events)).toEqual(['empty=now@1']);
    await cache.close();
  });

  it('retained_values_arrive_in_write_order', async () => {
    const cache = await openCache();
    await cache.put('zebra', bytes('1'));
    await cache.put('apple', bytes('2'));
    await cache.put('mango', bytes('3'));
    await cache.put('apple', bytes('4'));
    const watch = cache.watch({ prefix: '' }, { kind: 'retained' });
    const w = collect(watch);
    await waitFor(() => w.events.length === 3, 'the snapshot');
    // Each key's current value, oldest write first (not key order).
    expect(describeChanges(w.events)).toEqual(['zebra=1@0', 'mango=3@2', 'apple=4@3']);
    await cache.close();
  });

  it('a_retained_snapshot_reads_the_log_in_pages_not_once_per_key', async () => {
    const log = new CountingLog();
    const cache = await openCache(log);
    const keys = 2000;
    // Interleaved writers: key order and write order differ, as with concurrent producers.
    await Promise.all(
      [...Array(8).keys()].map(async (w) => {
        for (let i = w; i < keys; i += 8) await cache.put(`k${i}`, bytes(`v${i}`));
      }),
    );
    await cache.put('other', bytes('not watched'));
    log.reads = 0;
    const watch = cache.watch({ prefix: 'k' }, { kind: 'retained' });
    expect(watch.retainedCount).toBe(keys);
    const w = collect(watch);
    await waitFor(() => w.events.length === keys, 'every retained value');
    const seen = new Map<string, string | undefined>();
    for (const ev of w.events)
      if (ev.kind === 'change') seen.set(ev.change.key, text(ev.change.value));
    for (let i = 0; i < keys; i++) expect(seen.get(`k${i}`)).toBe(`v${i}`);
    // 2,000 values 512 records to a page: a handful of reads, where one per key took 2,000.
    expect(log.reads).toBeLessThanOrEqual(8);
    await cache.close();
  });

  it('a_retained_snapshot_read_across_a_compaction_still_yields_every_value', async () => {
    const log = new CountingLog();
    const cache = await openCache(log);
    for (let i = 0; i < 50; i++) await cache.put(`c${i % 10}`, bytes(`old${i}`));
    for (let i = 0; i < 10; i++) await cache.put(`c${i}`, bytes(`v${i}`));
    // The snapshot is taken now; its reads are held until compaction has moved every record.
    log.hold = true;
    const watch = cache.watch({ prefix: 'c' }, { kind: 'retained' });
    const w = collect(watch);
    await waitFor(() => log.held.length > 0, 'the snapshot read to start');
    log.hold = false;
    const result = await cache.compact();
    expect(result.trimmed).toBe(true);
    for (const release of log.held.splice(0)) release();
    await waitFor(() => w.events.length === 10, 'every retained value');
    expect(
      w.events.map((ev) =>
        ev.kind === 'change' ? `${ev.change.key}=${text(ev.change.value)}` : '',
      ),
    ).toEqual([...Array(10).keys()].map((i) => `c${i}=v${i}`));
    await cache.close();
  });

  it('a_retained_value_survives_a_restart', async () => {
    const dir = await tempDir('felix-watch-');
    try {
      const { cache } = await openDiskCache(dir.path);
      const v = await cache.put('presence:ann', bytes('online'));
      await cache.put('presence:bob', bytes('away'));
      await cache.delete('presence:bob');
      await cache.close();
      const { cache: again } = await openDiskCache(dir.path);
      const watch = again.watch({ prefix: 'presence:' }, { kind: 'retained' });
      expect(watch.retainedCount).toBe(1);
      const w = collect(watch);
      await waitFor(() => w.events.length === 1, 'the retained value');
      expect(describeChanges(w.events)).toEqual([`presence:ann=online@${v}`]);
      await again.close();
    } finally {
      await dir.cleanup();
    }
  });

  it('a_watch_over_the_segment_log_matches_the_log_under_concurrent_durable_writes', async () => {
    const dir = await tempDir('felix-watch-');
    try {
      const { cache, port } = await openDiskCache(dir.path, { fsync: 'onCommit' });
      const live = collect(cache.watch({ prefix: '' }, { kind: 'live' }));
      const writers = [...Array(8).keys()].map(async (w) => {
        for (let i = 0; i < 25; i++) await cache.put(`k${(w + i) % 5}`, bytes(`w${w}.${i}`));
      });
      await new Promise((r) => setImmediate(r));
      const joined = collect(cache.watch({ prefix: 'k' }, { kind: 'from', offset: 3 }));
      await Promise.all(writers);
      const res = await port.read(0, { maxRecords: 1000 });
      if (res.kind !== 'records') throw new Error('trimmed');
      const inLog = res.records.map((r) => {
        const rec = decodeCacheRecord(r.payload);
        return `${rec.key}=${new TextDecoder().decode(rec.value)}@${r.offset}`;
      });
      await waitFor(
        () => live.events.length === 200 && joined.events.length === 197,
        'every change',
      );
      expect(changesOnly(live.events)).toEqual(inLog);
      expect(changesOnly(joined.events)).toEqual(inLog.slice(3));
      await cache.close();
    } finally {
      await dir.cleanup();
    }
  });
});
