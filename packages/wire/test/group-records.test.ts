// Goal: the binary group_records layout (flag 0x8000) decodes only what it was given: counts
// are checked before anything is allocated, records are views over the frame's bytes, and an
// answer the layout cannot carry is refused by the encoder (the broker sends it as JSON).
// Method: hand-built payloads and fast-check over arbitrary bytes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CountTooLargeError,
  FLAG_BINARY_GROUP_RECORDS,
  FieldRangeError,
  GROUP_RECORDS_BINARY_MAX,
  InvalidEnumError,
  TrailingBytesError,
  TruncatedError,
  WireError,
  decodeFrame,
  decodeFramePayload,
  decodeGroupRecords,
  encodeGroupRecordsFrame,
  fitsBinaryGroupRecords,
} from '../src/index.js';

/** u64 request_id, u32 count, then the given bytes. */
function head(requestId: number, count: number, rest: number[] = []): Uint8Array {
  const out = new Uint8Array(12 + rest.length);
  const v = new DataView(out.buffer);
  v.setUint32(4, requestId);
  v.setUint32(8, count);
  out.set(rest, 12);
  return out;
}

describe('binary group_records', () => {
  it('a_record_count_beyond_the_bytes_left_is_refused_before_allocating', () => {
    // Four billion records declared in 12 bytes: refused from the count alone.
    expect(() => decodeGroupRecords(FLAG_BINARY_GROUP_RECORDS, head(1, 0xffff_ffff))).toThrow(
      CountTooLargeError,
    );
    expect(() =>
      decodeGroupRecords(FLAG_BINARY_GROUP_RECORDS, head(1, GROUP_RECORDS_BINARY_MAX + 1)),
    ).toThrow(CountTooLargeError);
  });

  it('a_payload_length_past_the_frame_is_refused', () => {
    const rec = [0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff];
    expect(() => decodeGroupRecords(FLAG_BINARY_GROUP_RECORDS, head(1, 1, rec))).toThrow(
      TruncatedError,
    );
  });

  it('bytes_after_the_last_record_are_refused', () => {
    expect(() => decodeGroupRecords(FLAG_BINARY_GROUP_RECORDS, head(1, 0, [0]))).toThrow(
      TrailingBytesError,
    );
  });

  it('group_records_are_decoded_only_under_their_flag', () => {
    expect(() => decodeGroupRecords(0, head(1, 0))).toThrow(InvalidEnumError);
  });

  it('decoded_payloads_are_views_over_the_frame', () => {
    const frame = encodeGroupRecordsFrame({
      type: 'group_records',
      request_id: 3,
      records: [
        { offset: 10, payload: new Uint8Array([1, 2]), attempts: 1, skipped_before: 0 },
        { offset: 11, payload: new Uint8Array([3]), attempts: 2, skipped_before: 0 },
      ],
    });
    const decoded = decodeFramePayload(decodeFrame(frame));
    expect(decoded.layout).toBe('group_records');
    const msg = (decoded as { message: { records: { payload: Uint8Array }[] } }).message;
    expect(msg.records.map((r) => r.payload.buffer === frame.buffer)).toEqual([true, true]);
    expect(msg.records.map((r) => [...r.payload])).toEqual([[1, 2], [3]]);
  });

  it('an_answer_the_layout_cannot_carry_is_refused_by_the_encoder', () => {
    const msg = {
      type: 'group_records' as const,
      request_id: 3,
      records: [{ offset: 10, payload: new Uint8Array(1), attempts: 1, skipped_before: 2 }],
    };
    expect(fitsBinaryGroupRecords(msg)).toBe(false);
    expect(() => encodeGroupRecordsFrame(msg)).toThrow(FieldRangeError);
    const stamped = {
      ...msg,
      records: [{ ...msg.records[0]!, skipped_before: 0, timestamp_micros: 1 }],
    };
    expect(fitsBinaryGroupRecords(stamped)).toBe(false);
  });

  it('arbitrary_bytes_decode_as_group_records_or_fail_with_a_wire_error', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 120 }), (bytes) => {
        try {
          const m = decodeGroupRecords(FLAG_BINARY_GROUP_RECORDS, bytes);
          // What decodes re-encodes to the same bytes.
          expect([...encodeGroupRecordsFrame(m).subarray(12)]).toEqual([...bytes]);
        } catch (err) {
          if (!(err instanceof WireError)) throw err;
        }
      }),
    );
  });
});
