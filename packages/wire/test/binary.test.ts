// Goal: the binary layouts match the reference byte for byte with every modifier, and
// refuse invalid combinations and lying counts with typed errors. Method: expected bytes
// written out by hand from the layout description, then encode and decode against them.
import { describe, expect, it } from 'vitest';
import {
  CountTooLargeError,
  FieldRangeError,
  InvalidEnumError,
  InvalidFlagCombinationError,
  InvalidUtf8Error,
  OffsetOutOfRangeError,
  TrailingBytesError,
  TruncatedError,
  decodeEventBatch,
  decodeEventBatchPieces,
  decodeFrame,
  decodeFramePayload,
  decodePublishAck,
  decodePublishBatch,
  encodeEventBatch,
  encodeEventBatchHead,
  encodePublishAck,
  decodePublishBatchList,
  decodePublishBatchListPieces,
  encodePublishBatch,
  payloadListViews,
} from '../src/index.js';
import { errorOf, hex, unhex, utf8 } from './helpers.js';

const BODY = '0002 7431 0007 64656661756c74 0004 64656d6f 00000001 00000005 68656c6c6f';
const SCOPE = { tenantId: 't1', namespace: 'default', stream: 'demo' };

describe('binary publish batch', () => {
  it('repeated_string_fields_read_and_write_as_the_codec_would_and_bad_utf8_still_fails', () => {
    // Recent tenant, namespace and stream strings are kept with their bytes on both sides: the
    // same bytes must give the same text, other bytes of the same length their own, and bytes
    // that are not UTF-8 the typed error even when a kept string has their length.
    const scopes = [SCOPE, { ...SCOPE, stream: 'demp' }, { ...SCOPE, stream: 'dému' }, SCOPE];
    for (let round = 0; round < 3; round++) {
      for (const scope of scopes) {
        const frame = encodePublishBatch({ ...scope, payloads: [utf8('x')] });
        const batch = decodePublishBatch(frame[7]!, frame.subarray(12));
        expect(batch).toMatchObject(scope);
      }
    }
    const frame = encodePublishBatch({ ...SCOPE, payloads: [utf8('x')] });
    const bad = frame.slice();
    const at = bad.indexOf(0x64, 12 + 2 + 2 + 2 + 7 + 2); // the stream's 'd'
    bad[at] = 0xff;
    expect(() => decodePublishBatch(bad[7]!, bad.subarray(12))).toThrow(InvalidUtf8Error);
  });

  it('a_kept_string_read_from_a_node_buffer_is_not_changed_by_rewriting_that_buffer', () => {
    // A Buffer's slice() is a view: a kept copy made with it would follow the memory the frame
    // arrived in, and other bytes written there later would read as the string kept for it.
    const first = { ...SCOPE, stream: 'kept-from-a-buffer' }; // no other test reads this one
    const frame = Buffer.from(encodePublishBatch({ ...first, payloads: [utf8('x')] }));
    expect(decodePublishBatch(frame[7]!, frame.subarray(12))).toMatchObject(first);
    const other = { ...SCOPE, stream: 'read-after-a-write' };
    frame.set(encodePublishBatch({ ...other, payloads: [utf8('x')] }));
    const again = Buffer.from(frame);
    expect(decodePublishBatch(again[7]!, again.subarray(12))).toMatchObject(other);
  });

  it('the_acked_keyed_batch_matches_the_reference_payload', () => {
    const frame = encodePublishBatch({
      ...SCOPE,
      payloads: [utf8('hello')],
      key: utf8('k7'),
      requestId: 7,
      ackMode: 'per_batch',
    });
    const expected = `0000000000000007 02 0002 6b37 ${BODY}`;
    expect(hex(frame)).toBe(`464c5831 0001 0049 0000002d ${expected}`.replace(/ /g, ''));
  });

  it('an_idempotent_batch_puts_producer_and_sequence_before_the_key', () => {
    const batch = {
      ...SCOPE,
      payloads: [utf8('hello')],
      key: utf8('k7'),
      requestId: 7,
      ackMode: 'per_batch' as const,
      producerId: 0xfedcba9876543210n,
      sequence: 3,
    };
    const frame = encodePublishBatch(batch);
    const expected = `0000000000000007 02 fedcba9876543210 0000000000000003 0002 6b37 ${BODY}`;
    const { flags, payload } = decodeFrame(frame);
    expect(flags).toBe(0x0149);
    expect(hex(payload)).toBe(expected.replace(/ /g, ''));
    expect(decodePublishBatch(flags, payload)).toEqual(batch);
  });

  it('a_batch_above_the_unzeroed_size_holds_exactly_its_own_bytes', () => {
    // From 64 KiB the writer's buffer is not zeroed first: dirty the allocator with a large
    // buffer of 0xff, drop it, and check a large encoding decodes to exactly what was encoded
    // (the writer also asserts it wrote every byte of its buffer).
    let dirt: Uint8Array | null = Buffer.allocUnsafeSlow(1 << 20).fill(0xff);
    expect(dirt[0]).toBe(0xff);
    dirt = null;
    const batch = {
      ...SCOPE,
      payloads: Array.from({ length: 96 }, (_, i) => new Uint8Array(1024).fill(i)),
      requestId: 9,
      ackMode: 'per_batch' as const,
    };
    const big = encodePublishBatch(batch);
    expect(big.byteLength).toBeGreaterThan(64 * 1024);
    const { flags, payload } = decodeFrame(big);
    expect(decodePublishBatch(flags, payload)).toEqual(batch);
  });

  it('a_batch_encoded_into_a_dirty_reused_buffer_is_the_batch_encoded_fresh', () => {
    // A client reuses a written frame's buffer for its next batch (the QUIC publish path): the
    // encoder is handed exactly the frame's bytes, still holding the last frame, and must
    // overwrite every one of them.
    const batch = {
      ...SCOPE,
      payloads: Array.from({ length: 40 }, (_, i) => new Uint8Array(1000 + i).fill(i)),
      requestId: 11,
      ackMode: 'per_batch' as const,
    };
    const fresh = encodePublishBatch(batch);
    const reused = new Uint8Array(fresh.length + 4096).fill(0xee);
    let asked = -1;
    const frame = encodePublishBatch(batch, (size) => {
      asked = size;
      return reused.subarray(0, size);
    });
    expect(asked).toBe(fresh.length);
    expect(frame.buffer).toBe(reused.buffer);
    expect(hex(frame)).toBe(hex(fresh));
    // null: the encoder allocates as it would without the callback.
    expect(hex(encodePublishBatch(batch, () => null))).toBe(hex(fresh));
  });

  it('an_empty_key_is_carried_as_a_real_key', () => {
    const frame = encodePublishBatch({ ...SCOPE, payloads: [], key: new Uint8Array(0) });
    const { flags, payload } = decodeFrame(frame);
    expect(flags).toBe(0x0041);
    expect(decodePublishBatch(flags, payload).key).toEqual(new Uint8Array(0));
  });

  it('a_count_larger_than_the_remaining_bytes_is_refused_before_allocation', () => {
    const payload = unhex('0002 7431 0007 64656661756c74 0004 64656d6f ffffffff');
    expect(() => decodePublishBatch(0x0001, payload)).toThrow(CountTooLargeError);
  });

  it('the_list_decoder_refuses_what_the_eager_decoder_refuses', () => {
    const good = decodeFrame(encodePublishBatch({ ...SCOPE, payloads: [utf8('hello')] })).payload;
    const lying = new Uint8Array([...good.subarray(0, good.length - 10), 0xff, 0xff, 0xff, 0xff]);
    const bad = [lying, ...Array.from({ length: good.length }, (_, cut) => good.subarray(0, cut))];
    for (const payload of bad) {
      const eager = errorOf(() => decodePublishBatch(0x0001, payload));
      expect(eager).not.toBeNull();
      expect(errorOf(() => decodePublishBatchList(0x0001, payload))).toBe(eager);
    }
    expect(() => decodePublishBatchList(0x0001, new Uint8Array([...good, 0]))).toThrow(
      TrailingBytesError,
    );
  });

  it('truncated_and_overlong_batches_are_typed_errors', () => {
    const body = unhex(BODY);
    expect(() => decodePublishBatch(0x0001, body.subarray(0, body.length - 1))).toThrow(
      TruncatedError,
    );
    expect(() => decodePublishBatch(0x0001, new Uint8Array([...body, 0]))).toThrow(
      TrailingBytesError,
    );
  });

  it('an_undefined_ack_mode_byte_is_refused', () => {
    const payload = unhex(`0000000000000007 03 ${BODY}`);
    expect(() => decodePublishBatch(0x0009, payload)).toThrow(InvalidEnumError);
  });

  it('idempotent_without_acked_is_refused', () => {
    expect(() => decodePublishBatch(0x0101, unhex(BODY))).toThrow(InvalidFlagCombinationError);
    expect(() =>
      encodePublishBatch({ ...SCOPE, payloads: [], producerId: 1n, sequence: 0 }),
    ).toThrow(FieldRangeError);
  });

  it('a_request_id_beyond_the_safe_range_is_a_typed_error', () => {
    const payload = unhex(`0020000000000000 02 ${BODY}`);
    expect(() => decodePublishBatch(0x0009, payload)).toThrow(OffsetOutOfRangeError);
  });
});

