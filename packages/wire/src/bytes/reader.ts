/**
 * A bounds-checked big-endian reader over a byte view. Every read checks the bytes left and
 * throws the typed `TruncatedError` instead of reading past the end; lengths and counts are
 * checked against the remaining bytes before anything is allocated.
 */
import { copyBytes } from '@felix/common';
import {
  CountTooLargeError,
  InvalidUtf8Error,
  OffsetOutOfRangeError,
  TrailingBytesError,
  TruncatedError,
} from '../errors.js';
import { OFFSET_MAX, UTF8_MEMO_BYTES_MAX, UTF8_MEMO_SLOTS } from '../limits.js';

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const TWO_32 = 0x1_0000_0000;

/** Decodes UTF-8 strictly; invalid sequences become `InvalidUtf8Error`. */
export function decodeUtf8(bytes: Uint8Array, what: string): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new InvalidUtf8Error(what);
  }
}

/** Recently decoded short strings and copies of their bytes, replaced round-robin. */
const memoBytes: Array<Uint8Array | null> = new Array(UTF8_MEMO_SLOTS).fill(null);
const memoText: string[] = new Array(UTF8_MEMO_SLOTS).fill('');
let memoNext = 0;

/**
 * A string field of a binary frame (InvalidUtf8Error naming `what` and `field` on bad UTF-8).
 * Short ones are kept with their bytes: a stream's frames name the same tenant, namespace and
 * stream again and again, and comparing a few bytes costs less than the decoder.
 */
export function decodeFieldUtf8(bytes: Uint8Array, what: string, field: string): string {
  const n = bytes.length;
  if (n === 0) return '';
  if (n > UTF8_MEMO_BYTES_MAX) return decodeUtf8(bytes, `${what} ${field}`);
  // Equal bytes were valid UTF-8 and decoded to this text when they were kept.
  for (let i = 0; i < UTF8_MEMO_SLOTS; i++) {
    const m = memoBytes[i];
    if (m != null && m.length === n && sameBytes(m, bytes)) return memoText[i]!;
  }
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw new InvalidUtf8Error(`${what} ${field}`);
  }
  memoBytes[memoNext] = copyBytes(bytes);
  memoText[memoNext] = text;
  memoNext = (memoNext + 1) % UTF8_MEMO_SLOTS;
  return text;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class ByteReader {
  private readonly view: DataView;
  position = 0;

  constructor(
    readonly bytes: Uint8Array,
    readonly what: string,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  get remaining(): number {
    return this.bytes.length - this.position;
  }

  need(count: number, field: string): void {
    if (count > this.remaining) {
      throw new TruncatedError(`${this.what} ${field}`, this.position, count, this.remaining);
    }
  }

  /** Steps over `count` bytes already checked with `need`. */
  skip(count: number): void {
    this.position += count;
  }

  /** The bytes from position `from` up to the current position, as (one) view. */
  viewsSince(from: number): Uint8Array[] {
    return [this.bytes.subarray(from, this.position)];
  }

  u8(field: string): number {
    this.need(1, field);
    return this.bytes[this.position++]!;
  }

  u16(field: string): number {
    this.need(2, field);
    const value = this.view.getUint16(this.position);
    this.position += 2;
    return value;
  }

  u32(field: string): number {
    this.need(4, field);
    const value = this.view.getUint32(this.position);
    this.position += 4;
    return value;
  }

  /** A u64 that must fit a safe integer (offsets, ids); larger is `OffsetOutOfRangeError`. */
  u64(field: string): number {
    this.need(8, field);
    const hi = this.view.getUint32(this.position);
    const lo = this.view.getUint32(this.position + 4);
    this.position += 8;
    const value = hi * TWO_32 + lo;
    if (value > OFFSET_MAX) {
      throw new OffsetOutOfRangeError(`${this.what} ${field}`, (BigInt(hi) << 32n) | BigInt(lo));
    }
    return value;
  }

  /** A full-width u64 (producer ids, capability bits). */
  u64Big(field: string): bigint {
    this.need(8, field);
    const value = this.view.getBigUint64(this.position);
    this.position += 8;
    return value;
  }

  /** `count` bytes as a view into the input (no copy). */
  bytesView(count: number, field: string): Uint8Array {
    this.need(count, field);
    const out = this.bytes.subarray(this.position, this.position + count);
    this.position += count;
    return out;
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

/** Bounds a count before anything is allocated for it: at most `max` items, and no more than
 *  the `remaining` bytes could hold at `minItemBytes` each. Shared by both byte readers. */
export function checkCount(
  what: string,
  count: number,
  minItemBytes: number,
  max: number,
  remaining: number,
): number {
  if (count > max) throw new CountTooLargeError(what, count, max);
  if (count * minItemBytes > remaining) {
    throw new CountTooLargeError(what, count, Math.floor(remaining / minItemBytes));
  }
  return count;
}
