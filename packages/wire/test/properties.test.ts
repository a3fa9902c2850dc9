// Goal: property tests over the whole codec. Every message and layout round-trips, or is
// refused with LoneSurrogateError exactly when one of its strings holds a lone surrogate; every
// decoder of untrusted bytes throws nothing but WireError on arbitrary or mutated input;
// the push decoder yields the same frames however a stream is chunked; any unknown flag
// bit is refused. Method: fast-check with arbitraries from test/arbitraries.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FrameDecoder,
  InternalFrameDecoder,
  InvalidFlagCombinationError,
  LoneSurrogateError,
  WireError,
  decodeEventBatch,
  decodeEventBatchPieces,
  decodeFrame,
  decodeFrameHeader,
  decodeFramePayload,
  decodeInternalMessage,
  decodeMessage,
  decodePublishAck,
  decodePublishBatch,
  encodeEventBatch,
  encodeFrame,
  encodeGroupRecordsFrame,
  decodeGroupRecords,
  encodeInternalMessage,
  encodeMessage,
  encodePublishAck,
  encodePublishBatch,
} from '../src/index.js';
import {
  eventBatchArb,
  eventBatchArbOf,
  groupRecordsArb,
  internalMessageArb,
  internalMessageArbOf,
  messageArb,
  messageArbOf,
  publishAckArb,
  publishAckArbOf,
  publishBatchArb,
  publishBatchArbOf,
  withLoneSurrogates,
} from './arbitraries.js';
import { errorOf, handFrame } from './helpers.js';

/** Runs `fn`; passes if it returns or throws a WireError, fails on anything else. */
function onlyWireErrors(fn: () => unknown): void {
  try {
    fn();
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
  }
}

const validFrame = fc.oneof(
  messageArb.map(encodeMessage),
  publishBatchArb.map(encodePublishBatch),
  publishAckArb.map(encodePublishAck),
  eventBatchArb.map(encodeEventBatch),
  groupRecordsArb.map(encodeGroupRecordsFrame),
);

const mutated = fc
  .tuple(
    validFrame,
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
    fc.nat(),
  )
  .map(([frame, edits, cut]) => {
    const copy = frame.slice();
    for (const [at, value] of edits) copy[at % copy.length] = value;
    return copy.subarray(0, copy.length - (cut % 3 === 0 ? cut % copy.length : 0));
  });

/** Strings of the round-trip properties: some hold a lone surrogate, which must be refused. */
const loose = withLoneSurrogates(fc.string({ unit: 'grapheme', maxLength: 12 }));

/** Whether a string anywhere in `value` (keys too) holds a lone surrogate: with the `u` flag a
 *  pair is one code point, so `\p{Cs}` matches only a surrogate without its pair. */
function holdsLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return /\p{Cs}/u.test(value);
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return false;
  return Object.entries(value).some(([k, v]) => holdsLoneSurrogate(k) || holdsLoneSurrogate(v));
}

/** Encodes `value`: refused with LoneSurrogateError exactly when it holds a lone surrogate, else
 *  its frame is handed to `roundTrips`. */
function refusedOrRoundTrips<T>(
  value: T,
  encode: (v: T) => Uint8Array,
  roundTrips: (frame: Uint8Array) => void,
): void {
  let frame: Uint8Array;
  try {
    frame = encode(value);
  } catch (error) {
    expect(error).toBeInstanceOf(LoneSurrogateError);
    expect(holdsLoneSurrogate(value)).toBe(true);
    return;
  }
  expect(holdsLoneSurrogate(value)).toBe(false);
  roundTrips(frame);
}

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

