// Goal: a cache put forwarded to its shard's owner carries its TTL in the internal frame's
// `ttl_ms`, which an owner of the previous release reads as the reference does: 0 is "none given"
// (the cache's default TTL applies), any other value a TTL it checks against CACHE_TTL_MS_MAX.
// An explicit `ttlMs: 0` (never expires) goes as "never" (FORWARD_TTL_NEVER_MS) only where it
// differs from none given, on a cache with a default TTL; elsewhere as 0, so an owner of the
// previous release stores it as meant instead of refusing the value past its bound (found by a
// review: every such put failed `bad_ttl` during a rolling upgrade).
// Method: the forward half's TTL mapping, for each case.
import { describe, expect, it } from 'vitest';
import { FORWARD_TTL_NEVER_MS, forwardedTtl } from '../src/caches/forward.js';
import { CACHE_TTL_MS_MAX } from '../src/limits.js';

describe('a forwarded put and its TTL', () => {
  it('a_put_with_ttl_0_is_forwarded_as_0_unless_its_cache_has_a_default_ttl', () => {
    // No default TTL: an explicit 0 and none given mean the same, and travel as 0.
    expect(forwardedTtl(0, false)).toBe(0);
    expect(forwardedTtl(undefined, false)).toBe(0);
    // A default TTL: none given is 0 (the owner applies the default), an explicit 0 is never.
    expect(forwardedTtl(undefined, true)).toBe(0);
    expect(forwardedTtl(0, true)).toBe(FORWARD_TTL_NEVER_MS);
    expect(FORWARD_TTL_NEVER_MS).toBeGreaterThan(CACHE_TTL_MS_MAX);
    // Any other TTL travels as itself.
    for (const ttl of [1, 60_000, CACHE_TTL_MS_MAX]) {
      expect(forwardedTtl(ttl, false)).toBe(ttl);
      expect(forwardedTtl(ttl, true)).toBe(ttl);
    }
  });
});
