/**
 * Small byte helpers for codecs that write or match JSON text by hand (the client's and the
 * broker's quick `cache_get` / `cache_value` paths): ASCII constants, prefix matching and
 * decimal digits written straight into a frame.
 */

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
