// Goal: the broker's hot-value map in front of a cache log never answers a value a write has
// replaced, stays within its byte bound, and honours expiry. Method: drive HotValues directly
// with the interleavings a get racing a put can produce (capture, write start/end, remember).
import { describe, expect, it } from 'vitest';
import { HotValues } from '../src/caches/hot-values.js';

const v = (s: string) => new TextEncoder().encode(s);
const hot = (s: string, expiresAtMillis = 0) => ({ value: v(s), expiresAtMillis });

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
    expect(new TextDecoder().decode(h.get('k', 0)!.value)).toBe('new');
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

  it('an_expired_hot_value_is_not_answered', () => {
    const h = new HotValues(1 << 20);
    h.remember('k', h.capture('k'), hot('v', 1000));
    expect(h.get('k', 999)).toBeDefined();
    expect(h.get('k', 1000)).toBeUndefined();
  });

  it('a_zero_byte_bound_remembers_nothing', () => {
    const h = new HotValues(0);
    h.remember('k', h.capture('k'), hot('v'));
    expect(h.get('k', 0)).toBeUndefined();
  });
});
