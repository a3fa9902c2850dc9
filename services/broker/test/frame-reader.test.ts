/**
 * Goal: the broker's frame reader, which keeps a frame that spans chunks as views of them, yields
 * the same frames and the same publish batches however the bytes are split, and refuses a bad
 * header before holding any of its body. Method: every split of a short stream, and a hostile
 * header.
 */
import {
  DecoderFailedError,
  FrameTooLargeError,
  decodePublishBatch,
  encodeMessage,
  encodePublishBatch,
  payloadListViews,
} from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FrameReader, readPublish } from '../src/session/codec.js';

const enc = new TextEncoder();

describe('broker frame reader', () => {
  it('frames_split_anywhere_are_read_whole_and_publishes_decode_from_their_pieces', () => {
    const publish = encodePublishBatch({
      tenantId: 't1',
      namespace: 'default',
      stream: 's',
      payloads: [enc.encode('first'), enc.encode(''), enc.encode('third record')],
      requestId: 9,
      ackMode: 'per_batch',
    });
    const ping = encodeMessage({
      type: 'stream_shards',
      tenant_id: 't1',
      namespace: 'default',
      stream: 's',
      request_id: 1,
    });
    const bytes = new Uint8Array([...ping, ...publish, ...ping]);
    const expected = decodePublishBatch(publish[7]!, publish.subarray(12));
    for (let step = 1; step <= bytes.length; step += 3) {
      const reader = new FrameReader(1 << 20);
      const frames = [];
      for (let at = 0; at < bytes.length; at += step)
        frames.push(...reader.push(bytes.slice(at, at + step)));
      expect(frames.map((f) => f.flags)).toEqual([0, publish[7], 0]);
      expect(frames[0]!.payload).toEqual(ping.subarray(12));
      expect(frames[2]!.payload).toEqual(ping.subarray(12));
      const p = readPublish(frames[1]!);
      expect(p.requestId).toBe(9);
      expect(p.payloads.count).toBe(3);
      expect(payloadListViews(p.payloads)).toEqual(expected.payloads);
      expect(frames[1]!.payload).toEqual(publish.subarray(12));
    }
  });

  it('a_header_past_the_bound_is_refused_before_its_body_and_the_reader_stays_failed', () => {
    const big = encodeMessage({
      type: 'stream_shards',
      tenant_id: 't'.repeat(200),
      namespace: 'd',
      stream: 's',
      request_id: 1,
    });
    const reader = new FrameReader(64);
    expect(() => reader.push(big.subarray(0, 12))).toThrow(FrameTooLargeError);
    expect(() => reader.push(big.subarray(12))).toThrow(DecoderFailedError);
  });
});
