// Goal: a dead-letter page costs its own entries and a binary search once the group's index is
// built (one scan of its keys), not a scan of every key per page; pages stay exactly right while
// records, redrives, discards and finishes interleave with paging, when records are appended to
// the log behind the store (replication), and after the shard is released and led again with
// what its replica appended meanwhile; the index's memory is bounded over all groups.
// Method: the store over in-memory logs, a seeded model of the dead letters, and counting
// wrappers over the cache's key reads; SortedOffsets against a plain sorted array.
import { describe, expect, it } from 'vitest';
import { LogCache } from '../src/cache/log-cache.js';
import { encodeCacheRecord } from '../src/cache/record.js';
import { GroupStateCorruptError } from '../src/errors.js';
import {
  type DeadLetter,
  type DeadLetterState,
  DeadLetterStore,
  type GroupShard,
  type ShardCaches,
} from '../src/group/group-stores.js';
import { SortedOffsets } from '../src/group/sorted-offsets.js';
import { MemoryLog, MemoryLogStore } from './projection-support/memory-log.js';

const shard0: GroupShard = { tenant: 't', namespace: 'n', stream: 'jobs', shard: 0 };
const SEP = '\u001F';

/** In-memory shard caches whose logs a test can append to behind the cache. */
function memoryShards() {
  const store = new MemoryLogStore();
  let open: { log: MemoryLog; cache: Promise<LogCache> } | undefined;
  const caches: ShardCaches = {
    cache() {
      if (open === undefined) {
        const log = new MemoryLog(store);
        open = { log, cache: LogCache.open({ log, compaction: { auto: false } }) };
      }
      return open.cache;
    },
    log: () => Promise.reject(new Error('an in-memory log has no segment log to ship')),
    admit() {},
    async release() {
      const was = open;
      open = undefined;
      await (await was?.cache)?.close();
    },
    async close() {
      await caches.release(shard0);
    },
  };
  return {
    caches,
    store,
    /** Appends as replication does: to the open log behind its cache, else to the files. */
    appendBehind(records: Array<{ key: string; op: 'put' | 'delete' }>) {
      const payloads = records.map(({ key, op }) =>
        encodeCacheRecord({ op, key, expiresAtMillis: 0, value: new Uint8Array() }),
      );
      (open?.log ?? new MemoryLog(store)).appendRaw(payloads);
    },
  };
}

/** Counts what a cache hands out of its keys (each key listed counts) and its value reads. */
function countReads(cache: LogCache) {
  const n = { scans: 0, keysListed: 0, gets: 0 };
  const keys = cache.keys.bind(cache);
  cache.keys = async (prefix, limit) => {
    n.scans++;
    const out = await keys(prefix, limit);
    n.keysListed += out.length;
    return out;
  };
  const indexed = cache.indexedKeys?.bind(cache);
  if (indexed !== undefined) {
    cache.indexedKeys = (prefix) => {
      n.scans++;
      const out = indexed(prefix);
      n.keysListed += out.length;
      return out;
    };
  }
  const get = cache.get.bind(cache);
  cache.get = (key) => {
    n.gets++;
    return get(key);
  };
  return n;
}

/** A seeded generator (mulberry32), so a failure replays. */
function seeded(seed: number): (below: number) => number {
  let a = seed;
  return (below) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * below);
  };
}

async function walkPages(dead: DeadLetterStore, group: string, page: number) {
  const all: DeadLetter[] = [];
  let after = -1;
  let pages = 0;
  for (;;) {
    const got = await dead.list(shard0, group, page, after);
    pages++;
    all.push(...got);
    if (got.length < page) return { all, pages };
    after = got[got.length - 1]!.offset;
  }
}

function modelAbove(model: Map<number, DeadLetterState>, after: number, limit: number) {
  return [...model]
    .filter(([o]) => o > after)
    .sort(([a], [b]) => a - b)
    .slice(0, limit)
    .map(([offset, state]) => ({ offset, state }));
}

