/**
 * Push decoder: bytes arrive in arbitrary chunks, complete frames come out. A frame wholly
 * inside one chunk is returned as a view of it (no copy); a frame split across chunks is
 * assembled into one buffer sized from its already-validated header. The only bytes held
 * between pushes belong to the one incomplete frame, so the buffer never exceeds
 * `FRAME_HEADER_BYTES + maxPayloadBytes`. After any error the decoder is failed for good:
 * the stream it reads can no longer be trusted to be aligned on frame boundaries.
 */
import { DecoderFailedError, WireError } from '../errors.js';
import { FRAME_HEADER_BYTES, FRAME_PAYLOAD_BYTES_MAX_DEFAULT } from '../limits.js';

/** Reads and validates a header; returns the payload length. Shared by FLX1 and FLXI. */
export type HeaderCheck = (header: Uint8Array) => { code: number; length: number };

/** Frames out of a byte stream with any header format of 12 bytes. */
export class PushDecoder<F> {
  private readonly header = new Uint8Array(FRAME_HEADER_BYTES);
  private headerFill = 0;
  private body: Uint8Array | undefined;
  private bodyFill = 0;
  private code = 0;
  private failure: WireError | undefined;

  constructor(
    private readonly check: HeaderCheck,
    private readonly make: (code: number, payload: Uint8Array) => F,
  ) {}

  /** Bytes held for the incomplete frame, for metrics and bound checks. */
  get bufferedBytes(): number {
    return this.headerFill + this.bodyFill;
  }

  /** Feeds a chunk; returns every frame it completes, in order. Throws only `WireError`. */
  push(chunk: Uint8Array): F[] {
    if (this.failure !== undefined) throw new DecoderFailedError(this.failure);
    try {
      return this.consume(chunk);
    } catch (error) {
      if (error instanceof WireError) this.failure = error;
      throw error;
    }
  }

  /** True when no partial frame is held (a clean place for the stream to end). */
  get idle(): boolean {
    return this.headerFill === 0 && this.body === undefined;
  }

  private consume(chunk: Uint8Array): F[] {
    const frames: F[] = [];
    let pos = 0;
    while (pos < chunk.length) {
      if (this.body !== undefined) {
        pos = this.fillBody(chunk, pos, frames);
      } else if (this.headerFill > 0 || chunk.length - pos < FRAME_HEADER_BYTES) {
        pos = this.fillHeader(chunk, pos, frames);
      } else {
        const { code, length } = this.check(chunk.subarray(pos, pos + FRAME_HEADER_BYTES));
        const end = pos + FRAME_HEADER_BYTES + length;
        if (end <= chunk.length) {
          frames.push(this.make(code, chunk.subarray(pos + FRAME_HEADER_BYTES, end)));
          pos = end;
        } else {
          this.code = code;
          this.body = new Uint8Array(length);
          pos += FRAME_HEADER_BYTES;
        }
      }
    }
    return frames;
  }

  private fillHeader(chunk: Uint8Array, pos: number, frames: F[]): number {
    const take = Math.min(FRAME_HEADER_BYTES - this.headerFill, chunk.length - pos);
    this.header.set(chunk.subarray(pos, pos + take), this.headerFill);
    this.headerFill += take;
    pos += take;
    if (this.headerFill < FRAME_HEADER_BYTES) return pos;
    const { code, length } = this.check(this.header);
    this.headerFill = 0;
    if (length === 0) {
      frames.push(this.make(code, new Uint8Array(0)));
    } else {
      this.code = code;
      this.body = new Uint8Array(length);
      this.bodyFill = 0;
    }
    return pos;
  }

  private fillBody(chunk: Uint8Array, pos: number, frames: F[]): number {
    const body = this.body!;
    const take = Math.min(body.length - this.bodyFill, chunk.length - pos);
    body.set(chunk.subarray(pos, pos + take), this.bodyFill);
    this.bodyFill += take;
    if (this.bodyFill === body.length) {
      frames.push(this.make(this.code, body));
      this.body = undefined;
      this.bodyFill = 0;
    }
    return pos + take;
  }
}

export { FRAME_PAYLOAD_BYTES_MAX_DEFAULT };
