// Goal: the broker's hot-value map in front of a cache log never answers a value a write has
// replaced, stays within its byte bound, and honours expiry. Method: drive HotValues directly
// with the interleavings a get racing a put can produce (capture, write start/end, remember).
import { describe, expect, it } from 'vitest';
import { HotValues } from '../src/caches/hot-values.js';

const v = (s: string) => new TextEncoder().encode(s);
const hot = (s: string, expiresAtMillis = 0) => ({ head: v(s), expiresAtMillis });
const text = (h: { head: Uint8Array } | undefined) =>
  h === undefined ? undefined : new TextDecoder().decode(h.head);

describe('HotValues', () => {
  it('a_read_that_raced_a_write_is_not_remembered', () => {
    const h = new HotValues(1 << 20);
    // A get captures, reads the old value; meanwhile a put starts and ends.
    const at = h.capture('k');
    h.invalidate('k'); // put starts
    h.invalidate('k'); // put ends
    h.remember('k', at, hot('old'));
    expect(h.get('k', 0)).toBeUndefined();
    // A read that started during the write is void too.
    h.invalidate('k');
    const during = h.capture('k');
    h.invalidate('k');
    h.remember('k', during, hot('maybe-old'));
    expect(h.get('k', 0)).toBeUndefined();
    // A read after the write is remembered.
    const after = h.capture('k');
    h.remember('k', after, hot('new'));
    expect(text(h.get('k', 0))).toBe('new');
  });

  it('a_write_forgets_the_remembered_value_at_once', () => {
    const h = new HotValues(1 << 20);
    h.remember('k', h.capture('k'), hot('v1'));
    h.invalidate('k');
    expect(h.get('k', 0)).toBeUndefined();
  });

  it('hot_values_stay_within_their_byte_bound_least_recent_out_first', () => {
    const h = new HotValues(4400);
    for (let i = 0; i < 10; i++) h.remember(`k${i}`, h.capture(`k${i}`), hot('x'.repeat(999)));
    const kept = Array.from({ length: 10 }, (_, i) => h.get(`k${i}`, 0) !== undefined);
    expect(kept.filter(Boolean).length).toBeLessThanOrEqual(4);
    expect(kept[9]).toBe(true);
    expect(kept[0]).toBe(false);
  });

  it('a_hot_value_read_since_it_was_remembered_outlives_older_unread_ones', () => {
    const h = new HotValues(4400);
    for (let i = 0; i < 4; i++) h.remember(`k${i}`, h.capture(`k${i}`), hot('x'.repeat(999)));
    expect(h.get('k0', 0)).toBeDefined(); // the oldest, but read
    h.remember('k4', h.capture('k4'), hot('x'.repeat(999)));
    expect(h.get('k0', 0)).toBeDefined();
    expect(h.get('k1', 0)).toBeUndefined(); // the oldest unread one went instead
    expect(h.get('k4', 0)).toBeDefined();
  });

  it('an_expired_hot_value_is_not_answered', () => {
    const h = new HotValues(1 << 20);
    h.remember('k', h.capture('k'), hot('v', 1000));
    expect(h.get('k', 999)).toBeDefined();
    expect(h.get('k', 1000)).toBeUndefined();
  });

  it('a_cleared_hot_map_answers_nothing_and_voids_reads_and_writes_in_flight', () => {
    const h = new HotValues(1 << 20);
    h.remember('a', h.capture('a'), hot('1'));
    const read = h.capture('b');
    const write = h.beginWrite('c');
    h.clear();
    expect(h.get('a', 0)).toBeUndefined();
    h.remember('b', read, hot('2'));
    h.endWrite('c', write, hot('3'));
    expect(h.get('b', 0)).toBeUndefined();
    expect(h.get('c', 0)).toBeUndefined();
  });

  it('a_zero_byte_bound_remembers_nothing', () => {
    const h = new HotValues(0);
    h.remember('k', h.capture('k'), hot('v'));
    expect(h.get('k', 0)).toBeUndefined();
  });

  it('a_write_that_ran_alone_leaves_its_value_hot', () => {
    const h = new HotValues(1 << 20);
    h.remember('k', h.capture('k'), hot('old'));
    const begun = h.beginWrite('k');
    expect(h.get('k', 0)).toBeUndefined();
    h.endWrite('k', begun, hot('new'));
    expect(text(h.get('k', 0))).toBe('new');
  });

  it('a_write_overlapping_another_leaves_nothing_hot', () => {
    const h = new HotValues(1 << 20);
    // Two puts in flight at once: whichever lands last in the log is current, so neither
    // may leave its value behind, in either order of ending.
    for (const firstEnds of [true, false]) {
      const a = h.beginWrite('k');
      const b = h.beginWrite('k');
      if (firstEnds) {
        h.endWrite('k', a, hot('a'));
        expect(h.get('k', 0)).toBeUndefined();
        h.endWrite('k', b, hot('b'));
      } else {
        h.endWrite('k', b, hot('b'));
        expect(h.get('k', 0)).toBeUndefined();
        h.endWrite('k', a, hot('a'));
      }
      expect(h.get('k', 0)).toBeUndefined();
    }
    // A write that began and ended inside another one's span voids the outer one too.
    const outer = h.beginWrite('k');
    h.endWrite('k', h.beginWrite('k'), hot('inner'));
    h.endWrite('k', outer, hot('outer'));
    expect(h.get('k', 0)).toBeUndefined();
  });

  it('a_failed_write_leaves_nothing_hot', () => {
    const h = new HotValues(1 << 20);
    h.remember('k', h.capture('k'), hot('old'));
    h.endWrite('k', h.beginWrite('k'));
    expect(h.get('k', 0)).toBeUndefined();
  });

  it('a_read_overlapping_a_write_is_not_remembered_after_the_write_leaves_its_value', () => {
    const h = new HotValues(1 << 20);
    const begun = h.beginWrite('k');
    const read = h.capture('k'); // a get reads the log while the put is in flight
    h.endWrite('k', begun, hot('new'));
    h.remember('k', read, hot('old'));
    expect(text(h.get('k', 0))).toBe('new');
  });
});