describe('binary publish ack', () => {
  it('the_ok_ack_matches_the_reference_frame', () => {
    const frame = encodePublishAck({ status: 'ok', requestId: 7, message: '' });
    expect(hex(frame)).toBe('464c5831000100100000000b0000000000000000070000');
  });

  it('a_forwarded_ok_ack_carries_owner_then_offset_last', () => {
    const ack = {
      status: 'ok' as const,
      requestId: 1,
      message: '',
      owner: { nodeId: 'b2', addr: 'h:1', generation: 4 },
      offset: 99,
    };
    const { flags, payload } = decodeFrame(encodePublishAck(ack));
    expect(flags).toBe(0x1090);
    const expected =
      '00 0000000000000001 0000 0002 6232 0003 683a31 0000000000000004 0000000000000063';
    expect(hex(payload)).toBe(expected.replace(/ /g, ''));
    expect(decodePublishAck(flags, payload)).toEqual(ack);
  });

  it('an_owner_with_no_published_address_decodes_without_one', () => {
    const payload = unhex('00 0000000000000001 0000 0002 6232 0000 0000000000000004');
    expect(decodePublishAck(0x0090, payload).owner).toEqual({ nodeId: 'b2', generation: 4 });
  });

  it('a_failed_ack_carries_code_retry_and_detail', () => {
    const ack = {
      status: 'error' as const,
      requestId: 9,
      message: 'moving',
      code: 5,
      retry: 1,
      reason: 'moving',
      retryAfterMs: 250,
    };
    const { flags, payload } = decodeFrame(encodePublishAck(ack));
    expect(flags).toBe(0x0610);
    const expected =
      '01 0000000000000009 0006 6d6f76696e67 0005 01 0006 6d6f76696e67 00000000000000fa';
    expect(hex(payload)).toBe(expected.replace(/ /g, ''));
    expect(decodePublishAck(flags, payload)).toEqual(ack);
  });

  it('an_unknown_error_code_and_retry_byte_still_decode', () => {
    const payload = unhex('01 0000000000000009 0000 00ff 09');
    expect(decodePublishAck(0x0210, payload)).toMatchObject({ code: 255, retry: 9 });
  });

  it('a_code_on_a_successful_ack_is_refused', () => {
    const payload = unhex('00 0000000000000009 0000 0005 01');
    expect(() => decodePublishAck(0x0210, payload)).toThrow(InvalidFlagCombinationError);
    expect(() => decodePublishAck(0x0010, unhex('02 0000000000000009 0000'))).toThrow(
      InvalidEnumError,
    );
  });
});

