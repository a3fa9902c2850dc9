// Goal: EphemeralCache offers the cache API in memory: put/get/delete, lazy TTL, live and
// retained watches, and no history. Method: direct calls with an injected clock.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { EphemeralCache } from '../src/cache/ephemeral-cache.js';
import { ProjectionInputError, WatchStartError } from '../src/errors.js';
import { CACHE_VALUE_BYTES_MAX } from '../src/limits.js';
import {
  ManualClock,
  bytes,
  collect,
  describeChanges,
  text,
} from './projection-support/cache-fixture.js';

describe('EphemeralCache', () => {
  it('an_in_memory_cache_expires_lazily_and_answers_removed_values', async () => {
    const clock = new ManualClock();
    const cache = new EphemeralCache({ now: clock.now });
    await cache.put('t', bytes('v'), { ttlMs: 10 });
    await cache.put('p', bytes('q'));
    expect(text(await cache.get('t'))).toBe('v');
    clock.advance(10);
    expect(await cache.get('t')).toBeUndefined();
    expect(text(await cache.delete('p'))).toBe('q');
    expect(await cache.delete('p')).toBeUndefined();
  });

  it('an_in_memory_expiry_pass_removes_expired_keys_nobody_reads_a_bounded_number_at_a_time', async () => {
    // Before, expiry was lazy only: a key put with a TTL and never read again stayed in memory.
    const clock = new ManualClock();
    const cache = new EphemeralCache({ now: clock.now });
    for (let i = 0; i < 10; i++) await cache.put(`s${i}`, bytes('v'), { ttlMs: 10 });
    await cache.put('kept', bytes('k'));
    await cache.put('later', bytes('l'), { ttlMs: 1_000 });
    const w = collect(cache.watch({ prefix: '' }, { kind: 'live' }));
    clock.advance(10);
    // Four keys looked at per call: the calls go on where the previous one stopped.
    expect(cache.expireDue(4)).toEqual({ visited: 4, deleted: 4 });
    expect(cache.expireDue(4)).toEqual({ visited: 4, deleted: 4 });
    expect(cache.expireDue(4)).toEqual({ visited: 4, deleted: 2 });
    expect(cache.size).toBe(2);
    // The end of the map was reached: the next call starts over and finds nothing due.
    expect(cache.expireDue(100)).toEqual({ visited: 2, deleted: 0 });
    expect(text(await cache.get('kept'))).toBe('k');
    expect(text(await cache.get('later'))).toBe('l');
    await waitFor(() => w.events.length === 10, 'the expiries as deletes');
    expect(w.events.every((e) => e.kind === 'change' && e.change.op === 'delete')).toBe(true);
    await cache.close();
  });

  it('an_in_memory_retained_watch_answers_in_write_order', async () => {
    const cache = new EphemeralCache();
    await cache.put('zebra', bytes('1'));
    await cache.put('apple', bytes('2'));
    await cache.put('mango', bytes('3'));
    await cache.put('apple', bytes('4'));
    const w = collect(cache.watch({ prefix: '' }, { kind: 'retained' }));
    await waitFor(() => w.events.length === 3, 'the snapshot');
    // Each key's current value, oldest write first (not key order).
    expect(w.events.map((e) => (e.kind === 'change' ? e.change.key : ''))).toEqual([
      'zebra',
      'mango',
      'apple',
    ]);
    await cache.close();
  });

  it('an_in_memory_watch_starts_live_or_retained_only', async () => {
    const cache = new EphemeralCache();
    await cache.put('a:1', bytes('x'));
    await cache.put('b', bytes('y'));
    const retained = cache.watch({ prefix: 'a:' }, { kind: 'retained' });
    expect(retained.retainedCount).toBe(1);
    const w = collect(retained);
    await cache.put('a:2', bytes('z'));
    await cache.delete('a:1');
    await waitFor(() => w.events.length === 3, 'snapshot and live changes');
    expect(describeChanges(w.events)).toEqual(['a:1=x@0', 'a:2=z@2', 'a:1-@3']);
    expect(() => cache.watch({ key: 'a' }, { kind: 'from', offset: 0 })).toThrow(WatchStartError);
    await cache.close();
  });

  it('an_in_memory_put_keeps_a_copy_even_of_a_node_buffer', async () => {
    // A Buffer's slice() is a view of the caller's memory: writing to it after the put must not
    // change the stored value, by either form of put.
    const cache = new EphemeralCache();
    const given = Buffer.from('abc');
    cache.putNow('now', given);
    await cache.put('later', given);
    given.write('xyz');
    expect(text(await cache.get('now'))).toBe('abc');
    expect(text(await cache.get('later'))).toBe('abc');
  });

  it('an_in_memory_put_handed_its_value_keeps_it_and_still_checks_key_and_size', async () => {
    const cache = new EphemeralCache();
    const value = bytes('v');
    cache.putNowHandedOver('k', value, { ttlMs: 0 });
    expect(await cache.get('k')).toBe(value);
    // The key check that no longer encodes a short key still refuses a long one.
    expect(() => cache.putNowHandedOver('\u{1F600}'.repeat(1025), value)).toThrow(
      ProjectionInputError,
    );
    expect(() => cache.putNow('k'.repeat(4097), value)).toThrow(ProjectionInputError);
    const tooLarge = new Uint8Array(CACHE_VALUE_BYTES_MAX + 1);
    expect(() => cache.putNowHandedOver('k', tooLarge)).toThrow(ProjectionInputError);
  });
});
