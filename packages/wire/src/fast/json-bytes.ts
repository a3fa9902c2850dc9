/**
 * What the quick request readers (cache-get.ts, cache-put.ts) share: finding the end of a JSON
 * string that needs no unescaping, reading its text, a plain decimal integer, and canonical
 * padded base64 read from and written to bytes. Each answers -1 or undefined for anything it
 * does not take, so the reader can decline and leave the frame to the general codec.
 */
import { asciiText } from '../bytes/ascii.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const PAD = 0x3d;
/** The URL-safe alphabet's characters 62 and 63, which Node's decoder also takes. */
const URL_SAFE_62 = 0x2d;
const URL_SAFE_63 = 0x5f;
/** Digits of an integer taken here: 15 always fit a safe integer (the codec's u64 bound). */
const INT_DIGITS_MAX = 15;

// ignoreBOM: a string that starts with U+FEFF keeps it, as it does inside the whole payload.
const UTF8_IN = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Where the string starting at `at` (just after its opening quote) ends: the index of its
 * closing quote, or -1 when it holds an escape or a control character or is unterminated.
 */
export function stringEnd(p: Uint8Array, at: number): number {
  for (let i = at; i < p.length; i++) {
    const c = p[i]!;
    if (c === QUOTE) return i;
    if (c === BACKSLASH || c < 0x20) return -1;
  }
  return -1;
}

/** p[from, to) as a string: ASCII directly, anything else through strict UTF-8. */
export function text(p: Uint8Array, from: number, to: number): string | undefined {
  for (let i = from; i < to; i++) {
    if (p[i]! >= 0x80) {
      try {
        return UTF8_IN.decode(p.subarray(from, to));
      } catch {
        return undefined; // declined: the codec reports the invalid UTF-8 as its typed error
      }
    }
  }
  return asciiText(p, from, to);
}

/** The integer written in p[from, to) as plain digits (no sign, no leading zero), else undefined. */
export function digitsValue(p: Uint8Array, from: number, to: number): number | undefined {
  const n = to - from;
  if (n < 1 || n > INT_DIGITS_MAX || (n > 1 && p[from] === 0x30)) return undefined;
  let v = 0;
  for (let i = from; i < to; i++) {
    const d = p[i]! - 0x30;
    if (d < 0 || d > 9) return undefined;
    v = v * 10 + d;
  }
  return v;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const SEXTET = new Int8Array(256).fill(-1);
const CHAR = new Uint8Array(64);
for (let i = 0; i < ALPHABET.length; i++) {
  SEXTET[ALPHABET.charCodeAt(i)] = i;
  CHAR[i] = ALPHABET.charCodeAt(i);
}

/** How many bytes of base64 text `n` bytes take (padded). */
export function base64Length(n: number): number {
  return Math.ceil(n / 3) * 4;
}

/** Node's `Buffer` when it is a global (never imported: the codec runs in browsers too). */
interface NodeBytes {
  toString(enc: 'base64' | 'latin1', start?: number, end?: number): string;
  indexOf(byte: number): number;
  write(text: string, offset: number, length: number, enc: 'base64' | 'latin1'): number;
}
const NodeBuffer = (
  globalThis as { Buffer?: { from(data: ArrayBufferLike, at: number, n: number): NodeBytes } }
).Buffer;
const view = (b: Uint8Array): NodeBytes => NodeBuffer!.from(b.buffer, b.byteOffset, b.length);
/**
 * Base64 text from this many characters on goes through Node's native coder: on a kilobyte
 * value it takes half the time of the loops below (the cache put's request and the get's
 * answer carry one each way).
 */
const NATIVE_BASE64_MIN_CHARS = 64;

/** Writes `bytes` as padded base64 at `at` in `out` (room: base64Length); answers the end. */
export function writeBase64(out: Uint8Array, at: number, bytes: Uint8Array): number {
  if (NodeBuffer !== undefined && base64Length(bytes.length) >= NATIVE_BASE64_MIN_CHARS) {
    const encoded = view(bytes).toString('base64');
    return at + view(out).write(encoded, at, encoded.length, 'latin1');
  }
  let o = at;
  let i = 0;
  const whole = bytes.length - (bytes.length % 3);
  for (; i < whole; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o] = CHAR[v >> 18]!;
    out[o + 1] = CHAR[(v >> 12) & 63]!;
    out[o + 2] = CHAR[(v >> 6) & 63]!;
    out[o + 3] = CHAR[v & 63]!;
    o += 4;
  }
  const rest = bytes.length - whole;
  if (rest > 0) {
    const v = (bytes[i]! << 16) | (rest === 2 ? bytes[i + 1]! << 8 : 0);
    out[o] = CHAR[v >> 18]!;
    out[o + 1] = CHAR[(v >> 12) & 63]!;
    out[o + 2] = rest === 2 ? CHAR[(v >> 6) & 63]! : PAD;
    out[o + 3] = PAD;
    o += 4;
  }
  return o;
}