describe('codec properties', () => {
  it('every_message_round_trips_through_its_json_frame', () => {
    fc.assert(
      fc.property(messageArbOf(loose), (message) => {
        refusedOrRoundTrips(message, encodeMessage, (frame) => {
          expect(decodeMessage(decodeFrame(frame).payload)).toEqual(message);
        });
      }),
    );
  });

  it('every_publish_batch_round_trips_with_any_modifiers', () => {
    fc.assert(
      fc.property(publishBatchArbOf(loose), (batch) => {
        refusedOrRoundTrips(batch, encodePublishBatch, (frame) => {
          const { flags, payload } = decodeFrame(frame);
          expect(decodePublishBatch(flags, payload)).toEqual(batch);
        });
      }),
    );
  });

  it('every_publish_ack_round_trips_with_any_modifiers', () => {
    fc.assert(
      fc.property(publishAckArbOf(loose), (ack) => {
        refusedOrRoundTrips(ack, encodePublishAck, (frame) => {
          const { flags, payload } = decodeFrame(frame);
          expect(decodePublishAck(flags, payload)).toEqual(ack);
        });
      }),
    );
  });

  it('every_event_batch_round_trips_with_any_modifiers', () => {
    fc.assert(
      fc.property(eventBatchArbOf(loose), (batch) => {
        refusedOrRoundTrips(batch, encodeEventBatch, (frame) => {
          const { flags, payload } = decodeFrame(frame);
          expect(decodeEventBatch(flags, payload)).toEqual(batch);
        });
      }),
    );
  });

  it('an_event_batch_split_anywhere_decodes_as_it_does_whole', () => {
    fc.assert(
      fc.property(
        eventBatchArb,
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.nat(),
        (batch, cuts, shorten) => {
          const { flags, payload } = decodeFrame(encodeEventBatch(batch));
          // Split at the cuts (empty pieces included), whole and with its tail cut off.
          for (const bytes of [payload, payload.subarray(0, payload.length - (shorten % 9))]) {
            const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, z) => a - z);
            const pieces = [0, ...at].map((from, i) => bytes.slice(from, [...at, bytes.length][i]));
            const eager = errorOf(() => decodeEventBatch(flags, bytes));
            const split = errorOf(() => decodeEventBatchPieces(flags, pieces, bytes.length));
            expect(split).toBe(eager);
            if (eager === null) {
              expect(decodeEventBatchPieces(flags, pieces, bytes.length)).toEqual(
                decodeEventBatch(flags, bytes),
              );
            }
          }
        },
      ),
    );
  });

  it('every_binary_group_records_answer_round_trips', () => {
    fc.assert(
      fc.property(groupRecordsArb, (message) => {
        const { flags, payload } = decodeFrame(encodeGroupRecordsFrame(message));
        expect(decodeGroupRecords(flags, payload)).toEqual(message);
      }),
    );
  });

  it('every_internal_message_round_trips', () => {
    fc.assert(
      fc.property(internalMessageArbOf(loose), (message) => {
        refusedOrRoundTrips(message, encodeInternalMessage, (bytes) => {
          const [frame] = new InternalFrameDecoder().push(bytes);
          expect(decodeInternalMessage(frame!)).toEqual(message);
        });
      }),
    );
  });

  it('any_chunking_of_a_valid_stream_yields_the_same_frames', () => {
    fc.assert(
      fc.property(
        fc.array(validFrame, { minLength: 1, maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (frames, cuts) => {
          const stream = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
          let at = 0;
          for (const f of frames) {
            stream.set(f, at);
            at += f.length;
          }
          const whole = new FrameDecoder().push(stream);
          const decoder = new FrameDecoder();
          const chunked = splitAt(stream, cuts).flatMap((c) => decoder.push(c));
          expect(chunked).toEqual(whole);
          expect(whole.map((f) => encodeFrame(f.flags, f.payload))).toEqual(frames);
          expect(decoder.idle).toBe(true);
        },
      ),
    );
  });

  it('arbitrary_bytes_in_any_chunking_yield_only_frames_or_wire_errors', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.uint8Array({ maxLength: 200 }), mutated),
        fc.array(fc.nat(), { maxLength: 8 }),
        (bytes, cuts) => {
          const decoder = new FrameDecoder({ maxPayloadBytes: 4096 });
          onlyWireErrors(() => {
            for (const chunk of splitAt(bytes, cuts)) {
              for (const frame of decoder.push(chunk))
                onlyWireErrors(() => decodeFramePayload(frame));
            }
          });
          expect(decoder.bufferedBytes).toBeLessThanOrEqual(12 + 4096);
        },
      ),
    );
  });

  it('the_first_error_is_the_same_whatever_the_chunking', () => {
    fc.assert(
      fc.property(mutated, fc.array(fc.nat(), { maxLength: 8 }), (bytes, cuts) => {
        const firstCodeOf = (chunks: Uint8Array[]) => {
          const decoder = new FrameDecoder();
          try {
            for (const chunk of chunks) decoder.push(chunk);
            return 'none';
          } catch (error) {
            return (error as WireError).code;
          }
        };
        expect(firstCodeOf(splitAt(bytes, cuts))).toBe(firstCodeOf([bytes]));
      }),
    );
  });

  it('every_decoder_throws_only_wire_errors_on_arbitrary_bytes', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 120 }),
          mutated.map((m) => m.subarray(12)),
        ),
        fc.integer({ min: 0, max: 0xffff }),
        (bytes, flags) => {
          onlyWireErrors(() => decodeMessage(bytes));
          onlyWireErrors(() => decodePublishBatch(flags, bytes));
          onlyWireErrors(() => decodePublishAck(flags, bytes));
          onlyWireErrors(() => decodeEventBatch(flags, bytes));
          onlyWireErrors(() => decodeInternalMessage({ kind: flags % 48, body: bytes }));
        },
      ),
    );
  });

  it('mutated_json_messages_throw_only_wire_errors', () => {
    const mutatedJson = fc
      .tuple(messageArb, fc.nat(), fc.string({ maxLength: 3 }))
      .map(([m, at, insert]) => {
        const text = new TextDecoder().decode(encodeMessage(m).subarray(12));
        const i = at % (text.length + 1);
        return new TextEncoder().encode(text.slice(0, i) + insert + text.slice(i + 1));
      });
    fc.assert(fc.property(mutatedJson, (bytes) => onlyWireErrors(() => decodeMessage(bytes))));
  });

  it('mutated_internal_frames_throw_only_wire_errors', () => {
    fc.assert(
      fc.property(
        internalMessageArb,
        fc.nat(),
        fc.integer({ min: 0, max: 255 }),
        (m, at, value) => {
          const bytes = encodeInternalMessage(m).slice();
          bytes[at % bytes.length] = value;
          onlyWireErrors(() => {
            for (const frame of new InternalFrameDecoder().push(bytes))
              decodeInternalMessage(frame);
          });
        },
      ),
    );
  });

  it('a_frame_with_any_unknown_flag_bit_is_rejected', () => {
    // No u16 bit is unknown any more: 0x8000 with any other bit is the reserved space, where
    // only 0x8001 and 0x8002 (the binary cache and group exchanges) name layouts so far.
    fc.assert(
      fc.property(
        fc
          .integer({ min: 0, max: 0xffff })
          .filter((f) => (f & 0x8000) !== 0 && f !== 0x8000 && f !== 0x8001 && f !== 0x8002),
        (flags) => {
          const frame = handFrame(flags, new Uint8Array(4));
          expect(() => decodeFrameHeader(frame)).toThrow(InvalidFlagCombinationError);
          expect(() => new FrameDecoder().push(frame)).toThrow(InvalidFlagCombinationError);
        },
      ),
    );
  });
});
