// Goal: the shared checksums match their published check values, and assert stays on.
import { describe, expect, it } from 'vitest';
import {
  AssertionError,
  POOLED_COPY_BYTES_MAX,
  assert,
  copyBytes,
  crc32,
  fnv1a64,
  ownBytes,
} from '../src/index.js';

const enc = new TextEncoder();

describe('common', () => {
  it('crc32_matches_the_ieee_check_value', () => {
    expect(crc32(enc.encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
  });

  it('crc32_continues_across_chunks', () => {
    const all = enc.encode('the quick brown fox jumps over the lazy dog');
    const split = crc32(all.subarray(11), crc32(all.subarray(0, 11)));
    expect(split).toBe(crc32(all));
  });

  it('fnv1a64_matches_its_check_value', () => {
    expect(fnv1a64(enc.encode('a'))).toBe(0xaf63dc4c8601ec8cn);
    expect(fnv1a64(new Uint8Array(0))).toBe(0xcbf29ce484222325n);
  });

  it('assert_throws_an_assertion_error_when_false', () => {
    expect(() => assert(false, 'boom')).toThrow(AssertionError);
    expect(() => assert(true)).not.toThrow();
  });

  it('owned_bytes_are_exactly_their_size_and_later_ones_never_overlap_them', () => {
    const kept = Array.from({ length: 64 }, (_, i) => {
      const b = ownBytes(100 + i);
      expect(Buffer.isBuffer(b)).toBe(false);
      expect(b.length).toBe(100 + i);
      b.fill(i);
      return b;
    });
    // Sixty-four allocations span several pool slabs; none may have written over another.
    for (const [i, b] of kept.entries()) expect(b.every((x) => x === i)).toBe(true);
    const big = ownBytes(POOLED_COPY_BYTES_MAX + 1);
    expect(big.byteOffset).toBe(0);
    expect(big.buffer.byteLength).toBe(POOLED_COPY_BYTES_MAX + 1);
  });

  it('copied_bytes_are_a_plain_copy_even_of_a_node_buffer', () => {
    const b = Buffer.from([1, 2, 3, 4]).subarray(1);
    const c = copyBytes(b);
    b[0] = 9;
    expect(Buffer.isBuffer(c)).toBe(false);
    expect([...c]).toEqual([2, 3, 4]);
  });
});