/**
 * The bytes canonical padded base64 in p[from, to) stands for (what the codec accepts), in room
 * `alloc` gives, else undefined.
 */
export function base64Bytes(
  p: Uint8Array,
  from: number,
  to: number,
  alloc: (size: number) => Uint8Array,
): Uint8Array | undefined {
  const n = to - from;
  if (n % 4 !== 0) return undefined;
  let pad = 0;
  if (n > 0 && p[to - 1] === PAD) pad = p[to - 2] === PAD ? 2 : 1;
  const out = alloc((n / 4) * 3 - pad);
  if (NodeBuffer !== undefined && n >= NATIVE_BASE64_MIN_CHARS)
    return nativeBase64(p, from, n, pad, out);
  let o = 0;
  const full = n - (pad > 0 ? 4 : 0);
  for (let i = from; i < from + full; i += 4) {
    const a = SEXTET[p[i]!]!;
    const b = SEXTET[p[i + 1]!]!;
    const c = SEXTET[p[i + 2]!]!;
    const d = SEXTET[p[i + 3]!]!;
    if ((a | b | c | d) < 0) return undefined;
    const v = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = v >> 16;
    out[o++] = (v >> 8) & 0xff;
    out[o++] = v & 0xff;
  }
  if (pad > 0) {
    const i = from + full;
    const a = SEXTET[p[i]!]!;
    const b = SEXTET[p[i + 1]!]!;
    const c = pad === 1 ? SEXTET[p[i + 2]!]! : 0;
    if ((a | b | c) < 0) return undefined;
    // The bits past the last byte must be zero (canonical), as the codec requires.
    if (pad === 2 ? (b & 0x0f) !== 0 : (c & 0x03) !== 0) return undefined;
    const v = (a << 18) | (b << 12) | (c << 6);
    out[o++] = v >> 16;
    if (pad === 1) out[o++] = (v >> 8) & 0xff;
  }
  return out;
}

/**
 * `base64Bytes` through Node's decoder, which is lenient: it skips characters outside the
 * alphabet, stops at a `=`, takes the URL-safe alphabet (`-`, `_`) and ignores the bits past
 * the last byte. The first two leave it short of the length canonical text of `n` characters
 * stands for, so the text is taken only when the decoder filled `out` exactly, holds neither
 * URL-safe character and its last quantum's spare bits are zero: the canonical form, as the
 * loop in `base64Bytes` takes. (Checking this way instead of encoding the bytes back and
 * comparing texts saves a second kilobyte string per value; docs/perf.md, session 18.)
 */
function nativeBase64(
  p: Uint8Array,
  from: number,
  n: number,
  pad: number,
  out: Uint8Array,
): Uint8Array | undefined {
  const src = NodeBuffer!.from(p.buffer, p.byteOffset + from, n);
  if (view(out).write(src.toString('latin1'), 0, out.length, 'base64') !== out.length) {
    return undefined;
  }
  if (src.indexOf(URL_SAFE_62) >= 0 || src.indexOf(URL_SAFE_63) >= 0) return undefined;
  if (pad === 0) return out;
  // The last character before the padding carries 4 (pad 2) or 2 (pad 1) bits past the bytes.
  const last = SEXTET[p[from + n - pad - 1]!]!;
  return (last & (pad === 2 ? 0x0f : 0x03)) === 0 ? out : undefined;
}
