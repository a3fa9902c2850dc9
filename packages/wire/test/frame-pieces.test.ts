// Goal: the one frame decoder both ends read with keeps frames as views of the chunks they
// arrived in (no copy), agrees with itself whether it is pushed to (the broker) or pulled from
// (the client), takes a frame whole from its chunk without touching its state otherwise, and
// stays total on hostile bytes in any chunking. Method: hand-built streams checked for buffer
// identity, and fast-check over valid, mutated and arbitrary streams cut at random points,
// read by a push decoder and by a cursor choosing `next` or `nextWhole` at random.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DecoderFailedError,
  FrameDecoder,
  FrameTooLargeError,
  type InboundFrame,
  WireError,
  encodeMessage,
  encodePublishBatch,
} from '../src/index.js';
import { messageArb, publishBatchArb } from './arbitraries.js';
import { handFrame } from './helpers.js';

const validStream = fc
  .array(fc.oneof(messageArb.map(encodeMessage), publishBatchArb.map(encodePublishBatch)), {
    minLength: 1,
    maxLength: 5,
  })
  .map((frames) => Uint8Array.from(frames.flatMap((f) => [...f])));

const hostileStream = fc.oneof(
  fc.uint8Array({ maxLength: 200 }),
  fc
    .tuple(validStream, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 4 }))
    .map(([bytes, edits]) => {
      const copy = bytes.slice();
      for (const [at, value] of edits) copy[at % copy.length] = value;
      return copy;
    }),
);

function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const p of points) {
    chunks.push(bytes.subarray(start, p));
    start = p;
  }
  chunks.push(bytes.subarray(start));
  return chunks;
}

/** Reads `chunks` as the client does: whole frames when it may, `next` otherwise. */
function pullAll(chunks: Uint8Array[], wholeFirst: boolean[], max = 1 << 20): InboundFrame[] {
  const decoder = new FrameDecoder({ maxPayloadBytes: max });
  const out: InboundFrame[] = [];
  let turn = 0;
  for (const chunk of chunks) {
    decoder.feed(chunk);
    for (;;) {
      const f =
        (wholeFirst[turn++ % Math.max(1, wholeFirst.length)] ?? false)
          ? (decoder.nextWhole() ?? decoder.next())
          : decoder.next();
      if (f === null) break;
      out.push(f);
    }
  }
  return out;
}

const plain = (frames: InboundFrame[]) =>
  frames.map((f) => ({ flags: f.flags, length: f.length, payload: [...f.payload] }));

describe('pieces frame decoder', () => {
  it('a_frame_whole_in_its_chunk_is_a_view_of_that_chunk', () => {
    const chunk = Uint8Array.from([
      ...encodeMessage({ type: 'ok' }),
      ...handFrame(0x0001, new Uint8Array(5)),
    ]);
    const [a, b] = new FrameDecoder().pushPieces(chunk);
    expect(a!.payload.buffer).toBe(chunk.buffer);
    expect(b!.payload.buffer).toBe(chunk.buffer);
    expect(b!.pieces).toEqual([b!.payload]);
  });

  it('a_frame_split_across_chunks_is_kept_as_views_of_them', () => {
    const frame = handFrame(
      0x0001,
      Uint8Array.from({ length: 30 }, (_, i) => i),
    );
    const first = frame.slice(0, 20);
    const second = frame.slice(20);
    const decoder = new FrameDecoder();
    expect(decoder.pushPieces(first)).toEqual([]);
    expect(decoder.bufferedBytes).toBe(8);
    const [f] = decoder.pushPieces(second);
    expect(f!.pieces.map((p) => p.buffer)).toEqual([first.buffer, second.buffer]);
    expect([...f!.payload]).toEqual([...frame.subarray(12)]);
    expect(decoder.idle).toBe(true);
  });

  it('next_whole_takes_nothing_when_the_frame_runs_past_its_chunk', () => {
    const frame = encodeMessage({ type: 'ok' });
    const decoder = new FrameDecoder();
    decoder.feed(frame.subarray(0, frame.length - 1));
    expect(decoder.nextWhole()).toBeNull();
    expect(decoder.exhausted).toBe(false);
    expect(decoder.next()).toBeNull();
    expect(decoder.exhausted).toBe(true);
    decoder.feed(frame.subarray(frame.length - 1));
    expect(decoder.nextWhole()).toBeNull(); // a frame is begun: only `next` may finish it
    expect([...decoder.next()!.payload]).toEqual([...frame.subarray(12)]);
  });

  it('an_oversized_header_is_refused_by_the_cursor_before_its_body', () => {
    const header = handFrame(0, new Uint8Array(0));
    new DataView(header.buffer).setUint32(8, 65);
    const decoder = new FrameDecoder({ maxPayloadBytes: 64 });
    decoder.feed(header);
    expect(() => decoder.nextWhole()).toThrow(FrameTooLargeError);
    expect(decoder.bufferedBytes).toBe(0);
    expect(() => decoder.next()).toThrow(DecoderFailedError);
  });

  it('pulling_and_pushing_read_the_same_frames_in_any_chunking', () => {
    fc.assert(
      fc.property(
        validStream,
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.array(fc.boolean(), { maxLength: 6 }),
        (bytes, cuts, wholeFirst) => {
          const pushed = new FrameDecoder().pushPieces(bytes);
          const decoder = new FrameDecoder();
          const chunked = splitAt(bytes, cuts).flatMap((c) => decoder.pushPieces(c));
          const pulled = pullAll(splitAt(bytes, cuts), wholeFirst);
          expect(plain(chunked)).toEqual(plain(pushed));
          expect(plain(pulled)).toEqual(plain(pushed));
          for (const f of chunked) {
            expect(f.pieces.reduce((n, p) => n + p.length, 0)).toBe(f.length);
          }
        },
      ),
    );
  });

  it('hostile_bytes_in_any_chunking_give_frames_or_wire_errors_within_the_bound', () => {
    fc.assert(
      fc.property(
        hostileStream,
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.array(fc.boolean(), { maxLength: 6 }),
        (bytes, cuts, wholeFirst) => {
          const decoder = new FrameDecoder({ maxPayloadBytes: 256 });
          const outcome = (read: () => unknown) => {
            try {
              read();
              return 'ok';
            } catch (error) {
              if (!(error instanceof WireError)) throw error;
              return error.code;
            }
          };
          const pushed = outcome(() => {
            for (const chunk of splitAt(bytes, cuts)) {
              decoder.pushPieces(chunk);
              expect(decoder.bufferedBytes).toBeLessThanOrEqual(12 + 256);
            }
          });
          const pulled = outcome(() => pullAll(splitAt(bytes, cuts), wholeFirst, 256));
          expect(pulled).toBe(pushed);
        },
      ),
    );
  });
});
