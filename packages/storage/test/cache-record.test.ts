// Goal: the cache record codec is byte-exact to wire-storage §3.7 and its decoder never throws
// anything but its typed error. Method: golden bytes, round trips, and fast-check fuzz over
// arbitrary and mutated payloads.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CacheRecordCorruptError } from '../src/errors.js';
import { PROJECTION_KEY_BYTES_MAX } from '../src/limits.js';
import { type CacheRecord, decodeCacheRecord, encodeCacheRecord } from '../src/cache/record.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('cache record codec', () => {
  it('a_cache_put_record_is_little_endian_with_a_fourteen_byte_header', () => {
    const bytes = encodeCacheRecord({
      op: 'put',
      key: 'ab',
      expiresAtMillis: 0x0102030405,
      value: new Uint8Array([9]),
    });
    expect(hex(bytes)).toBe('01' + '00' + '0504030201000000' + '02000000' + '6162' + '09');
  });

  it('a_compaction_copy_carries_its_version_after_the_header', () => {
    const bytes = encodeCacheRecord({
      op: 'put',
      key: 'k',
      expiresAtMillis: 0,
      value: new Uint8Array(),
      carriedVersion: 258,
    });
    expect(hex(bytes)).toBe(
      '02' + '00' + '0000000000000000' + '01000000' + '0201000000000000' + '6b',
    );
    expect(decodeCacheRecord(bytes).carriedVersion).toBe(258);
  });

  it('a_cache_delete_record_has_no_value_and_no_expiry', () => {
    const bytes = encodeCacheRecord({
      op: 'delete',
      key: 'k',
      expiresAtMillis: 0,
      value: new Uint8Array(),
    });
    expect(hex(bytes)).toBe('0101' + '0000000000000000' + '01000000' + '6b');
    expect(decodeCacheRecord(bytes)).toEqual({
      op: 'delete',
      key: 'k',
      expiresAtMillis: 0,
      value: new Uint8Array(),
    });
  });

  it('an_unknown_cache_record_version_or_op_is_corruption', () => {
    const good = encodeCacheRecord({
      op: 'put',
      key: 'k',
      expiresAtMillis: 0,
      value: new Uint8Array(),
    });
    for (const [at, byte] of [
      [0, 3],
      [0, 0],
      [1, 2],
    ] as const) {
      const bad = good.slice();
      bad[at] = byte;
      expect(() => decodeCacheRecord(bad)).toThrow(CacheRecordCorruptError);
    }
  });

  it('a_cache_key_length_beyond_the_bound_is_refused_before_allocation', () => {
    const bad = new Uint8Array(14);
    bad[0] = 1;
    new DataView(bad.buffer).setUint32(10, 0xffffffff, true);
    expect(() => decodeCacheRecord(bad)).toThrow(/exceeds/);
    new DataView(bad.buffer).setUint32(10, PROJECTION_KEY_BYTES_MAX, true);
    expect(() => decodeCacheRecord(bad)).toThrow(/bytes left/);
  });

  it('cache_records_round_trip', () => {
    const rec = fc.oneof(
      fc.record({
        op: fc.constant<'put'>('put'),
        key: fc.string({ maxLength: 40 }),
        expiresAtMillis: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        value: fc.uint8Array({ maxLength: 64 }),
        carriedVersion: fc.option(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), {
          nil: undefined,
        }),
      }),
      fc.record({
        op: fc.constant<'delete'>('delete'),
        key: fc.string({ maxLength: 40 }),
        expiresAtMillis: fc.constant(0),
        value: fc.constant(new Uint8Array()),
      }),
    );
    fc.assert(
      fc.property(rec, (r) => {
        const want: CacheRecord = { ...r };
        if (want.carriedVersion === undefined) delete want.carriedVersion;
        const got = decodeCacheRecord(encodeCacheRecord(want));
        expect({ ...got, value: Array.from(got.value) }).toEqual({
          ...want,
          value: Array.from(want.value),
        });
      }),
    );
  });

  it('the_cache_record_decoder_throws_only_its_typed_error', () => {
    const seed = encodeCacheRecord({
      op: 'put',
      key: 'key',
      expiresAtMillis: 5,
      value: new Uint8Array([1, 2, 3]),
      carriedVersion: 7,
    });
    const mutated = fc
      .array(fc.tuple(fc.nat(seed.length + 4), fc.integer({ min: 0, max: 255 })), { maxLength: 6 })
      .map((edits) => {
        const b = new Uint8Array(seed.length + 4);
        b.set(seed);
        for (const [at, v] of edits) b[at % b.length] = v;
        return b.subarray(0, edits.length % (b.length + 1));
      });
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 80 }), mutated), (bytes) => {
        try {
          decodeCacheRecord(bytes);
        } catch (err) {
          expect(err).toBeInstanceOf(CacheRecordCorruptError);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