describe('binary event batch', () => {
  it('a_shared_batch_with_every_modifier_matches_the_layout', () => {
    const batch = {
      baseOffset: 10,
      skippedBefore: 2,
      publisher: 'alice',
      timestampsMicros: [1000, 1001],
      payloads: [utf8('a'), utf8('bc')],
    };
    const { flags, payload } = decodeFrame(encodeEventBatch(batch));
    expect(flags).toBe(0x0004 | 0x0020 | 0x0800 | 0x2000 | 0x4000);
    const expected =
      '000000000000000a 0000000000000002 05 616c696365 00000002' +
      ' 00000000000003e8 00000001 61 00000000000003e9 00000002 6263';
    expect(hex(payload)).toBe(expected.replace(/ /g, ''));
    expect(decodeEventBatch(flags, payload)).toEqual(batch);
  });

  it('a_publish_list_forwarded_behind_an_event_head_is_the_encoded_event_batch', () => {
    const payloads = [utf8('a'), utf8(''), utf8('xyz')];
    const pub = decodeFrame(encodePublishBatch({ ...SCOPE, payloads, key: utf8('k') }));
    const lazy = decodePublishBatchList(pub.flags, pub.payload);
    const { payloads: eager, ...rest } = decodePublishBatch(pub.flags, pub.payload);
    expect(lazy).toMatchObject(rest);
    expect(lazy.payloads).toMatchObject({ count: 3, bytes: 4, listBytes: 20 });
    expect(payloadListViews(lazy.payloads)).toEqual(eager);
    const [list] = lazy.payloads.list;
    expect(lazy.payloads.list).toHaveLength(1);
    expect(list!.buffer).toBe(pub.payload.buffer); // a view, not a copy
    // In pieces (the frame as it came off a stream), the same list, as views of the pieces.
    const pieces = [pub.payload.slice(0, 23), pub.payload.slice(23, 30), pub.payload.slice(30)];
    const split = decodePublishBatchListPieces(pub.flags, pieces, pub.payload.length);
    expect(split).toMatchObject(rest);
    expect(payloadListViews(split.payloads)).toEqual(eager);
    expect(new Uint8Array(split.payloads.list.flatMap((p) => [...p]))).toEqual(list);
    for (const baseOffset of [undefined, 41]) {
      const head = encodeEventBatchHead(
        baseOffset === undefined ? {} : { baseOffset },
        list!.length,
      );
      const joined = new Uint8Array([...head, ...list!]);
      const whole = encodeEventBatch(
        baseOffset === undefined ? { payloads } : { baseOffset, payloads },
      );
      expect(hex(joined)).toBe(hex(whole));
    }
  });

  it('a_split_event_batch_copies_only_the_event_that_straddles_two_pieces', () => {
    const payloads = [utf8('aaaa'), utf8('bbbb'), utf8('cccc')];
    const { flags, payload } = decodeFrame(encodeEventBatch({ baseOffset: 1, payloads }));
    // base_offset 8 + count 4, then 8 bytes per event: cut inside the second event.
    const pieces = [payload.slice(0, 25), payload.slice(25)];
    const got = decodeEventBatchPieces(flags, pieces, payload.length).payloads;
    expect(got).toEqual(payloads);
    expect(got[0]!.buffer).toBe(pieces[0]!.buffer);
    expect(got[1]!.buffer).not.toBe(pieces[0]!.buffer);
    expect(got[1]!.buffer).not.toBe(pieces[1]!.buffer);
    expect(got[2]!.buffer).toBe(pieces[1]!.buffer);
  });

  it('a_straddling_event_copy_is_exactly_its_bytes_and_later_decodes_leave_it_alone', () => {
    const payloads = Array.from({ length: 40 }, (_, i) => new Uint8Array(300).fill(i));
    const { flags, payload } = decodeFrame(encodeEventBatch({ baseOffset: 1, payloads }));
    // Cut every 1,000 bytes: about one event in three straddles two pieces and is copied.
    const cut = (p: Uint8Array) => {
      const out: Uint8Array[] = [];
      for (let at = 0; at < p.length; at += 1000) out.push(p.slice(at, at + 1000));
      return out;
    };
    const first = decodeEventBatchPieces(flags, cut(payload), payload.length).payloads;
    const other = encodeEventBatch({
      baseOffset: 1,
      payloads: payloads.map(() => new Uint8Array(300).fill(0xee)),
    });
    const o = decodeFrame(other);
    decodeEventBatchPieces(o.flags, cut(o.payload), o.payload.length);
    expect(first.every((p) => p.constructor === Uint8Array && p.length === 300)).toBe(true);
    for (const [i, p] of first.entries()) expect(p.every((x) => x === i)).toBe(true);
  });

  it('a_legacy_batch_starts_with_its_subscription_id', () => {
    const batch = { subscriptionId: 5, baseOffset: 1, payloads: [utf8('x')] };
    const { flags, payload } = decodeFrame(encodeEventBatch(batch));
    expect(flags).toBe(0x0022);
    expect(hex(payload)).toBe('00000000000000050000000000000001000000010000000178');
    expect(decodeEventBatch(flags, payload)).toEqual(batch);
  });

  it('skipped_before_without_offsets_is_refused', () => {
    expect(() => decodeEventBatch(0x0804, unhex('0000000000000001 00000000'))).toThrow(
      InvalidFlagCombinationError,
    );
    expect(() => encodeEventBatch({ skippedBefore: 1, payloads: [] })).toThrow(FieldRangeError);
  });

  it('a_timestamped_count_is_checked_against_twelve_bytes_per_event', () => {
    expect(() => decodeEventBatch(0x4004, unhex('00000001 00000000'))).toThrow(CountTooLargeError);
  });

  it('any_frame_is_decoded_by_the_layout_its_flags_name', () => {
    const frame = encodeEventBatch({ payloads: [utf8('z')] });
    const decoded = decodeFramePayload(decodeFrame(frame));
    expect(decoded.layout).toBe('event_batch');
  });
});
