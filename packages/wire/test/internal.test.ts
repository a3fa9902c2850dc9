// Goal: internal FLXI frames round-trip for every implemented kind, every body begins with
// its correlation id, unknown kinds stay answerable, and bounds are enforced before
// allocation. Method: one sample message per kind, plus hand-corrupted bodies.
import { crc32 } from '@felix/common';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BadMagicError,
  CountTooLargeError,
  FrameTooLargeError,
  InvalidEnumError,
  INTERNAL_KIND,
  InternalFrameDecoder,
  type InternalMessage,
  TrailingBytesError,
  TruncatedError,
  batchChecksum,
  decodeInternalMessage,
  encodeInternalFrame,
  encodeInternalMessage,
} from '../src/index.js';
import { hex, unhex, utf8 } from './helpers.js';

const SHARD = { tenantId: 't1', namespace: 'default', stream: 'orders', shard: 2, generation: 7 };
const P = [utf8('ab'), utf8('c')];

export const INTERNAL_SAMPLES: InternalMessage[] = [
  { kind: 'ForwardPublish', correlationId: 1, shard: SHARD, ack: 2, payloads: P },
  { kind: 'ForwardPublishOk', correlationId: 2, firstOffset: 10, lastOffset: 11 },
  { kind: 'ForwardPublishError', correlationId: 3, code: 1, detail: 'stale' },
  {
    kind: 'NotLeader',
    correlationId: 4,
    nodeId: 'b2',
    advertiseAddr: '10.0.0.2:7001',
    generation: 9,
  },
  { kind: 'Hello', correlationId: 5, nodeId: 'b1' },
  { kind: 'HelloOk', correlationId: 6, nodeId: 'b2' },
  {
    kind: 'ReplicateRecords',
    correlationId: 7,
    shard: SHARD,
    firstOffset: 100,
    checksum: batchChecksum(P),
    payloads: P,
  },
  { kind: 'ReplicateOk', correlationId: 8, durableOffset: 102 },
  { kind: 'ReplicateError', correlationId: 9, code: 8, expectedOffset: 50, detail: 'gap' },
  { kind: 'ReplicateBootstrap', correlationId: 10, shard: SHARD, baseOffset: 40 },
  {
    kind: 'ForwardCacheOp',
    correlationId: 11,
    shard: SHARD,
    op: 1,
    key: 'k',
    ttlMs: 0,
    value: utf8('v'),
  },
  { kind: 'ForwardCacheOk', correlationId: 12, value: utf8('v') },
  { kind: 'ForwardCacheOk', correlationId: 12 },
  { kind: 'ForwardCacheError', correlationId: 13, code: 3, detail: 'no' },
  {
    kind: 'ReplicateCacheRecords',
    correlationId: 14,
    shard: SHARD,
    firstOffset: 0,
    checksum: 0,
    payloads: [],
  },
  { kind: 'ReplicateCacheBootstrap', correlationId: 15, shard: SHARD, baseOffset: 0 },
  {
    kind: 'ReplicateGroupRecords',
    correlationId: 16,
    shard: SHARD,
    firstOffset: 1,
    checksum: 2,
    payloads: P,
  },
  { kind: 'ReplicateGroupBootstrap', correlationId: 17, shard: SHARD, baseOffset: 1 },
  {
    kind: 'ReplicateDeadLetterRecords',
    correlationId: 18,
    shard: SHARD,
    firstOffset: 1,
    checksum: 2,
    payloads: P,
  },
  { kind: 'ReplicateDeadLetterBootstrap', correlationId: 19, shard: SHARD, baseOffset: 1 },
  {
    kind: 'ReplicateCounterRecords',
    correlationId: 20,
    shard: SHARD,
    firstOffset: 1,
    checksum: 2,
    payloads: P,
  },
  { kind: 'ReplicateCounterBootstrap', correlationId: 21, shard: SHARD, baseOffset: 1 },
  {
    kind: 'AuthorizedForwardPublish',
    correlationId: 22,
    shard: SHARD,
    ack: 1,
    payloads: P,
    credential: utf8('tok'),
  },
  {
    kind: 'AuthorizedForwardCacheOp',
    correlationId: 23,
    shard: SHARD,
    op: 4,
    key: 'n',
    ttlMs: 5,
    value: unhex('0000000000000001'),
    credential: utf8('tok'),
  },
  { kind: 'ReplicateRebuild', correlationId: 24, shard: SHARD, log: 1, baseOffset: 3 },
  {
    kind: 'ReplicateMarkedRecords',
    correlationId: 25,
    shard: SHARD,
    firstOffset: 100,
    checksum: batchChecksum(P, new Uint8Array([0, 3])),
    payloads: P,
    marks: new Uint8Array([0, 3]),
  },
  {
    kind: 'ReplicateCommittedRecords',
    correlationId: 26,
    shard: SHARD,
    firstOffset: 100,
    checksum: batchChecksum(P),
    commitOffset: 99,
    payloads: P,
  },
  { kind: 'HelloCapable', correlationId: 27, nodeId: 'b1', capabilities: (1n << 63n) | 0x7fn },
  { kind: 'HelloCapableOk', correlationId: 28, nodeId: 'b2', capabilities: 1n },
  { kind: 'Fence', correlationId: 29, shard: SHARD, log: 5 },
  { kind: 'FenceOk', correlationId: 30, logEnd: 10, commitOffset: 8, lastGeneration: 7 },
  {
    kind: 'ReplicateFetch',
    correlationId: 31,
    shard: SHARD,
    log: 2,
    fromOffset: 4,
    maxBytes: 4 << 20,
  },
  { kind: 'ReplicateTrim', correlationId: 40, shard: SHARD, log: 3, baseOffset: 1_000 },
];

