/**
 * `FrameDecoder`: the decoder of client FLX1 frames that the broker and the client both read
 * with (frame/decoder.ts holds the mechanics). The payload cap can be lowered before
 * authentication and raised after it (`setMaxPayloadBytes`); a header announcing more is
 * refused before any of its body is held.
 */
import { FieldRangeError } from '../errors.js';
import { FRAME_PAYLOAD_BYTES_LIMIT, FRAME_PAYLOAD_BYTES_MAX_DEFAULT } from '../limits.js';
import { PiecesDecoder } from './decoder.js';
import { type Frame, decodeFrameHeader } from './header.js';

export interface FrameDecoderOptions {
  /** Largest payload accepted; default `FRAME_PAYLOAD_BYTES_MAX_DEFAULT` (16 MiB). */
  maxPayloadBytes?: number;
  /** Copy a piece of a partial frame kept across chunks when it would pin over
   *  HELD_PIECE_BACKING_RATIO_MAX times its bytes (default false: pieces stay views). */
  compactHeldPieces?: boolean;
}

export class FrameDecoder extends PiecesDecoder {
  private maxPayloadBytes: number;

  constructor(options: FrameDecoderOptions = {}) {
    super((bytes, offset) => {
      const { flags, length } = decodeFrameHeader(bytes, offset, this.maxPayloadBytes);
      return { code: flags, length };
    }, options.compactHeldPieces ?? false);
    this.maxPayloadBytes = checkMax(options.maxPayloadBytes ?? FRAME_PAYLOAD_BYTES_MAX_DEFAULT);
  }

  /** Feeds a chunk; returns the frames it completes, each payload in one piece (a frame split
   *  across chunks is joined: `pushPieces` keeps it as its pieces). */
  push(chunk: Uint8Array): Frame[] {
    return this.pushPieces(chunk).map((f) => ({ flags: f.flags, payload: f.payload }));
  }

  /** Changes the cap for headers not yet read (e.g. after the stream authenticates). */
  setMaxPayloadBytes(maxPayloadBytes: number): void {
    this.maxPayloadBytes = checkMax(maxPayloadBytes);
  }
}

function checkMax(value: number): number {
  if (!Number.isInteger(value) || value < 0 || value > FRAME_PAYLOAD_BYTES_LIMIT) {
    throw new FieldRangeError('maxPayloadBytes', `must be an integer in [0, 2^32-1]`);
  }
  return value;
}
