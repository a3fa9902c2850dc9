// Goal: a compacting decoder (the broker's, which budgets the bytes its partial frames hold)
// never lets a piece it keeps across chunks pin more than HELD_PIECE_BACKING_RATIO_MAX times
// its bytes, and reads every stream exactly as a plain decoder does.
// Method: chunks that are small views of large buffers (as a multiplexed read region is), the
// memory behind each kept piece compared with its bytes; fast-check over valid streams cut at
// random points, each chunk a view inside a larger buffer, read by both decoders.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FrameDecoder,
  HELD_PIECE_BACKING_RATIO_MAX,
  type InboundFrame,
  encodeFrame,
  encodeMessage,
  encodePublishBatch,
} from '../src/index.js';
import { messageArb, publishBatchArb } from './arbitraries.js';

/** `bytes` as a view in the middle of a buffer four times larger plus 1 KiB. */
function inLargeBuffer(bytes: Uint8Array): Uint8Array {
  const region = new Uint8Array(bytes.length * 4 + 1024);
  region.set(bytes, 512);
  return region.subarray(512, 512 + bytes.length);
}

const plain = (frames: InboundFrame[]) =>
  frames.map((f) => ({ flags: f.flags, length: f.length, payload: [...f.payload] }));

describe('held pieces', () => {
  it('a_held_piece_never_pins_more_than_twice_its_bytes', () => {
    const frame = encodeFrame(0, new Uint8Array(100).fill(7));
    const first = inLargeBuffer(frame.subarray(0, 22)); // the header and 10 payload bytes
    const compacting = new FrameDecoder({ compactHeldPieces: true });
    const viewing = new FrameDecoder();
    expect(compacting.pushPieces(first)).toEqual([]);
    expect(viewing.pushPieces(first)).toEqual([]);
    expect(compacting.bufferedBytes).toBe(10);
    const [kept] = compacting.pushPieces(frame.subarray(22));
    const [viewed] = viewing.pushPieces(frame.subarray(22));
    const piece = kept!.pieces[0]!;
    expect(piece.byteLength).toBe(10);
    expect(piece.buffer.byteLength).toBeLessThanOrEqual(HELD_PIECE_BACKING_RATIO_MAX * 10);
    // A plain decoder keeps the view (and the whole buffer behind it); both read the same frame.
    expect(viewed!.pieces[0]!.buffer).toBe(first.buffer);
    expect([...kept!.payload]).toEqual([...viewed!.payload]);
  });

  it('a_compacting_decoder_reads_every_stream_as_a_plain_one_does', () => {
    const stream = fc
      .array(fc.oneof(messageArb.map(encodeMessage), publishBatchArb.map(encodePublishBatch)), {
        minLength: 1,
        maxLength: 5,
      })
      .map((frames) => Uint8Array.from(frames.flatMap((f) => [...f])));
    fc.assert(
      fc.property(stream, fc.array(fc.nat(), { maxLength: 8 }), (bytes, cuts) => {
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const chunks: Uint8Array[] = [];
        let start = 0;
        for (const p of [...points, bytes.length]) {
          chunks.push(inLargeBuffer(bytes.subarray(start, p)));
          start = p;
        }
        const compacting = new FrameDecoder({ compactHeldPieces: true });
        const viewing = new FrameDecoder();
        const a = chunks.flatMap((c) => compacting.pushPieces(c));
        const b = chunks.flatMap((c) => viewing.pushPieces(c));
        expect(plain(a)).toEqual(plain(b));
      }),
      { numRuns: 300 },
    );
  });
});
