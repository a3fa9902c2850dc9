/**
 * The reader of `ByteReader`, over a payload that arrived as several chunks (a large frame read
 * off a stream): the same bounds checks and typed errors, and `bytesView` still returns a view
 * whenever the bytes lie inside one chunk. Only a field that straddles two chunks is copied, so
 * a frame never has to be assembled into one buffer to be decoded.
 */
import { ownBytes } from '@felix/common';
import { OffsetOutOfRangeError, TrailingBytesError, TruncatedError } from '../errors.js';
import { OFFSET_MAX } from '../limits.js';
import { checkCount, decodeFieldUtf8 } from './reader.js';

const TWO_32 = 0x1_0000_0000;

export class PiecesReader {
  private piece = 0;
  private at = 0;
  position = 0;

  constructor(
    private readonly pieces: readonly Uint8Array[],
    /** Total bytes across `pieces`. */
    readonly length: number,
    readonly what: string,
  ) {}

  get remaining(): number {
    return this.length - this.position;
  }

  need(count: number, field: string): void {
    if (count > this.remaining) {
      throw new TruncatedError(`${this.what} ${field}`, this.position, count, this.remaining);
    }
  }

  /** The piece holding the next byte (skipping used-up and empty ones); needs a byte left. */
  private current(): Uint8Array {
    let p = this.pieces[this.piece]!;
    while (this.at === p.length) {
      this.piece++;
      this.at = 0;
      p = this.pieces[this.piece]!;
    }
    return p;
  }

  /** A big-endian u32 at the reader (already checked), read in place when it lies in one piece. */
  private readU32(): number {
    const p = this.current();
    const a = this.at;
    if (p.length - a < 4) {
      const b = this.take(4);
      return ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
    }
    this.at = a + 4;
    this.position += 4;
    return ((p[a]! << 24) | (p[a + 1]! << 16) | (p[a + 2]! << 8) | p[a + 3]!) >>> 0;
  }

  /** The next `count` bytes (already checked): a view when they lie in one piece, else a copy. */
  private take(count: number): Uint8Array {
    if (count === 0) return new Uint8Array(0);
    const p = this.current();
    this.position += count;
    if (p.length - this.at >= count) {
      const out = p.subarray(this.at, this.at + count);
      this.at += count;
      return out;
    }
    const out = ownBytes(count); // pooled: a fresh ArrayBuffer per straddle doubled the decode
    let filled = 0;
    while (filled < count) {
      const cur = this.pieces[this.piece]!;
      const n = Math.min(cur.length - this.at, count - filled);
      out.set(cur.subarray(this.at, this.at + n), filled);
      filled += n;
      this.at += n;
      if (this.at === cur.length && filled < count) {
        this.piece++;
        this.at = 0;
      }
    }
    return out;
  }

  /** Steps over `count` bytes already checked with `need`. */
  skip(count: number): void {
    this.position += count;
    let left = count;
    while (left > 0) {
      const p = this.pieces[this.piece]!;
      const n = Math.min(left, p.length - this.at);
      this.at += n;
      left -= n;
      if (left > 0) {
        this.piece++;
        this.at = 0;
      }
    }
  }

  /** Views of the bytes from position `from` up to the current position, piece by piece. */
  viewsSince(from: number): Uint8Array[] {
    const out: Uint8Array[] = [];
    let pos = 0;
    for (const p of this.pieces) {
      const start = Math.max(from, pos);
      const end = Math.min(this.position, pos + p.length);
      if (start < end) out.push(p.subarray(start - pos, end - pos));
      pos += p.length;
      if (pos >= this.position) break;
    }
    return out;
  }

  u8(field: string): number {
    this.need(1, field);
    const p = this.current();
    this.position++;
    return p[this.at++]!;
  }

  u16(field: string): number {
    this.need(2, field);
    const b = this.take(2);
    return (b[0]! << 8) | b[1]!;
  }

  u32(field: string): number {
    this.need(4, field);
    return this.readU32();
  }

  /** A u64 that must fit a safe integer (offsets, ids); larger is `OffsetOutOfRangeError`. */
  u64(field: string): number {
    this.need(8, field);
    const hi = this.readU32();
    const lo = this.readU32();
    const value = hi * TWO_32 + lo;
    if (value > OFFSET_MAX) {
      throw new OffsetOutOfRangeError(`${this.what} ${field}`, (BigInt(hi) << 32n) | BigInt(lo));
    }
    return value;
  }

  /** A full-width u64 (producer ids, capability bits). */
  u64Big(field: string): bigint {
    this.need(8, field);
    const b = this.take(8);
    return new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0);
  }

  /** `count` bytes: a view of the piece holding them, or a copy when they straddle two. */
  bytesView(count: number, field: string): Uint8Array {
    this.need(count, field);
    return this.take(count);
  }

  /** A count that will drive `count` items of at least `minItemBytes` each. */
  count(count: number, minItemBytes: number, max: number, field: string): number {
    return checkCount(`${this.what} ${field}`, count, minItemBytes, max, this.remaining);
  }

  utf8(count: number, field: string): string {
    return decodeFieldUtf8(this.bytesView(count, field), this.what, field);
  }

  end(): void {
    if (this.remaining !== 0) throw new TrailingBytesError(this.what, this.remaining);
  }
}
