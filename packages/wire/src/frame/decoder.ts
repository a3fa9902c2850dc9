/**
 * The one frame decoder both ends use: chunks in, frames out, each frame kept as the views of
 * the chunks it arrived in (no assembly copy; `InboundFrame.payload` joins them only when asked).
 *
 * It is a cursor, so it serves a push reader (the broker: `pushPieces(chunk)` returns every frame
 * the chunk completes) and a pull reader (the client: `next()` until null, then `feed()` the next
 * chunk; `nextWhole()` takes a frame lying whole in the chunk in hand without touching the
 * state when it does not). The header is checked (magic, version, flags, length bound) before a
 * body byte is held, so what is held between chunks is one incomplete frame, at most its
 * checked length. After any error the decoder is failed for good: the stream can no longer be
 * trusted to be aligned on frame boundaries. Only `WireError`s are thrown.
 */
import { assert } from '@felix/common';
import { DecoderFailedError, WireError } from '../errors.js';
import { FRAME_HEADER_BYTES, HELD_PIECE_BACKING_RATIO_MAX } from '../limits.js';

/** Reads and validates the 12-byte header at `offset` (FLX1 or FLXI); throws a `WireError`. */
export type HeaderCheck = (bytes: Uint8Array, offset: number) => { code: number; length: number };

const EMPTY = new Uint8Array(0);

/**
 * One frame as the chunks it arrived in: `pieces` hold exactly `length` payload bytes, and
 * `payload` is them as one view (a copy only when there are several, made once on first use).
 * A frame that lay whole in one chunk allocates no pieces list unless `pieces` is read.
 */
export class InboundFrame {
  private whole: Uint8Array | undefined;
  private parts: readonly Uint8Array[] | undefined;

  constructor(
    /** The header's flags (FLX1) or kind (FLXI). */
    readonly flags: number,
    readonly length: number,
    whole: Uint8Array | undefined,
    parts: readonly Uint8Array[] | undefined,
  ) {
    this.whole = whole;
    this.parts = parts;
  }

  get pieces(): readonly Uint8Array[] {
    if (this.parts === undefined) this.parts = [this.whole!];
    return this.parts;
  }

  get payload(): Uint8Array {
    if (this.whole === undefined) this.whole = joinPieces(this.parts!, this.length);
    return this.whole;
  }
}

