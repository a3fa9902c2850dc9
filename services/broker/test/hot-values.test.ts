// Goal: the broker's hot-value map in front of a cache log never answers a value a write has
// replaced, stays within its byte bound, and honours expiry. Method: drive HotValues directly
// with the interleavings a get racing a put can produce (capture, write start/end, remember).
import { describe, expect, it } from 'vitest';
import { tmpdir } from 'node:os';
import { cacheGet, cachePut, hotGetFrame } from '../src/caches/cache-requests.js';
import { CacheService } from '../src/caches/cache-service.js';
import { HotValues } from '../src/caches/hot-values.js';
import type { BrokerConfig, CacheConfig } from '../src/config/types.js';
import { jsonFrame } from '../src/session/codec.js';

const v = (s: string) => new TextEncoder().encode(s);
const hot = (s: string, expiresAtMillis = 0) => ({
  head: v(s),
  value: new Uint8Array(0),
  expiresAtMillis,
});
const text = (h: { head: Uint8Array } | undefined) =>
  h === undefined ? undefined : new TextDecoder().decode(h.head);

describe('HotValues', () => {
  it('a_read_that_raced_a_write_is_not_remembered', () => {
    const h = new HotValues(1 << 20);
    const s = h.scope();
    // A get captures, reads the old value; meanwhile a put starts and ends.
    const at = h.capture(s, 'k');
    h.invalidate(s, 'k'); // put starts
    h.invalidate(s, 'k'); // put ends
    h.remember(s, 'k', at, hot('old'));
    expect(h.get(s, 'k', 0)).toBeUndefined();
    // A read that started during the write is void too.
    h.invalidate(s, 'k');
    const during = h.capture(s, 'k');
    h.invalidate(s, 'k');
    h.remember(s, 'k', during, hot('maybe-old'));
    expect(h.get(s, 'k', 0)).toBeUndefined();
    // A read after the write is remembered.
    const after = h.capture(s, 'k');
    h.remember(s, 'k', after, hot('new'));
    expect(text(h.get(s, 'k', 0))).toBe('new');
  });

  it('a_write_forgets_the_remembered_value_at_once', () => {
    const h = new HotValues(1 << 20);
    const s = h.scope();
    h.remember(s, 'k', h.capture(s, 'k'), hot('v1'));
    h.invalidate(s, 'k');
    expect(h.get(s, 'k', 0)).toBeUndefined();
  });

  it('hot_values_stay_within_their_byte_bound_least_recent_out_first', () => {
    const h = new HotValues(4400);
    const s = h.scope();
    for (let i = 0; i < 10; i++)
      h.remember(s, `k${i}`, h.capture(s, `k${i}`), hot('x'.repeat(999)));
    const kept = Array.from({ length: 10 }, (_, i) => h.get(s, `k${i}`, 0) !== undefined);
    expect(kept.filter(Boolean).length).toBeLessThanOrEqual(4);
    expect(kept[9]).toBe(true);
    expect(kept[0]).toBe(false);
  });

  it('a_hot_value_read_since_it_was_remembered_outlives_older_unread_ones', () => {
    const h = new HotValues(4400);
    const s = h.scope();
    for (let i = 0; i < 4; i++) h.remember(s, `k${i}`, h.capture(s, `k${i}`), hot('x'.repeat(999)));
    expect(h.get(s, 'k0', 0)).toBeDefined(); // the oldest, but read
    h.remember(s, 'k4', h.capture(s, 'k4'), hot('x'.repeat(999)));
    expect(h.get(s, 'k0', 0)).toBeDefined();
    expect(h.get(s, 'k1', 0)).toBeUndefined(); // the oldest unread one went instead
    expect(h.get(s, 'k4', 0)).toBeDefined();
  });

  it('an_expired_hot_value_is_not_answered', () => {
    const h = new HotValues(1 << 20);
    const s = h.scope();
    h.remember(s, 'k', h.capture(s, 'k'), hot('v', 1000));
    expect(h.get(s, 'k', 999)).toBeDefined();
    expect(h.get(s, 'k', 1000)).toBeUndefined();
  });

  it('a_cleared_hot_map_answers_nothing_and_voids_reads_and_writes_in_flight', () => {
    const h = new HotValues(1 << 20);
    const s = h.scope();
    h.remember(s, 'a', h.capture(s, 'a'), hot('1'));
    const read = h.capture(s, 'b');
    const write = h.beginWrite(s, 'c');
    h.clear();
    expect(h.get(s, 'a', 0)).toBeUndefined();
    h.remember(s, 'b', read, hot('2'));
    h.endWrite(s, 'c', write, hot('3'));
    expect(h.get(s, 'b', 0)).toBeUndefined();
    expect(h.get(s, 'c', 0)).toBeUndefined();
  });

  it('one_key_in_two_scopes_is_two_values_under_one_byte_bound_and_one_clear', () => {
    const h = new HotValues(4400);
    const a = h.scope();
    const b = h.scope();
    h.remember(a, 'k', h.capture(a, 'k'), hot('a'));
    expect(text(h.get(a, 'k', 0))).toBe('a');
    expect(h.get(b, 'k', 0)).toBeUndefined();
    // A write in one scope leaves the other's value and marks alone.
    const readB = h.capture(b, 'k');
    h.endWrite(a, 'k', h.beginWrite(a, 'k'), hot('a2'));
    h.remember(b, 'k', readB, hot('b'));
    expect(text(h.get(a, 'k', 0))).toBe('a2');
    expect(text(h.get(b, 'k', 0))).toBe('b');
    // The byte bound and the eviction order span every scope: the oldest goes, whichever holds it.
    h.clear();
    for (let i = 0; i < 5; i++) {
      const s = i % 2 === 0 ? a : b;
      h.remember(s, `x${i}`, h.capture(s, `x${i}`), hot('x'.repeat(999)));
    }
    expect(h.get(a, 'x0', 0)).toBeUndefined();
    expect(h.get(b, 'x1', 0)).toBeDefined();
    expect(h.get(a, 'x4', 0)).toBeDefined();
    expect(h.get(a, 'x1', 0)).toBeUndefined();
    h.clear();
    expect(h.get(a, 'x2', 0)).toBeUndefined();
    expect(h.get(b, 'x3', 0)).toBeUndefined();
  });

  it('a_zero_byte_bound_remembers_nothing', () => {
    const h = new HotValues(0);
    const s = h.scope();
    h.remember(s, 'k', h.capture(s, 'k'), hot('v'));
    expect(h.get(s, 'k', 0)).toBeUndefined();
  });

  it('a_write_that_ran_alone_leaves_its_value_hot', () => {
    const h = new HotValues(1 << 20);
    const s = h.scope();
    h.remember(s, 'k', h.capture(s, 'k'), hot('old'));
    const begun = h.beginWrite(s, 'k');
    expect(h.get(s, 'k', 0)).toBeUndefined();
    h.endWrite(s, 'k', begun, hot('new'));
    expect(text(h.get(s, 'k', 0))).toBe('new');
  });

  it('a_write_overlapping_another_leaves_nothing_hot', () => {
    const h = new HotValues(1 << 20);
    const s = h.scope();
    // Two puts in flight at once: whichever lands last in the log is current, so neither
    // may leave its value behind, in either order of ending.
    for (const firstEnds of [true, false]) {
      const a = h.beginWrite(s, 'k');
      const b = h.beginWrite(s, 'k');
      if (firstEnds) {
        h.endWrite(s, 'k', a, hot('a'));
        expect(h.get(s, 'k', 0)).toBeUndefined();
        h.endWrite(s, 'k', b, hot('b'));
      } else {
        h.endWrite(s, 'k', b, hot('b'));
        expect(h.get(s, 'k', 0)).toBeUndefined();
        h.endWrite(s, 'k', a, hot('a'));
      }
      expect(h.get(s, 'k', 0)).toBeUndefined();
    }
    // A write that began and ended inside another one's span voids the outer one too.
    const outer = h.beginWrite(s, 'k');
    h.endWrite(s, 'k', h.beginWrite(s, 'k'), hot('inner'));
    h.endWrite(s, 'k', outer, hot('outer'));
    expect(h.get(s, 'k', 0)).toBeUndefined();
  });

  it('a_failed_write_leaves_nothing_hot', () => {
    const h = new HotValues(1 << 20);
    const s = h.scope();
    h.remember(s, 'k', h.capture(s, 'k'), hot('old'));
    h.endWrite(s, 'k', h.beginWrite(s, 'k'));
    expect(h.get(s, 'k', 0)).toBeUndefined();
  });

  it('a_read_overlapping_a_write_is_not_remembered_after_the_write_leaves_its_value', () => {
    const h = new HotValues(1 << 20);
    const s = h.scope();
    const begun = h.beginWrite(s, 'k');
    const read = h.capture(s, 'k'); // a get reads the log while the put is in flight
    h.endWrite(s, 'k', begun, hot('new'));
    h.remember(s, 'k', read, hot('old'));
    expect(text(h.get(s, 'k', 0))).toBe('new');
  });

  it('a_config_replacing_another_of_the_same_cache_keeps_its_hot_values_and_marks', () => {
    const cfg = {
      caches: [],
      durable: { data_dir: tmpdir() },
      broker: { cache_hot_bytes: 1 << 20 },
    } as unknown as BrokerConfig;
    const svc = new CacheService(cfg);
    const h = svc.hot!;
    const first = { tenant: 't', namespace: 'n', name: 'c', shards: 2 } as CacheConfig;
    const second = { ...first };
    const other = { ...first, name: 'd' };
    // A get under the first config reads while a put under the one replacing it writes.
    const read = h.capture(svc.hotScope(first, 1), 'k');
    const write = h.beginWrite(svc.hotScope(second, 1), 'k');
    h.endWrite(svc.hotScope(second, 1), 'k', write);
    h.remember(svc.hotScope(first, 1), 'k', read, hot('stale'));
    expect(h.get(svc.hotScope(second, 1), 'k', 0)).toBeUndefined();
    h.remember(svc.hotScope(first, 1), 'k', h.capture(svc.hotScope(first, 1), 'k'), hot('v'));
    expect(text(h.get(svc.hotScope(second, 1), 'k', 0))).toBe('v');
    expect(h.get(svc.hotScope(second, 0), 'k', 0)).toBeUndefined();
    expect(h.get(svc.hotScope(other, 1), 'k', 0)).toBeUndefined();
  });
});

