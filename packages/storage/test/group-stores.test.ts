// Goal: a consumer group's durable bookkeeping — its cursor and its dead letters — are cache
// readings on their own logs: positions and dead letters survive restarts, cursor commits never
// go backwards, and redrive/discard/finish follow the dead-letter lifecycle.
// Method: the stores on disk under a temp root (restarts reopen it), and over in-memory logs
// for the lifecycle rules.
import { readdir } from 'node:fs/promises';
import { tempDir } from '@felix/testing-harness';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { LogCache } from '../src/cache/log-cache.js';
import { GroupStateCorruptError } from '../src/errors.js';
import { CACHE_DELETE_BATCH_KEYS_MAX, DEAD_LETTER_LIST_MAX } from '../src/limits.js';
import {
  CursorStore,
  DeadLetterStore,
  type GroupShard,
  type ShardCaches,
  decodeCursor,
  encodeCursor,
  openCursorStore,
  openDeadLetterStore,
} from '../src/group/group-stores.js';
import { MemoryLog, MemoryLogStore } from './projection-support/memory-log.js';

function memoryCaches(stores: Map<string, MemoryLogStore>): ShardCaches {
  const open = new Map<string, Promise<LogCache>>();
  return {
    cache(shard) {
      const k = JSON.stringify(shard);
      let c = open.get(k);
      if (c === undefined) {
        let store = stores.get(k);
        if (store === undefined) {
          store = new MemoryLogStore();
          stores.set(k, store);
        }
        c = LogCache.open({ log: new MemoryLog(store), compaction: { auto: false } });
        open.set(k, c);
      }
      return c;
    },
    log() {
      return Promise.reject(new Error('an in-memory log has no segment log to ship'));
    },
    admit() {},
    async release(shard) {
      const k = JSON.stringify(shard);
      const c = open.get(k);
      open.delete(k);
      await (await c)?.close();
    },
    async close() {
      for (const c of open.values()) await (await c).close();
      open.clear();
    },
  };
}

const shard0: GroupShard = { tenant: 't', namespace: 'n', stream: 'orders', shard: 0 };
const shard1: GroupShard = { ...shard0, shard: 1 };