/** `pieces` (holding `length` bytes) as one view: a copy only when there are several. */
export function joinPieces(pieces: readonly Uint8Array[], length: number): Uint8Array {
  if (pieces.length === 1) return pieces[0]!;
  if (pieces.length === 0) return EMPTY;
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Frames out of a byte stream whose headers are 12 bytes; see the file comment. */
export class PiecesDecoder {
  private chunk: Uint8Array = EMPTY;
  private at = 0;
  private readonly header = new Uint8Array(FRAME_HEADER_BYTES);
  private headerFill = 0;
  private code = 0;
  private length = 0;
  /** Payload bytes still to come for the frame begun; -1 while none is. */
  private left = -1;
  private pieces: Uint8Array[] = [];
  private failure: WireError | undefined;

  constructor(
    private readonly check: HeaderCheck,
    /** Copy a piece kept across chunks whose backing memory is over
     *  HELD_PIECE_BACKING_RATIO_MAX times its bytes (a reader that budgets `bufferedBytes`). */
    private readonly compactHeld = false,
  ) {}

  /** Hands over the next chunk; only once the one in hand is used up (`exhausted`). */
  feed(chunk: Uint8Array): void {
    if (this.failure !== undefined) throw new DecoderFailedError(this.failure);
    assert(this.at >= this.chunk.length, 'a chunk was fed before the one in hand was used up');
    this.chunk = chunk;
    this.at = 0;
  }

  /** True when every byte fed so far has been taken into frames or the frame begun. */
  get exhausted(): boolean {
    return this.at >= this.chunk.length;
  }

  /** The next complete frame from the bytes fed, or null when they hold no more of one. */
  next(): InboundFrame | null {
    if (this.failure !== undefined) throw new DecoderFailedError(this.failure);
    try {
      return this.step();
    } catch (error) {
      if (error instanceof WireError) this.failure = error;
      throw error;
    }
  }

  /**
   * The next frame when it lies whole in the chunk in hand and no frame is begun, as a view
   * (nothing held, nothing copied); else null, and nothing is consumed.
   */
  nextWhole(): InboundFrame | null {
    if (this.failure !== undefined) throw new DecoderFailedError(this.failure);
    if (this.left >= 0 || this.headerFill > 0) return null;
    const from = this.at + FRAME_HEADER_BYTES;
    if (from > this.chunk.length) return null;
    let header: { code: number; length: number };
    try {
      header = this.check(this.chunk, this.at);
    } catch (error) {
      if (error instanceof WireError) this.failure = error;
      throw error;
    }
    const to = from + header.length;
    if (to > this.chunk.length) return null;
    this.at = to;
    return new InboundFrame(header.code, header.length, this.chunk.subarray(from, to), undefined);
  }

  /** Feeds a chunk; returns every frame it completes, in order, as their pieces. */
  pushPieces(chunk: Uint8Array): InboundFrame[] {
    this.feed(chunk);
    const frames: InboundFrame[] = [];
    for (let f = this.next(); f !== null; f = this.next()) frames.push(f);
    return frames;
  }

  /** Bytes held for the incomplete frame (its header, or its payload so far). */
  get bufferedBytes(): number {
    return this.headerFill + (this.left >= 0 ? this.length - this.left : 0);
  }

  /** True when no partial frame is held (a clean place for the stream to end). */
  get idle(): boolean {
    return this.headerFill === 0 && this.left < 0;
  }

  private step(): InboundFrame | null {
    const chunk = this.chunk;
    if (this.left < 0) {
      if (this.headerFill === 0 && chunk.length - this.at >= FRAME_HEADER_BYTES) {
        const { code, length } = this.check(chunk, this.at);
        const from = this.at + FRAME_HEADER_BYTES;
        if (from + length <= chunk.length) {
          // The common case: the whole frame in this chunk, one view, no pieces list.
          this.at = from + length;
          return new InboundFrame(code, length, chunk.subarray(from, this.at), undefined);
        }
        this.begin(code, length);
        this.at = from;
      } else if (!this.fillHeader()) {
        return null;
      }
    }
    const n = Math.min(this.left, chunk.length - this.at);
    if (n > 0) this.pieces.push(this.held(chunk.subarray(this.at, this.at + n), n < this.left));
    this.at += n;
    this.left -= n;
    if (this.left > 0) return null;
    const pieces = this.pieces;
    this.pieces = [];
    this.left = -1;
    if (pieces.length === 1) return new InboundFrame(this.code, this.length, pieces[0], undefined);
    return new InboundFrame(this.code, this.length, undefined, pieces);
  }

  /** `piece`, or a copy of it when it stays held past this chunk (`kept`) and would otherwise
   *  pin much more memory than its bytes (compacting decoders only). */
  private held(piece: Uint8Array, kept: boolean): Uint8Array {
    if (!kept || !this.compactHeld) return piece;
    if (piece.buffer.byteLength <= HELD_PIECE_BACKING_RATIO_MAX * piece.byteLength) return piece;
    return piece.slice();
  }

  /** Copies header bytes from the chunk; true once a whole header is read and checked. */
  private fillHeader(): boolean {
    const n = Math.min(FRAME_HEADER_BYTES - this.headerFill, this.chunk.length - this.at);
    this.header.set(this.chunk.subarray(this.at, this.at + n), this.headerFill);
    this.headerFill += n;
    this.at += n;
    if (this.headerFill < FRAME_HEADER_BYTES) return false;
    this.headerFill = 0;
    const { code, length } = this.check(this.header, 0);
    this.begin(code, length);
    return true;
  }

  private begin(code: number, length: number): void {
    this.code = code;
    this.length = length;
    this.left = length;
  }
}