describe('dead-letter index', () => {
  it('walking_every_dead_letter_page_reads_each_key_once', async () => {
    const D = 5000;
    const PAGE = 100;
    const { caches } = memoryShards();
    const dead = new DeadLetterStore(caches);
    const next = seeded(7);
    const offsets = Array.from({ length: D }, (_, i) => i * 3);
    for (let i = offsets.length - 1; i > 0; i--) {
      const j = next(i + 1);
      [offsets[i], offsets[j]] = [offsets[j]!, offsets[i]!];
    }
    await Promise.all(offsets.map((o) => dead.record(shard0, 'g', o)));
    // Another group's keys on the same shard: a scan of the shard's keys passes them too.
    await Promise.all(offsets.map((o) => dead.record(shard0, 'other', o)));
    const n = countReads(await caches.cache(shard0));

    const { all, pages } = await walkPages(dead, 'g', PAGE);
    expect(all.map((d) => d.offset)).toEqual(offsets.slice().sort((a, b) => a - b));
    expect(pages).toBe(D / PAGE + 1);
    // Before: every page listed all 5,000 keys of the group again (250,000 over the walk).
    expect(n.scans).toBe(1);
    expect(n.keysListed).toBe(D);
    expect(n.gets).toBe(D);

    // The broker's page walk (each with a stop, as group_dead_letters does): no scan at all now.
    let after = -1;
    let visited = 0;
    for (let more = true; more; ) {
      const page: number[] = [];
      more = false;
      await dead.each(
        shard0,
        'g',
        (d) => {
          if (page.length === PAGE) {
            more = true;
            return false;
          }
          page.push(d.offset);
          visited++;
          return true;
        },
        after,
      );
      after = page[page.length - 1] ?? after;
    }
    expect(visited).toBe(D);
    expect(n.scans).toBe(1);
    expect(n.keysListed).toBe(D);
    // Each page reads its own entries and the one that says more remain.
    expect(n.gets).toBeLessThanOrEqual(2 * D + D / PAGE + 1);
  });

  it('dead_letter_pages_stay_right_while_records_redrives_discards_and_finishes_interleave', async () => {
    const { caches } = memoryShards();
    const dead = new DeadLetterStore(caches);
    const model = new Map<number, DeadLetterState>();
    const next = seeded(42);
    let after = -1;
    for (let step = 0; step < 600; step++) {
      const offset = next(400);
      const state = model.get(offset);
      const op = next(4);
      if (op === 0) {
        await (state === 'redriven' ? dead.markDead : dead.record).call(dead, shard0, 'g', offset);
        model.set(offset, 'dead');
      } else if (op === 1) {
        expect(await dead.redrive(shard0, 'g', offset)).toBe(state === 'dead');
        if (state === 'dead') model.set(offset, 'redriven');
      } else if (op === 2) {
        expect(await dead.discard(shard0, 'g', offset)).toBe(state === 'dead');
        if (state === 'dead') model.delete(offset);
      } else {
        expect(await dead.finish(shard0, 'g', offset)).toBe(state === 'redriven');
        if (state === 'redriven') model.delete(offset);
      }
      // One page of a walk that goes on through the changes, checked against the model.
      const limit = 1 + next(20);
      const page = await dead.list(shard0, 'g', limit, after);
      expect(page).toEqual(modelAbove(model, after, limit));
      after = page.length < limit ? -1 : page[page.length - 1]!.offset;
    }
    // Writes in flight together, then every page again.
    const batch = Array.from({ length: 300 }, () => next(400));
    await Promise.all(
      batch.map(async (o) => {
        if (model.get(o) === 'dead') await dead.discard(shard0, 'g', o);
        else await dead.record(shard0, 'g', o);
      }),
    );
    for (const o of new Set(batch)) {
      if (model.get(o) === 'dead') model.delete(o);
      else model.set(o, 'dead');
    }
    expect((await walkPages(dead, 'g', 7)).all).toEqual(modelAbove(model, -1, Infinity));
    expect(dead.indexedEntries).toBe(model.size);
  });

  it('a_dead_letter_page_sees_records_replicated_behind_the_store', async () => {
    const { caches, appendBehind } = memoryShards();
    const dead = new DeadLetterStore(caches);
    for (const o of [3, 5, 9]) await dead.record(shard0, 'g', o);
    expect((await dead.list(shard0, 'g')).map((d) => d.offset)).toEqual([3, 5, 9]);
    appendBehind([
      { key: `g${SEP}7`, op: 'put' },
      { key: `g${SEP}3`, op: 'delete' },
      { key: `g${SEP}11`, op: 'put' },
    ]);
    expect((await dead.list(shard0, 'g', 2)).map((d) => d.offset)).toEqual([5, 7]);
    expect((await dead.list(shard0, 'g', 2, 7)).map((d) => d.offset)).toEqual([9, 11]);
  });

  it('dead_letter_pages_follow_what_a_replica_appended_while_the_shard_was_released', async () => {
    const { caches, appendBehind } = memoryShards();
    const dead = new DeadLetterStore(caches);
    for (const o of [1, 2, 4]) await dead.record(shard0, 'g', o);
    expect((await dead.list(shard0, 'g')).map((d) => d.offset)).toEqual([1, 2, 4]);
    await dead.release(shard0);
    expect(dead.indexedEntries).toBe(0);
    // As the follower's copy of the log while another broker led: the store's cache is closed.
    appendBehind([
      { key: `g${SEP}3`, op: 'put' },
      { key: `g${SEP}1`, op: 'delete' },
    ]);
    dead.admit(shard0);
    expect((await dead.list(shard0, 'g')).map((d) => d.offset)).toEqual([2, 3, 4]);
    await dead.record(shard0, 'g', 0);
    expect((await dead.list(shard0, 'g', 2)).map((d) => d.offset)).toEqual([0, 2]);
    // Closed and opened again underneath the store: the index of the closed cache is not used.
    await caches.release(shard0);
    appendBehind([{ key: `g${SEP}1`, op: 'put' }]);
    expect((await dead.list(shard0, 'g', 2)).map((d) => d.offset)).toEqual([0, 1]);
  });

  it('a_dead_letter_key_that_is_no_offset_fails_the_page_after_the_index_was_built', async () => {
    const { caches, appendBehind } = memoryShards();
    const dead = new DeadLetterStore(caches);
    await dead.record(shard0, 'g', 1);
    expect(await dead.list(shard0, 'g')).toHaveLength(1);
    appendBehind([{ key: `g${SEP}x`, op: 'put' }]);
    await expect(dead.list(shard0, 'g')).rejects.toBeInstanceOf(GroupStateCorruptError);
  });

  it('the_dead_letter_index_drops_the_least_recently_paged_group_past_its_bound', async () => {
    const { caches } = memoryShards();
    const dead = new DeadLetterStore(caches, { indexEntriesMax: 15 });
    for (let o = 0; o < 10; o++) {
      await dead.record(shard0, 'a', o);
      await dead.record(shard0, 'b', o);
    }
    for (let o = 0; o < 20; o++) await dead.record(shard0, 'c', o);
    const n = countReads(await caches.cache(shard0));
    await dead.list(shard0, 'a');
    await dead.list(shard0, 'a', 3, 4);
    expect([n.scans, dead.indexedEntries]).toEqual([1, 10]);
    await dead.list(shard0, 'b');
    expect([n.scans, dead.indexedEntries]).toEqual([2, 10]);
    await dead.record(shard0, 'a', 10); // a's index is gone: nothing to keep up
    expect(dead.indexedEntries).toBe(10);
    expect((await dead.list(shard0, 'a', 2, 8)).map((d) => d.offset)).toEqual([9, 10]);
    expect([n.scans, dead.indexedEntries]).toEqual([3, 11]);
    // The group in use stays indexed whatever its size; every other goes.
    expect(await dead.list(shard0, 'c')).toHaveLength(20);
    expect([n.scans, dead.indexedEntries]).toEqual([4, 20]);
    await dead.record(shard0, 'c', 20);
    expect(dead.indexedEntries).toBe(21);
  });

  it('sorted_offsets_answer_as_a_sorted_array_through_splits_and_emptied_chunks', () => {
    const set = new SortedOffsets();
    const model = new Set<number>();
    const next = seeded(3);
    for (let step = 0; step < 40_000; step++) {
      const o = next(step < 20_000 ? 6000 : 300) * 7;
      if (next(3) === 0) expect(set.delete(o)).toBe(model.delete(o));
      else {
        expect(set.add(o)).toBe(!model.has(o));
        model.add(o);
      }
      if (step % 997 === 0) {
        const sorted = [...model].sort((a, b) => a - b);
        const after = next(45_000) - 1;
        expect(set.above(after, 1500)).toEqual(sorted.filter((x) => x > after).slice(0, 1500));
        expect(set.size).toBe(model.size);
      }
    }
    expect(set.above(-1, Infinity)).toEqual([...model].sort((a, b) => a - b));
    // Appended in order, then thinned out: chunks are copied afresh and merged as they empty.
    const thin = new SortedOffsets();
    for (let o = 0; o < 10_000; o++) expect(thin.add(o)).toBe(true);
    for (let o = 0; o < 10_000; o++) if (o % 97 !== 0) expect(thin.delete(o)).toBe(true);
    const left = Array.from({ length: 104 }, (_, i) => i * 97);
    expect(thin.above(-1, Infinity)).toEqual(left);
    expect(thin.above(97 * 50, 3)).toEqual([97 * 51, 97 * 52, 97 * 53]);
    for (const o of left) expect(thin.delete(o)).toBe(true);
    expect([thin.size, thin.above(-1, Infinity)]).toEqual([0, []]);
    expect(SortedOffsets.of([5, 1, 5, 3]).above(1, 10)).toEqual([3, 5]);
  });
});