describe('group stores', () => {
  it('a_position_survives_a_restart', async () => {
    const dir = await tempDir('felix-groups-');
    try {
      const cursors = openCursorStore({ root: dir.path, fsync: 'onCommit' });
      expect(await cursors.position(shard0, 'billing')).toBeUndefined();
      await cursors.commit(shard0, 'billing', 42);
      await cursors.commit(shard1, 'billing', 7);
      await cursors.commit(shard0, 'billing', 41);
      await cursors.close();
      const again = openCursorStore({ root: dir.path });
      expect(await again.position(shard0, 'billing')).toBe(42);
      expect(await again.position(shard1, 'billing')).toBe(7);
      await again.close();
      expect((await readdir(dir.path)).sort()).toEqual(['groups']);
    } finally {
      await dir.cleanup();
    }
  });

  it('cursor_commits_never_go_backwards', async () => {
    const stores = new Map<string, MemoryLogStore>();
    const cursors = new CursorStore(memoryCaches(stores));
    const answers = await Promise.all(
      [50, 10, 70, 30, 60].map((o) => cursors.commit(shard0, 'g', o)),
    );
    expect(answers).toEqual([50, 50, 70, 70, 70]);
    expect(await cursors.position(shard0, 'g')).toBe(70);
    await cursors.close();
    expect(await new CursorStore(memoryCaches(stores)).position(shard0, 'g')).toBe(70);
  });

  it('a_cursor_is_stored_as_eight_big_endian_bytes', async () => {
    const stores = new Map<string, MemoryLogStore>();
    const caches = memoryCaches(stores);
    await new CursorStore(caches).commit(shard0, 'g', 0x0102);
    const raw = await (await caches.cache(shard0)).get('g');
    expect(Array.from(raw ?? [])).toEqual([0, 0, 0, 0, 0, 0, 1, 2]);
    expect(decodeCursor(raw ?? new Uint8Array())).toBe(258);
  });

  it('a_dead_letter_survives_a_restart', async () => {
    const dir = await tempDir('felix-dead-');
    try {
      const dead = openDeadLetterStore({ root: dir.path, fsync: 'onCommit' });
      await dead.record(shard0, 'g', 100);
      await dead.record(shard0, 'g', 9);
      await dead.record(shard0, 'other', 5);
      expect(await dead.redrive(shard0, 'g', 100)).toBe(true);
      await dead.close();
      const again = openDeadLetterStore({ root: dir.path });
      expect(await again.list(shard0, 'g')).toEqual([
        { offset: 9, state: 'dead' },
        { offset: 100, state: 'redriven' },
      ]);
      expect(await again.list(shard0, 'other')).toEqual([{ offset: 5, state: 'dead' }]);
      await again.close();
      expect((await readdir(dir.path)).sort()).toEqual(['dead-letters']);
    } finally {
      await dir.cleanup();
    }
  });

  it('a_dead_letter_is_discarded_when_dead_and_finished_when_redriven', async () => {
    const dead = new DeadLetterStore(memoryCaches(new Map()));
    await dead.record(shard0, 'g', 1);
    await dead.record(shard0, 'g', 2);
    expect(await dead.redrive(shard0, 'g', 2)).toBe(true);
    expect(await dead.redrive(shard0, 'g', 2)).toBe(false);
    expect(await dead.discard(shard0, 'g', 2)).toBe(false);
    expect(await dead.finish(shard0, 'g', 1)).toBe(false);
    expect(await dead.discard(shard0, 'g', 1)).toBe(true);
    expect(await dead.finish(shard0, 'g', 2)).toBe(true);
    expect(await dead.list(shard0, 'g')).toEqual([]);
  });

  it('a_dead_letter_removal_batch_drops_the_lowest_entries_of_its_group_dead_or_redriven_in_one_append', async () => {
    const stores = new Map<string, MemoryLogStore>();
    const dead = new DeadLetterStore(memoryCaches(stores));
    const many = DEAD_LETTER_LIST_MAX + 5;
    await Promise.all([...Array(many).keys()].map((o) => dead.record(shard0, 'g', o)));
    await dead.record(shard0, 'other', 2);
    expect(await dead.redrive(shard0, 'g', 2)).toBe(true);
    const store = stores.get(JSON.stringify(shard0))!;
    const tail = store.tail;
    const claims = vi.spyOn(MemoryLog.prototype, 'claim');
    // Asked for more than one batch may hold: the lowest DEAD_LETTER_LIST_MAX, in one claim.
    expect(await dead.removeLowest(shard0, 'g', Number.POSITIVE_INFINITY)).toBe(
      DEAD_LETTER_LIST_MAX,
    );
    expect(claims).toHaveBeenCalledTimes(1);
    claims.mockRestore();
    expect(store.tail - tail).toBe(DEAD_LETTER_LIST_MAX); // one delete record per entry
    expect(await dead.list(shard0, 'g')).toEqual(
      [...Array(5).keys()].map((i) => ({ offset: DEAD_LETTER_LIST_MAX + i, state: 'dead' })),
    );
    expect(await dead.removeLowest(shard0, 'g', 2)).toBe(2);
    expect(await dead.removeLowest(shard0, 'g')).toBe(3);
    expect(await dead.removeLowest(shard0, 'g')).toBe(0);
    expect(await dead.list(shard0, 'other')).toEqual([{ offset: 2, state: 'dead' }]);
    // The store's batch fits the cache's bound on one batch of deletes.
    expect(DEAD_LETTER_LIST_MAX).toBeLessThanOrEqual(CACHE_DELETE_BATCH_KEYS_MAX);
  });
});

describe('group state decoding', () => {
  it('the_cursor_decoder_throws_only_its_typed_error', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 12 }), (b) => {
        try {
          const offset = decodeCursor(b);
          expect(b.length).toBe(8);
          expect(Array.from(encodeCursor(offset))).toEqual(Array.from(b));
        } catch (err) {
          expect(err).toBeInstanceOf(GroupStateCorruptError);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
