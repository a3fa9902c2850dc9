/**
 * `FrameDecoder`: the push decoder for client FLX1 frames. The payload cap can be lowered
 * before authentication and raised after it (`setMaxPayloadBytes`); a header announcing
 * more is refused before any of its body is held.
 */
import { FieldRangeError } from '../errors.js';
import { FRAME_PAYLOAD_BYTES_LIMIT, FRAME_PAYLOAD_BYTES_MAX_DEFAULT } from '../limits.js';
import { PushDecoder } from './decoder.js';
import { type Frame, decodeFrameHeader } from './header.js';

export interface FrameDecoderOptions {
  /** Largest payload accepted; default `FRAME_PAYLOAD_BYTES_MAX_DEFAULT` (16 MiB). */
  maxPayloadBytes?: number;
}

export class FrameDecoder {
  private maxPayloadBytes: number;
  private readonly inner: PushDecoder<Frame>;

  constructor(options: FrameDecoderOptions = {}) {
    this.maxPayloadBytes = checkMax(options.maxPayloadBytes ?? FRAME_PAYLOAD_BYTES_MAX_DEFAULT);
    this.inner = new PushDecoder<Frame>(
      (header) => {
        const { flags, length } = decodeFrameHeader(header, 0, this.maxPayloadBytes);
        return { code: flags, length };
      },
      (flags, payload) => ({ flags, payload }),
    );
  }

  /** Feeds a chunk; returns the frames it completes. Throws only `WireError`. */
  push(chunk: Uint8Array): Frame[] {
    return this.inner.push(chunk);
  }

  /** Changes the cap for headers not yet read (e.g. after the stream authenticates). */
  setMaxPayloadBytes(maxPayloadBytes: number): void {
    this.maxPayloadBytes = checkMax(maxPayloadBytes);
  }

  /** Bytes held for an incomplete frame; never above 12 + the cap in force at its header. */
  get bufferedBytes(): number {
    return this.inner.bufferedBytes;
  }

  /** True when no partial frame is held, i.e. the stream may end here cleanly. */
  get idle(): boolean {
    return this.inner.idle;
  }
}

function checkMax(value: number): number {
  if (!Number.isInteger(value) || value < 0 || value > FRAME_PAYLOAD_BYTES_LIMIT) {
    throw new FieldRangeError('maxPayloadBytes', `must be an integer in [0, 2^32-1]`);
  }
  return value;
}
