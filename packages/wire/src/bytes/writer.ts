/**
 * A fixed-size big-endian writer. Encoders compute the exact size first, allocate once and
 * fill; `finish()` asserts the computed size was exact, so a size bug fails loudly.
 */
import { assert } from '@felix/common';
import { FieldRangeError, LoneSurrogateError } from '../errors.js';
import { OFFSET_MAX, WRITER_UNZEROED_BYTES_MIN } from '../limits.js';

const UTF8 = new TextEncoder();
const TWO_32 = 0x1_0000_0000;
const NodeBuffer = (globalThis as { Buffer?: { allocUnsafeSlow(size: number): Uint8Array } })
  .Buffer;

/** A plain Uint8Array of `size` bytes, left unzeroed when large and the runtime allows it. */
function allocate(size: number): Uint8Array {
  if (size < WRITER_UNZEROED_BYTES_MIN || NodeBuffer === undefined) return new Uint8Array(size);
  const b = NodeBuffer.allocUnsafeSlow(size);
  return new Uint8Array(b.buffer, b.byteOffset, size);
}

/**
 * Refuses a string holding a lone UTF-16 surrogate (LoneSurrogateError naming `what`): UTF-8 has
 * no bytes for one and TextEncoder would write U+FFFD's, turning it into another string.
 * `isWellFormed` answers at once for a string of one-byte characters and scans others once.
 */
export function checkWellFormed(text: string, what: string): void {
  if (typeof text === 'string' && !text.isWellFormed()) {
    throw new LoneSurrogateError(what, loneSurrogateAt(text));
  }
}

/** The UTF-16 index of the first lone surrogate in `text`, or -1 (for the error only). */
function loneSurrogateAt(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    const next = text.charCodeAt(i + 1);
    if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return i;
    i++;
  }
  return -1;
}

/** The UTF-8 bytes of a string field, refused when it holds a lone surrogate. */
export function utf8Bytes(text: string, what: string): Uint8Array {
  checkWellFormed(text, what);
  return UTF8.encode(text);
}

/** The UTF-8 bytes of JSON text whose strings were checked (`JSON.stringify` itself writes a
 *  lone surrogate as a `\ud800` escape, so the text is well-formed): not scanned again. */
export function jsonUtf8(text: string): Uint8Array {
  return UTF8.encode(text);
}

/** Checks a number is an integer in `[0, max]` before it is written to a wire field. */
export function checkUint(value: number, max: number, what: string): void {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new FieldRangeError(what, `must be an integer in [0, ${max}], got ${value}`);
  }
}

export class ByteWriter {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  position = 0;

  /** `into`, when given, is the `size` bytes to fill (a caller's reused buffer): no allocation. */
  constructor(size: number, into?: Uint8Array | null) {
    assert(into == null || into.length === size, 'a writer fills exactly the bytes it is given');
    this.bytes = into ?? allocate(size);
    this.view = new DataView(this.bytes.buffer, this.bytes.byteOffset, size);
  }

  u8(value: number): void {
    this.bytes[this.position++] = value;
  }

  u16(value: number): void {
    this.view.setUint16(this.position, value);
    this.position += 2;
  }

  u32(value: number): void {
    this.view.setUint32(this.position, value);
    this.position += 4;
  }

  /** Writes a safe non-negative integer as u64. */
  u64(value: number, what: string): void {
    checkUint(value, OFFSET_MAX, what);
    this.view.setUint32(this.position, Math.floor(value / TWO_32));
    this.view.setUint32(this.position + 4, value >>> 0);
    this.position += 8;
  }

  u64Big(value: bigint, what: string): void {
    if (value < 0n || value > 0xffff_ffff_ffff_ffffn) {
      throw new FieldRangeError(what, `must fit a u64, got ${value}`);
    }
    this.view.setBigUint64(this.position, value);
    this.position += 8;
  }

  raw(bytes: Uint8Array): void {
    this.bytes.set(bytes, this.position);
    this.position += bytes.length;
  }

  finish(): Uint8Array {
    assert(this.position === this.bytes.length, 'encoder size computation was not exact');
    return this.bytes;
  }
}