describe('hot values of an in-memory cache', () => {
  it('an_in_memory_cache_answers_a_get_after_a_put_from_its_hot_values', async () => {
    const cache = { tenant: 't', namespace: 'n', name: 'c', shards: 1 } as CacheConfig;
    const cfg = {
      caches: [cache],
      durable: { data_dir: null },
      broker: { cache_hot_bytes: 1 << 20 },
    } as unknown as BrokerConfig;
    const svc = new CacheService(cfg);
    const auth = { tenant: 't', flags: 0, features: 0, featuresHi: 0, negotiating: false };
    const scope = { tenant_id: 't', namespace: 'n', cache: 'c', key: 'k' };
    const get = { type: 'cache_get' as const, ...scope, request_id: 7 };
    expect(hotGetFrame(svc, auth, get)).toBeUndefined();
    await cachePut(svc, auth, { type: 'cache_put', ...scope, value: v('v1'), request_id: 1 });
    // A put leaves nothing to encode; the first get reads the cache and remembers its answer,
    // and the next is the frame the general path encodes for the same get.
    expect(hotGetFrame(svc, auth, get)).toBeUndefined();
    const general = jsonFrame(await cacheGet(svc, auth, get));
    expect(hotGetFrame(svc, auth, get)).toEqual(general);
    // A later put forgets it: no get is answered with the replaced value.
    await cachePut(svc, auth, { type: 'cache_put', ...scope, value: v('v2'), request_id: 2 });
    expect(hotGetFrame(svc, auth, get)).toBeUndefined();
    expect(new TextDecoder().decode(jsonFrame(await cacheGet(svc, auth, get)))).toContain(
      Buffer.from('v2').toString('base64'),
    );
    expect(hotGetFrame(svc, auth, get)).toEqual(jsonFrame(await cacheGet(svc, auth, get)));
    await svc.close();
  });
});
