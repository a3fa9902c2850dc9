// Goal: the counter record codec is byte-exact to wire-storage §3.7 (exact length check) and its
// decoder throws only its typed error. Method: golden bytes, round trips, fast-check fuzz.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CounterRecordCorruptError } from '../src/errors.js';
import {
  I64_MAX,
  I64_MIN,
  decodeCounterRecord,
  encodeCounterRecord,
} from '../src/counter/record.js';

describe('counter record codec', () => {
  it('a_counter_delta_record_is_little_endian_with_an_exact_length', () => {
    const bytes = encodeCounterRecord({ op: 'delta', key: 'k', value: -2n });
    expect(Buffer.from(bytes).toString('hex')).toBe(
      '0100' + 'feffffffffffffff' + '01000000' + '6b',
    );
    const longer = new Uint8Array(bytes.length + 1);
    longer.set(bytes);
    expect(() => decodeCounterRecord(longer)).toThrow(CounterRecordCorruptError);
  });

  it('counter_records_round_trip_at_the_i64_edges', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<'delta' | 'checkpoint'>('delta', 'checkpoint'),
        fc.string({ maxLength: 30 }),
        fc.oneof(fc.bigInt({ min: I64_MIN, max: I64_MAX }), fc.constantFrom(I64_MIN, I64_MAX, 0n)),
        (op, key, value) => {
          expect(decodeCounterRecord(encodeCounterRecord({ op, key, value }))).toEqual({
            op,
            key,
            value,
          });
        },
      ),
    );
  });

  it('the_counter_record_decoder_throws_only_its_typed_error', () => {
    const seed = encodeCounterRecord({ op: 'checkpoint', key: 'abc', value: 99n });
    const mutated = fc
      .array(fc.tuple(fc.nat(seed.length + 2), fc.integer({ min: 0, max: 255 })), { maxLength: 5 })
      .map((edits) => {
        const b = new Uint8Array(seed.length + 2);
        b.set(seed);
        for (const [at, v] of edits) b[at % b.length] = v;
        return b.subarray(0, seed.length - 2 + (edits.length % 5));
      });
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 40 }), mutated), (bytes) => {
        try {
          decodeCounterRecord(bytes);
        } catch (err) {
          expect(err).toBeInstanceOf(CounterRecordCorruptError);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
