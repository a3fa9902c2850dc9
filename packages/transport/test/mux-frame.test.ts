/**
 * Goal: the multiplexer decoder accepts exactly the specified framing and, on any bytes at all,
 * raises only ProtocolError. Method: frames split at every boundary, and fast-check fuzzing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MUX_PREFACE, MuxDecoder, ProtocolError } from '../src/index.js';
import { FRAME_DATA, FRAME_FIN, FRAME_PING, writeHeader } from '../src/mux/frame.js';

function frame(type: number, id: number, payload: Uint8Array): Uint8Array {
  const f = new Uint8Array(9 + payload.length);
  writeHeader(f, 0, type, id, payload.length);
  f.set(payload, 9);
  return f;
}

function collect(): {
  frames: Array<[number, number, number[]]>;
  sink: { onFrame(t: number, id: number, p: Uint8Array): void };
} {
  const frames: Array<[number, number, number[]]> = [];
  // A DATA frame split across chunks arrives in pieces: join consecutive pieces of one frame.
  let dataOpen = false;
  return {
    frames,
    sink: {
      onFrame: (t, id, p) => {
        const last = frames[frames.length - 1];
        if (t === FRAME_DATA && dataOpen && last?.[1] === id) last[2].push(...p);
        else frames.push([t, id, [...p]]);
        dataOpen = t === FRAME_DATA;
      },
    },
  };
}

describe('MuxDecoder', () => {
  it('mux_frames_decode_identically_however_the_bytes_are_split', () => {
    const bytes = new Uint8Array([
      ...MUX_PREFACE,
      ...frame(FRAME_DATA, 4, new Uint8Array([1, 2, 3])),
      ...frame(FRAME_FIN, 4, new Uint8Array(0)),
      ...frame(FRAME_PING, 0, new Uint8Array(8).fill(9)),
    ]);
    const whole = collect();
    new MuxDecoder(whole.sink).push(bytes);
    expect(whole.frames).toEqual([
      [FRAME_DATA, 4, [1, 2, 3]],
      [FRAME_FIN, 4, []],
      [FRAME_PING, 0, [9, 9, 9, 9, 9, 9, 9, 9]],
    ]);
    for (let cut = 0; cut <= bytes.length; cut++) {
      for (const step of [1, 3, 7]) {
        const part = collect();
        const d = new MuxDecoder(part.sink);
        d.push(bytes.subarray(0, cut));
        for (let at = cut; at < bytes.length; at += step)
          d.push(bytes.subarray(at, Math.min(bytes.length, at + step)));
        expect(part.frames).toEqual(whole.frames);
      }
    }
  });

  it('a_split_data_frame_is_handed_on_as_views_of_the_incoming_chunks', () => {
    const payload = new Uint8Array(3000).map((_, i) => i % 251);
    const bytes = new Uint8Array([...MUX_PREFACE, ...frame(FRAME_DATA, 4, payload)]);
    const pieces: Uint8Array[] = [];
    const d = new MuxDecoder({ onFrame: (_t, _id, p) => pieces.push(p) });
    const chunks = [bytes.slice(0, 1000), bytes.slice(1000, 2000), bytes.slice(2000)];
    for (const c of chunks) d.push(c);
    expect(pieces.map((p) => p.buffer)).toEqual(chunks.map((c) => c.buffer));
    expect(pieces.flatMap((p) => [...p])).toEqual([...payload]);
  });

  it('mux_decoder_raises_only_protocol_errors_on_arbitrary_bytes', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 8 }),
        (withPreface, chunks) => {
          const d = new MuxDecoder({ onFrame: () => {} });
          try {
            if (withPreface) d.push(MUX_PREFACE);
            for (const c of chunks) d.push(c);
          } catch (err) {
            expect(err).toBeInstanceOf(ProtocolError);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('a_hostile_length_is_refused_from_the_header_alone', () => {
    const d = new MuxDecoder({ onFrame: () => {} });
    const header = new Uint8Array(9);
    writeHeader(header, 0, FRAME_DATA, 0, 0xffff_ffff);
    d.push(MUX_PREFACE);
    expect(() => d.push(header)).toThrow(ProtocolError);
    // Once failed, it stays failed.
    expect(() => d.push(new Uint8Array(1))).toThrow(ProtocolError);
  });
});
