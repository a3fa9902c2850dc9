/**
 * Frames read from one transport stream, one at a time on demand: the next chunk is pulled only
 * when the frames already read are used up, so a slow consumer backs off the broker. A frame
 * that arrives in several chunks can be taken as those chunks (`nextPieces`, no copy: an event
 * batch is decoded from them directly) or joined into one payload (`next`).
 */
import type { TransportStream } from '@felix/transport';
import { FRAME_HEADER_BYTES, decodeFrameHeader } from '@felix/wire';
import { FRAME_BYTES_MAX } from '../limits.js';

export interface InFrame {
  flags: number;
  payload: Uint8Array;
}

/** A frame as the chunks it arrived in: `pieces` hold exactly `length` payload bytes. */
export interface PiecedFrame {
  flags: number;
  length: number;
  pieces: Uint8Array[];
}

const EMPTY = new Uint8Array(0);

export class FrameStream {
  private readonly iterator: AsyncIterator<Uint8Array>;
  private chunk: Uint8Array = EMPTY;
  private at = 0;
  private readonly header = new Uint8Array(FRAME_HEADER_BYTES);
  /** A bad header leaves the stream misaligned for good: every later read fails with it. */
  private failure: unknown = null;

  constructor(readonly stream: TransportStream) {
    this.iterator = stream[Symbol.asyncIterator]();
  }

  /** Makes the current chunk non-empty; false at the end of the stream. */
  private async fill(): Promise<boolean> {
    while (this.at >= this.chunk.length) {
      const r = await this.iterator.next();
      if (r.done) return false;
      this.chunk = r.value;
      this.at = 0;
    }
    return true;
  }

  /**
   * The next frame as the chunks it arrived in, or null at the peer's clean half-close (a
   * partial frame at the end is dropped, as before). Throws on reset or a bad header; the
   * header's length is checked against the client's frame bound before anything is held.
   */
  async nextPieces(): Promise<PiecedFrame | null> {
    if (this.failure !== null) throw this.failure;
    try {
      return await this.read();
    } catch (err) {
      this.failure = err;
      throw err;
    }
  }

  private async read(): Promise<PiecedFrame | null> {
    let header: Uint8Array;
    if (this.chunk.length - this.at >= FRAME_HEADER_BYTES) {
      header = this.chunk.subarray(this.at, this.at + FRAME_HEADER_BYTES);
      this.at += FRAME_HEADER_BYTES;
    } else {
      let have = 0;
      while (have < FRAME_HEADER_BYTES) {
        if (this.at >= this.chunk.length && !(await this.fill())) return null;
        const n = Math.min(FRAME_HEADER_BYTES - have, this.chunk.length - this.at);
        this.header.set(this.chunk.subarray(this.at, this.at + n), have);
        have += n;
        this.at += n;
      }
      header = this.header;
    }
    const { flags, length } = decodeFrameHeader(header, 0, FRAME_BYTES_MAX);
    const pieces: Uint8Array[] = [];
    let left = length;
    while (left > 0) {
      // Only an exhausted chunk costs an await: the pieces already here are taken in this turn.
      if (this.at >= this.chunk.length && !(await this.fill())) return null;
      const n = Math.min(left, this.chunk.length - this.at);
      pieces.push(this.chunk.subarray(this.at, this.at + n));
      this.at += n;
      left -= n;
    }
    return { flags, length, pieces };
  }

  /**
   * The next frame when the chunk in hand holds all of it, as a view (no await, no copy); null
   * when it does not. Then `pull()` (the chunk is used up) or `next()` (a frame begun in it)
   * reads on. Throws on a bad header, as `next()` does.
   */
  takeWhole(): InFrame | null {
    if (this.failure !== null) throw this.failure;
    const chunk = this.chunk;
    const from = this.at + FRAME_HEADER_BYTES;
    if (from > chunk.length) return null;
    let length: number;
    let flags: number;
    try {
      ({ flags, length } = decodeFrameHeader(chunk, this.at, FRAME_BYTES_MAX));
    } catch (err) {
      this.failure = err;
      throw err;
    }
    if (from + length > chunk.length) return null;
    this.at = from + length;
    return { flags, payload: chunk.subarray(from, this.at) };
  }

  /** True when every byte of the chunk in hand has been taken. */
  get exhausted(): boolean {
    return this.at >= this.chunk.length;
  }

  /**
   * Takes the stream's next chunk once the one in hand is used up (see `takeWhole`); false at
   * the peer's clean half-close. Throws on reset, as `next()` does.
   */
  async pull(): Promise<boolean> {
    if (this.failure !== null) throw this.failure;
    try {
      return await this.fill();
    } catch (err) {
      this.failure = err;
      throw err;
    }
  }

  /** The next frame with its payload in one piece (joined if it arrived in several). */
  async next(): Promise<InFrame | null> {
    const f = await this.nextPieces();
    if (!f) return null;
    return { flags: f.flags, payload: join(f) };
  }

  /** Stops reading (the iterator's return lets the transport release the stream). */
  async release(): Promise<void> {
    await this.iterator.return?.();
  }
}

/** The payload of a pieced frame as one view (a copy only when it has several pieces). */
export function join(frame: PiecedFrame): Uint8Array {
  if (frame.pieces.length === 1) return frame.pieces[0]!;
  if (frame.pieces.length === 0) return EMPTY;
  const out = new Uint8Array(frame.length);
  let at = 0;
  for (const p of frame.pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
