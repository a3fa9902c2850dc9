/**
 * A bounds-checked reader over one binary frame's payload (the Felix extension layouts of
 * cache.ts and group-requests.ts): every read checks the bytes left first and throws the codec's
 * typed errors, never a RangeError; no DataView per frame. And the few writers both encoders use.
 */
import { asciiText } from '../bytes/ascii.js';
import { decodeUtf8 } from '../bytes/reader.js';
import { checkWellFormed } from '../bytes/writer.js';
import {
  FieldRangeError,
  OffsetOutOfRangeError,
  TrailingBytesError,
  TruncatedError,
} from '../errors.js';
import { BINARY_STRING_BYTES_MAX, OFFSET_MAX } from '../limits.js';

const UTF8 = new TextEncoder();

const TWO_32 = 0x1_0000_0000;

export class FrameCursor {
  at = 0;
  constructor(
    readonly p: Uint8Array,
    /** What the frame is, for errors. */
    private readonly what: string,
  ) {}

  /** Checks `n` bytes are left (TruncatedError otherwise). */
  need(n: number, field: string): void {
    const left = this.p.length - this.at;
    if (n > left) throw new TruncatedError(`${this.what} ${field}`, this.at, n, left);
  }

  u8(field: string): number {
    this.need(1, field);
    return this.p[this.at++]!;
  }

  u16(field: string): number {
    this.need(2, field);
    const p = this.p;
    const v = (p[this.at]! << 8) | p[this.at + 1]!;
    this.at += 2;
    return v;
  }

  u32(field: string): number {
    this.need(4, field);
    const p = this.p;
    const at = this.at;
    this.at += 4;
    return ((p[at]! << 24) >>> 0) + ((p[at + 1]! << 16) | (p[at + 2]! << 8) | p[at + 3]!);
  }

  u64(field: string): number {
    const hi = this.u32(field);
    const lo = this.u32(field);
    const v = hi * TWO_32 + lo;
    if (v > OFFSET_MAX) {
      throw new OffsetOutOfRangeError(`${this.what} ${field}`, (BigInt(hi) << 32n) | BigInt(lo));
    }
    return v;
  }

  bytes(n: number, field: string): Uint8Array {
    this.need(n, field);
    const out = this.p.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  skipU16Bytes(field: string): void {
    const n = this.u16(`${field}_len`);
    this.need(n, field);
    this.at += n;
  }

  /** A u16-prefixed UTF-8 string (InvalidUtf8Error on bad UTF-8). */
  text(field: string): string {
    const n = this.u16(`${field}_len`);
    this.need(n, field);
    const p = this.p;
    const from = this.at;
    const to = from + n;
    this.at = to;
    for (let i = from; i < to; i++) {
      if (p[i]! >= 0x80) return decodeUtf8(p.subarray(from, to), `${this.what} ${field}`);
    }
    return asciiText(p, from, to);
  }

  end(): void {
    const left = this.p.length - this.at;
    if (left !== 0) throw new TrailingBytesError(this.what, left);
  }
}

/** A u16-prefixed string field's UTF-8 (a lone surrogate refused, a length over a u16 too). */
export function fieldBytes(text: string, field: string): Uint8Array {
  checkWellFormed(text, field);
  const b = UTF8.encode(text);
  if (b.length > BINARY_STRING_BYTES_MAX) {
    throw new FieldRangeError(field, `is ${b.length} bytes, more than a u16 length allows`);
  }
  return b;
}

export function checkU64(n: number, field: string): void {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new FieldRangeError(field, `must be an integer in 0..${OFFSET_MAX}, got ${n}`);
  }
}

export function putU16Bytes(out: Uint8Array, at: number, b: Uint8Array): number {
  out[at] = b.length >>> 8;
  out[at + 1] = b.length & 0xff;
  out.set(b, at + 2);
  return at + 2 + b.length;
}

export function putU32(out: Uint8Array, at: number, n: number): number {
  out[at] = n >>> 24;
  out[at + 1] = (n >>> 16) & 0xff;
  out[at + 2] = (n >>> 8) & 0xff;
  out[at + 3] = n & 0xff;
  return at + 4;
}

export function putU64(out: Uint8Array, at: number, n: number): number {
  putU32(out, at, Math.floor(n / TWO_32));
  return putU32(out, at + 4, n >>> 0);
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
