/**
 * Small byte helpers for codecs that write or match JSON text by hand (the quick `cache_get` /
 * `cache_value` codecs in src/fast/): ASCII constants, prefix matching, ASCII text read
 * without a decoder, and decimal digits and lengths written straight into a frame.
 */

/** Node's `latin1Slice` where the runtime has Buffer: an ASCII string without a decoder call. */
const latin1Slice = (globalThis as { Buffer?: { prototype: { latin1Slice?: unknown } } }).Buffer
  ?.prototype.latin1Slice as ((this: Uint8Array, start: number, end: number) => string) | undefined;

/** p[from, to) as a string, for bytes the caller checked are ASCII (below 0x80). */
export function asciiText(p: Uint8Array, from: number, to: number): string {
  if (latin1Slice !== undefined) return latin1Slice.call(p, from, to);
  let out = '';
  for (let i = from; i < to; i++) out += String.fromCharCode(p[i]!);
  return out;
}

/** Writes a u32 big-endian at `at` (a frame header's length field). */
export function writeU32(out: Uint8Array, at: number, value: number): void {
  out[at] = value >>> 24;
  out[at + 1] = (value >>> 16) & 0xff;
  out[at + 2] = (value >>> 8) & 0xff;
  out[at + 3] = value & 0xff;
}

/** How many bytes `s` takes as TextEncoder's UTF-8. A lone surrogate counts as U+FFFD's three,
 *  as TextEncoder writes it; this package's encoders refuse such a string (LoneSurrogateError)
 *  before they measure or write it, so only other callers meet that case. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/** The bytes of an ASCII string (one byte per UTF-16 unit; callers pass ASCII only). */
export function asciiBytes(s: string): Uint8Array {
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

/** True when `p` holds `what` at `at` (false when it runs past the end). */
export function bytesStartWith(p: Uint8Array, at: number, what: Uint8Array): boolean {
  if (p.length < at + what.length) return false;
  for (let i = 0; i < what.length; i++) if (p[at + i] !== what[i]) return false;
  return true;
}

/** How many decimal digits a non-negative safe integer has. */
export function decimalDigits(n: number): number {
  let digits = 1;
  for (let v = n; v >= 10; v = Math.floor(v / 10)) digits++;
  return digits;
}

/** Writes a non-negative safe integer's `decimalDigits(n)` digits so that the last ends just
 *  before `end` (last digit first: no string is built). */
export function writeDecimal(out: Uint8Array, end: number, n: number): void {
  for (let i = end - 1, v = n, left = decimalDigits(n); left > 0; i--, left--) {
    out[i] = 0x30 + (v % 10);
    v = Math.floor(v / 10);
  }
}
