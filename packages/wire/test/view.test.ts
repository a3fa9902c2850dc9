// Goal: the views the decoders hand out share the received bytes, span exactly their range and
// are plain Uint8Arrays even when the input is a Node Buffer (a Buffer view costs about three
// times as much to make). Method: fast-check over offsets into Buffers with a pool offset.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEventBatchPieces, decodeFrame, encodeEventBatch, viewOf } from '../src/index.js';

describe('byte views', () => {
  it('a_view_shares_its_source_bytes_and_spans_exactly_its_range', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        fc.nat({ max: 16 }),
        fc.nat(),
        fc.nat(),
        (bytes, lead, a, b) => {
          // A Buffer that starts inside a larger ArrayBuffer, as socket chunks from a pool do.
          const backing = Buffer.alloc(lead + bytes.length + 4);
          const source = backing.subarray(lead, lead + bytes.length);
          source.set(bytes);
          const from = a % (bytes.length + 1);
          const to = from + (b % (bytes.length - from + 1));
          const view = viewOf(source, from, to);
          expect(Object.getPrototypeOf(view)).toBe(Uint8Array.prototype);
          expect([...view]).toEqual([...bytes.subarray(from, to)]);
          if (to > from) {
            view[0] = view[0]! ^ 0xff;
            expect(source[from]).toBe(view[0]);
          }
        },
      ),
    );
  });

  it('decoded_event_payloads_are_plain_views_of_a_buffer_chunk', () => {
    const payloads = [Buffer.from('alpha'), Buffer.from('beta')];
    const { flags, payload } = decodeFrame(encodeEventBatch({ baseOffset: 3, payloads }));
    const chunk = Buffer.from(payload); // what a socket hands over
    const got = decodeEventBatchPieces(flags, [chunk], chunk.length).payloads;
    expect(got.map((p) => Buffer.from(p).toString())).toEqual(['alpha', 'beta']);
    for (const p of got) {
      expect(Object.getPrototypeOf(p)).toBe(Uint8Array.prototype);
      expect(p.buffer).toBe(chunk.buffer);
    }
  });
});
