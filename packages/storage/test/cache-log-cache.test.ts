// Goal: LogCache is a reading of its log: the index is rebuilt by replay, catches up with records
// appended behind it, and writes become visible only once durable and in offset order.
// Method: an in-memory log whose durability a test can hold; restarts reopen the same store.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { LogCache } from '../src/cache/log-cache.js';
import { ProjectionInputError } from '../src/errors.js';
import { CACHE_DELETE_BATCH_KEYS_MAX } from '../src/limits.js';
import {
  ManualClock,
  bytes,
  collect,
  describeChanges,
  text,
} from './projection-support/cache-fixture.js';
import { MemoryLog, MemoryLogStore } from './projection-support/memory-log.js';

async function reopen(store: MemoryLogStore, clock = new ManualClock()) {
  return LogCache.open({ log: new MemoryLog(store), now: clock.now, compaction: { auto: false } });
}

describe('LogCache', () => {
  it('a_cache_answers_what_was_put_and_removes_what_was_deleted', async () => {
    const cache = await reopen(new MemoryLogStore());
    const v = await cache.put('a', bytes('1'));
    expect(text(await cache.get('a'))).toBe('1');
    expect((await cache.getEntry('a'))?.version).toBe(v);
    expect(text(await cache.delete('a'))).toBe('1');
    expect(await cache.get('a')).toBeUndefined();
  });

  it('removing_an_absent_key_answers_nothing_and_writes_nothing', async () => {
    const log = new MemoryLog();
    const cache = await LogCache.open({ log, compaction: { auto: false } });
    expect(await cache.delete('never')).toBeUndefined();
    expect(log.tailOffset).toBe(0);
  });

  it('a_delete_batch_writes_one_delete_per_present_key_and_replays_like_single_deletes', async () => {
    const store = new MemoryLogStore();
    const cache = await reopen(store);
    for (const k of ['a', 'b', 'c']) await cache.put(k, bytes(k));
    const tail = store.tail;
    // An absent key and a repeated one add nothing.
    expect(await cache.deleteMany(['a', 'never', 'c', 'a'])).toBe(2);
    expect(store.tail - tail).toBe(2);
    expect(await cache.deleteMany(['never'])).toBe(0);
    expect(store.tail - tail).toBe(2);
    const again = await reopen(store);
    expect([await again.get('a'), text(await again.get('b')), await again.get('c')]).toEqual([
      undefined,
      'b',
      undefined,
    ]);
    const tooMany = Array.from({ length: CACHE_DELETE_BATCH_KEYS_MAX + 1 }, (_, i) => `k${i}`);
    await expect(cache.deleteMany(tooMany)).rejects.toBeInstanceOf(ProjectionInputError);
  });

  it('staged_writes_are_invisible_until_committed', async () => {
    const log = new MemoryLog();
    const cache = await LogCache.open({ log, compaction: { auto: false } });
    await cache.put('k', bytes('old'));
    const watch = collect(cache.watch({ key: 'k' }, { kind: 'live' }));
    log.shutGate();
    const pending = cache.put('k', bytes('new'));
    await waitFor(() => log.stagedCount === 1, 'the put to be staged');
    expect(text(await cache.get('k'))).toBe('old');
    expect(cache.frontier).toBe(1);
    expect(watch.events).toEqual([]);
    log.openGate();
    await pending;
    expect(text(await cache.get('k'))).toBe('new');
    await waitFor(() => watch.events.length === 1, 'the change to reach the watcher');
    expect(describeChanges(watch.events)).toEqual(['k=new@1']);
    await cache.close();
  });

  it('a_delete_answers_the_value_it_removed_in_offset_order', async () => {
    const cache = await reopen(new MemoryLogStore());
    await cache.put('k', bytes('a'));
    const [d1, , d2] = await Promise.all([
      cache.delete('k'),
      cache.put('k', bytes('b')),
      cache.delete('k'),
    ]);
    expect(text(d1)).toBe('a');
    expect(text(d2)).toBe('b');
  });

  it('an_expired_entry_reads_as_absent_at_once', async () => {
    const clock = new ManualClock();
    const cache = await reopen(new MemoryLogStore(), clock);
    await cache.put('t', bytes('v'), { ttlMs: 5 });
    clock.advance(5);
    expect(await cache.get('t')).toBeUndefined();
    expect(await cache.delete('t')).toBeUndefined();
  });
});

describe('LogCache expiry pass', () => {
  it('an_expiry_pass_appends_deletes_that_watchers_see', async () => {
    const clock = new ManualClock();
    const log = new MemoryLog();
    const cache = await LogCache.open({ log, now: clock.now, compaction: { auto: false } });
    await cache.put('a', bytes('1'), { ttlMs: 10 });
    await cache.put('b', bytes('2'), { ttlMs: 50 });
    await cache.put('c', bytes('3'));
    const w = collect(cache.watch({ prefix: '' }, { kind: 'live' }));
    expect(await cache.expireDue()).toBe(0);
    clock.advance(10);
    expect(await cache.expireDue()).toBe(1);
    await waitFor(() => w.events.length === 1, 'the expiry delete');
    expect(describeChanges(w.events)).toEqual(['a-@3']);
    expect(log.tailOffset).toBe(4);
    expect(await cache.expireDue()).toBe(0);
    expect(text(await cache.get('b'))).toBe('2');
    await cache.close();
  });

  it('an_expired_key_compacted_before_the_expiry_pass_is_still_deleted_for_its_watchers', async () => {
    // Before, compaction dropped expired entries from the index without a delete, so the
    // expiry pass never found them and a watcher never saw them expire.
    const clock = new ManualClock();
    const log = new MemoryLog();
    const cache = await LogCache.open({ log, now: clock.now, compaction: { auto: false } });
    for (const k of ['a', 'b', 'c']) await cache.put(k, bytes(k), { ttlMs: 5 });
    // Overwrites give the compaction something below its cut to remove.
    for (let i = 0; i < 20; i++) await cache.put('hot', bytes(`v${i}`));
    const w = collect(cache.watch({ prefix: '' }, { kind: 'live' }));
    clock.advance(5);
    await cache.compact();
    expect(await cache.get('a')).toBeUndefined();
    // The compaction appended their deletes itself (an expiry pass's budget can be outrun).
    await waitFor(() => w.events.length === 3, 'the three expiry deletes');
    expect(await cache.expireDue()).toBe(0);
    expect(describeChanges(w.events).map((d) => d.split('@')[0])).toEqual(['a-', 'b-', 'c-']);
    await cache.close();
  });

  it('a_key_refreshed_before_the_expiry_pass_claims_survives_it', async () => {
    const clock = new ManualClock();
    const log = new MemoryLog();
    const cache = await LogCache.open({ log, now: clock.now, compaction: { auto: false } });
    await cache.put('k', bytes('old'), { ttlMs: 5 });
    clock.advance(5);
    log.shutGate();
    const refresh = cache.put('k', bytes('new'));
    await waitFor(() => log.stagedCount === 1, 'the refresh to be staged');
    log.passNewClaims();
    expect(await cache.expireDue().then((n) => n)).toBe(0);
    log.openGate();
    await refresh;
    expect(text(await cache.get('k'))).toBe('new');
    await cache.close();
  });
});
