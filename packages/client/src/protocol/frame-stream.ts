/**
 * Frames read from one transport stream, one at a time on demand: the next chunk is pulled only
 * when the frames already read are used up, so a slow consumer backs off the broker. Decoding is
 * @felix/wire's `FrameDecoder` (the broker reads with the same one); this file owns only the
 * pulling. A frame that arrives in several chunks can be taken as those chunks (`nextPieces`,
 * no copy: an event batch is decoded from them directly) or as one payload (`next`, joined on
 * first use of `payload`).
 */
import type { TransportStream } from '@felix/transport';
import { FrameDecoder, InboundFrame, joinPieces } from '@felix/wire';
import { FRAME_BYTES_MAX } from '../limits.js';

export interface InFrame {
  readonly flags: number;
  readonly payload: Uint8Array;
}

/** A frame as the chunks it arrived in: `pieces` hold exactly `length` payload bytes. */
export interface PiecedFrame {
  readonly flags: number;
  readonly length: number;
  readonly pieces: readonly Uint8Array[];
}

export class FrameStream {
  /** Made on first use: a stream read by `forEachFrame` through `readChunks` never needs one. */
  private iteratorMemo: AsyncIterator<Uint8Array> | null = null;
  private readonly decoder = new FrameDecoder({ maxPayloadBytes: FRAME_BYTES_MAX });
  /** A bad header or a reset leaves the stream unusable for good: every later read fails with it. */
  private failure: unknown = null;
  /** Set once `forEachFrame` reads the stream through `readChunks`. */
  private pushed = false;

  constructor(readonly stream: TransportStream) {}

  private get iterator(): AsyncIterator<Uint8Array> {
    this.iteratorMemo ??= this.stream[Symbol.asyncIterator]();
    return this.iteratorMemo;
  }

  /**
   * Hands every frame from here on to `onFrame` (the frames of the chunk in hand first), then
   * calls `onEnd` once: null at the peer's clean half-close, else the error that ended the
   * stream or that `onFrame` threw. Where the transport offers `readChunks` (the multiplexer),
   * a chunk costs no promise and no turn: its frames are handed on in the turn it arrives.
   * Else the chunks are read through the iterator. No other read may follow it.
   */
  forEachFrame(onFrame: (frame: InFrame) => void, onEnd: (err: unknown) => void): void {
    let ended = false;
    const finish = (err: unknown): void => {
      if (ended) return;
      ended = true;
      onEnd(err);
    };
    const drain = (chunk?: Uint8Array): boolean => {
      try {
        if (chunk !== undefined) this.decoder.feed(chunk);
        // An exhausted chunk holds no further frame (its last bytes began one, if any).
        while (!ended && !this.decoder.exhausted) {
          const f = this.decoder.next();
          if (f === null) break;
          onFrame(f);
        }
        return !ended;
      } catch (err) {
        this.failure = err;
        finish(err);
        return false;
      }
    };
    if (this.failure !== null) {
      finish(this.failure);
      return;
    }
    if (!drain()) return;
    const stream = this.stream;
    if (stream.readChunks === undefined) {
      void this.readThrough(drain, finish);
      return;
    }
    this.pushed = true;
    try {
      stream.readChunks(
        (chunk) => {
          if (!ended && chunk.length > 0) drain(chunk);
        },
        (err) => finish(err),
      );
    } catch (err) {
      // Only a second reader of the stream gets here: the lane's own bug, ended as its failure.
      finish(err);
    }
  }

  /** `forEachFrame` over the iterator: a transport without `readChunks`. */
  private async readThrough(drain: () => boolean, finish: (err: unknown) => void): Promise<void> {
    try {
      while (await this.fill()) if (!drain()) return;
      finish(null);
    } catch (err) {
      this.failure = err;
      finish(err);
    }
  }

  /** Feeds the decoder the stream's next non-empty chunk; false at the end of the stream. */
  private async fill(): Promise<boolean> {
    for (;;) {
      const r = await this.iterator.next();
      if (r.done) return false;
      if (r.value.length === 0) continue;
      this.decoder.feed(r.value);
      return true;
    }
  }

  /**
   * The next frame as the chunks it arrived in, or null at the peer's clean half-close (a
   * partial frame at the end is dropped, as before). Throws on reset or a bad header; the
   * header's length is checked against the client's frame bound before anything is held.
   */
  async nextPieces(): Promise<InboundFrame | null> {
    if (this.failure !== null) throw this.failure;
    try {
      for (;;) {
        // Only an exhausted chunk costs an await: the frames already here are taken in this turn.
        const frame = this.decoder.next();
        if (frame !== null) return frame;
        if (!(await this.fill())) return null;
      }
    } catch (err) {
      this.failure = err;
      throw err;
    }
  }

  /**
   * The next frame when the chunk in hand holds all of it, as a view (no await, no copy); null
   * when it does not. Then `pull()` (the chunk is used up) or `next()` (a frame begun in it)
   * reads on. Throws on a bad header, as `next()` does.
   */
  takeWhole(): InFrame | null {
    if (this.failure !== null) throw this.failure;
    try {
      return this.decoder.nextWhole();
    } catch (err) {
      this.failure = err;
      throw err;
    }
  }

  /** True when every byte of the chunk in hand has been taken. */
  get exhausted(): boolean {
    return this.decoder.exhausted;
  }

  /**
   * Takes the stream's next chunk once the one in hand is used up (see `takeWhole`); false at
   * the peer's clean half-close. Throws on reset, as `next()` does.
   */
  async pull(): Promise<boolean> {
    if (this.failure !== null) throw this.failure;
    if (!this.decoder.exhausted) return true;
    try {
      return await this.fill();
    } catch (err) {
      this.failure = err;
      throw err;
    }
  }

  /** The next frame with its payload in one piece (joined if it arrived in several). */
  async next(): Promise<InFrame | null> {
    return this.nextPieces();
  }

  /** Stops reading (the iterator's return lets the transport release the stream). */
  async release(): Promise<void> {
    // A stream read by `forEachFrame` through `readChunks` has no iterator to return.
    if (this.pushed) return;
    await this.iterator.return?.();
  }
}

/** The payload of a pieced frame as one view (a copy only when it has several pieces). */
export function join(frame: PiecedFrame): Uint8Array {
  // A decoded frame joins once and keeps it; one that lay whole in a chunk needs no list.
  if (frame instanceof InboundFrame) return frame.payload;
  return joinPieces(frame.pieces, frame.length);
}