function frameOf(message: InternalMessage) {
  const frames = new InternalFrameDecoder().push(encodeInternalMessage(message));
  expect(frames).toHaveLength(1);
  return frames[0]!;
}

describe('internal frames', () => {
  it('every_implemented_kind_round_trips', () => {
    for (const message of INTERNAL_SAMPLES) {
      expect(decodeInternalMessage(frameOf(message))).toEqual(message);
    }
  });

  it('every_body_begins_with_its_correlation_id', () => {
    for (const message of INTERNAL_SAMPLES) {
      const frame = frameOf(message);
      expect(frame.kind).toBe(INTERNAL_KIND[message.kind as keyof typeof INTERNAL_KIND]);
      expect(new DataView(frame.body.buffer, frame.body.byteOffset).getBigUint64(0)).toBe(
        BigInt(message.correlationId),
      );
    }
  });

  it('a_hello_has_the_flxi_header_and_u32_string_prefix', () => {
    const bytes = encodeInternalMessage({ kind: 'Hello', correlationId: 5, nodeId: 'b1' });
    expect(hex(bytes)).toBe('464c5849000100050000000e' + '0000000000000005' + '00000002' + '6231');
  });

  it('an_internal_u64_field_is_big_endian_for_every_safe_integer_and_a_batch_frame_fits_its_bytes', () => {
    fc.assert(
      fc.property(
        fc.maxSafeNat(),
        fc.array(fc.uint8Array({ maxLength: 2_000 }), { maxLength: 8 }),
        // ASCII names take the writer's fast path; any other character, the encoder's.
        fc.string({ unit: 'grapheme', maxLength: 20 }),
        (offset, payloads, tenantId) => {
          const shard = { ...SHARD, tenantId };
          const bytes = encodeInternalMessage({
            kind: 'ReplicateRecords',
            correlationId: offset,
            shard,
            firstOffset: offset,
            checksum: batchChecksum(payloads),
            payloads,
          });
          const expected = new Uint8Array(8);
          new DataView(expected.buffer).setBigUint64(0, BigInt(offset));
          // The correlation id opens the body, right after the 12-byte header.
          expect(hex(bytes.subarray(12, 20))).toBe(hex(expected));
          // The frame is exactly header plus body: no spare bytes ride along.
          const body = new DataView(bytes.buffer, bytes.byteOffset).getUint32(8);
          expect(bytes.length).toBe(12 + body);
          // And the memory behind it is at most a quarter (or 256 bytes) more than the frame.
          expect(bytes.buffer.byteLength - bytes.length).toBeLessThanOrEqual(
            Math.max(256, bytes.length / 4),
          );
          const frames = new InternalFrameDecoder().push(bytes);
          expect(frames).toHaveLength(1);
          const back = decodeInternalMessage(frames[0]!);
          expect(back).toMatchObject({ correlationId: offset, firstOffset: offset, shard });
          expect((back as { payloads: Uint8Array[] }).payloads.map(hex)).toEqual(payloads.map(hex));
        },
      ),
    );
  });

  it('a_committed_batch_carries_the_commit_offset_between_the_checksum_and_the_payloads', () => {
    const shard = { tenantId: 't', namespace: 'n', stream: 's', shard: 1, generation: 2 };
    const bytes = encodeInternalMessage({
      kind: 'ReplicateCommittedRecords',
      correlationId: 3,
      shard,
      firstOffset: 4,
      checksum: 5,
      commitOffset: 6,
      payloads: [],
    });
    const body =
      '0000000000000003' + // correlation id
      '00000001' +
      '74' +
      '00000001' +
      '6e' +
      '00000001' +
      '73' + // tenant, namespace, stream
      '00000001' +
      '0000000000000002' + // shard, generation
      '0000000000000004' +
      '0000000000000005' +
      '0000000000000006' + // first, checksum, commit
      '00000000'; // no payloads: the mark travels alone
    expect(hex(bytes)).toBe(
      `464c58490001001a${(body.length / 2).toString(16).padStart(8, '0')}${body}`,
    );
  });

  it('a_trim_is_kind_40_naming_its_log_then_the_leaders_base_and_refuses_an_unknown_log', () => {
    const shard = { tenantId: 't', namespace: 'n', stream: 's', shard: 1, generation: 2 };
    const bytes = encodeInternalMessage({
      kind: 'ReplicateTrim',
      correlationId: 3,
      shard,
      log: 4,
      baseOffset: 9,
    });
    const body =
      '0000000000000003' + // correlation id
      '00000001' +
      '74' +
      '00000001' +
      '6e' +
      '00000001' +
      '73' + // tenant, namespace, stream
      '00000001' +
      '0000000000000002' + // shard, generation
      '04' + // log: group dead letters
      '0000000000000009'; // the leader's base
    expect(hex(bytes)).toBe(
      `464c584900010028${(body.length / 2).toString(16).padStart(8, '0')}${body}`,
    );
    const noLog = bytes.slice(12);
    noLog[noLog.length - 9] = 6;
    expect(() => decodeInternalMessage({ kind: 40, body: noLog })).toThrow(InvalidEnumError);
    expect(() => decodeInternalMessage({ kind: 40, body: bytes.slice(12, -1) })).toThrow(
      TruncatedError,
    );
  });

  it('a_marked_batch_carries_one_mark_byte_per_payload_after_the_payloads_and_refuses_unknown_marks', () => {
    const shard = { tenantId: 't', namespace: 'n', stream: 's', shard: 1, generation: 2 };
    const gen = unhex('0000000000000002');
    const bytes = encodeInternalMessage({
      kind: 'ReplicateMarkedRecords',
      correlationId: 3,
      shard,
      firstOffset: 4,
      checksum: 5,
      payloads: [utf8('a'), gen],
      marks: new Uint8Array([0, 3]),
    });
    const body =
      '0000000000000003' +
      '00000001' +
      '74' +
      '00000001' +
      '6e' +
      '00000001' +
      '73' +
      '00000001' +
      '0000000000000002' +
      '0000000000000004' +
      '0000000000000005' + // first, checksum
      '00000002' +
      '00000001' +
      '61' +
      '00000008' +
      '0000000000000002' + // two payloads
      '00' +
      '03'; // their marks: none, generation start
    expect(hex(bytes)).toBe(
      `464c58490001001900000${(body.length / 2).toString(16).padStart(3, '0')}${body}`,
    );
    // A producer mark (1) is not sent by this build: refused, never stored as plain.
    const producer = bytes.slice(12);
    producer[producer.length - 1] = 1;
    expect(() => decodeInternalMessage({ kind: 25, body: producer })).toThrow(InvalidEnumError);
    // The marks are part of the checksum.
    expect(batchChecksum([gen], new Uint8Array([3]))).not.toBe(batchChecksum([gen]));
  });

  it('an_unknown_kind_decodes_with_its_correlation_id', () => {
    const bytes = encodeInternalFrame(200, unhex('000000000000002a ffff'));
    const [frame] = new InternalFrameDecoder().push(bytes);
    expect(decodeInternalMessage(frame!)).toEqual({
      kind: 'Unknown',
      code: 200,
      correlationId: 42,
    });
  });

  it('relabelling_an_authorized_forward_as_legacy_fails_on_trailing_bytes', () => {
    const bytes = encodeInternalMessage(INTERNAL_SAMPLES[22]!);
    const body = bytes.subarray(12);
    expect(() => decodeInternalMessage({ kind: 1, body })).toThrow(TrailingBytesError);
  });

  it('an_identifier_over_the_bound_is_refused_before_reading_it', () => {
    const body = unhex('0000000000000005 00000201');
    expect(() => decodeInternalMessage({ kind: 5, body })).toThrow(CountTooLargeError);
  });

  it('a_payload_count_beyond_remaining_over_four_is_refused', () => {
    const good = encodeInternalMessage(INTERNAL_SAMPLES[0]!).subarray(12);
    const body = good.slice(0, good.length - (4 + 2 + 4 + 1));
    new DataView(body.buffer).setUint32(body.length - 4, 3);
    expect(() => decodeInternalMessage({ kind: 1, body })).toThrow(CountTooLargeError);
  });

  it('the_internal_decoder_refuses_a_client_magic_and_an_oversized_body', () => {
    expect(() => new InternalFrameDecoder().push(unhex('464c5831 0001 0005 00000000'))).toThrow(
      BadMagicError,
    );
    expect(() =>
      new InternalFrameDecoder({ maxBodyBytes: 8 }).push(unhex('464c5849 0001 0005 00000009')),
    ).toThrow(FrameTooLargeError);
  });

  it('the_batch_checksum_covers_each_length_then_its_bytes', () => {
    const expected = crc32(unhex('00000002 6162 00000001 63'));
    expect(batchChecksum([utf8('ab'), utf8('c')])).toBe(expected);
    expect(batchChecksum([utf8('a'), utf8('bc')])).not.toBe(expected);
  });
});
