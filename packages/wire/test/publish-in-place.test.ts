// Goal: a publish batch frame built in place (records copied into an arena as they come, the
// head written in front at the end) is byte for byte the frame encodePublishBatch makes, and
// encoding into a reused arena gives the same bytes as a fresh encoding.
// Method: fast-check over batches (acked or not, keyed or not, 0..20 records), both ways.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type PublishBatch,
  encodePublishBatch,
  publishBatchHeadBytes,
  writePublishBatchHead,
} from '../src/index.js';

const batches: fc.Arbitrary<PublishBatch> = fc
  .record({
    stream: fc.string({ minLength: 1, maxLength: 20 }),
    payloads: fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }),
    key: fc.option(fc.uint8Array({ maxLength: 16 }), { nil: undefined }),
    requestId: fc.option(fc.nat({ max: 2 ** 40 }), { nil: undefined }),
  })
  .map(({ stream, payloads, key, requestId }) => ({
    tenantId: 't1',
    namespace: 'default',
    stream,
    payloads,
    ...(key !== undefined ? { key } : {}),
    ...(requestId !== undefined ? { requestId, ackMode: 'per_batch' as const } : {}),
  }));

describe('publish batch built in place', () => {
  it('a_publish_batch_built_in_place_is_the_frame_the_encoder_makes', () => {
    fc.assert(
      fc.property(batches, fc.nat({ max: 64 }), (batch, slack) => {
        const { payloads, ...head } = batch;
        const headBytes = publishBatchHeadBytes(head);
        const arena = new Uint8Array(headBytes + payloads.length * 4 + 300 * 20 + slack).fill(0xee);
        let at = headBytes;
        for (const p of payloads) {
          new DataView(arena.buffer).setUint32(at, p.byteLength);
          arena.set(p, at + 4);
          at += 4 + p.byteLength;
        }
        const frame = arena.subarray(0, at);
        writePublishBatchHead(frame, head, payloads.length);
        expect(frame).toEqual(encodePublishBatch(batch));
      }),
    );
  });

  it('a_publish_batch_encoded_into_a_used_arena_matches_a_fresh_encoding', () => {
    const arena = new Uint8Array(64 * 1024);
    fc.assert(
      fc.property(batches, (batch) => {
        arena.fill(0xee);
        const frame = encodePublishBatch(batch, arena);
        expect(frame.buffer).toBe(arena.buffer);
        expect(frame).toEqual(encodePublishBatch(batch));
        // Too small an arena is not used: the frame gets a buffer of its own.
        const small = encodePublishBatch(batch, new Uint8Array(8));
        expect(small).toEqual(encodePublishBatch(batch));
      }),
    );
  });

  it('a_head_larger_than_its_frame_is_refused', () => {
    const head = { tenantId: 't1', namespace: 'default', stream: 'orders' };
    expect(() => writePublishBatchHead(new Uint8Array(10), head, 0)).toThrow(/shorter/);
  });
});
