/**
 * Standard base64 (RFC 4648, padded), strict: the reference decodes with a canonical
 * padded engine, so non-alphabet characters, bad padding or non-zero trailing bits are
 * refused. Written out because the codec may not import `node:` and must run in browsers.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const LOOKUP = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) LOOKUP[ALPHABET.charCodeAt(i)] = i;
/** Two output characters per 12 input bits: halves the string appends on the hot loop. */
const PAIRS: string[] = Array.from(
  { length: 4096 },
  (_, i) => ALPHABET[i >> 6]! + ALPHABET[i & 63]!,
);

const CHUNK = 0x2000;
const CANONICAL = /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const hasNative = typeof btoa === 'function' && typeof atob === 'function';

/** Node's `Buffer`, found as a global when running on Node (never imported). */
interface BufferLike {
  from(
    data: ArrayBufferLike,
    offset: number,
    length: number,
  ): { toString(enc: string): string; write(text: string, enc: string): number };
  from(data: string, enc: string): Uint8Array;
}
const NodeBuffer = (globalThis as { Buffer?: BufferLike }).Buffer;

/**
 * Standard padded base64. Uses Node's native `Buffer` when it is a global, else the engine's
 * `btoa` (browsers), else the table below; all three give the same text.
 */
export function base64Encode(bytes: Uint8Array): string {
  if (bytes.length < 64) return base64EncodeTable(bytes);
  if (NodeBuffer)
    return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('base64');
  if (!hasNative) return base64EncodeTable(bytes);
  let binary = '';
  for (let i = 0; i < bytes.length; i += CHUNK) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + CHUNK) as unknown as number[]);
  }
  return btoa(binary);
}

function base64EncodeTable(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += PAIRS[n >> 12]! + PAIRS[n & 4095]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += `${ALPHABET[n >> 18]}${ALPHABET[(n >> 12) & 63]}==`;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += `${ALPHABET[n >> 18]}${ALPHABET[(n >> 12) & 63]}${ALPHABET[(n >> 6) & 63]}=`;
  }
  return out;
}

/** Decodes canonical padded base64; returns undefined for anything else. */
export function base64Decode(text: string): Uint8Array | undefined {
  if (text.length < 64) return base64DecodeTable(text);
  if (!hasNative && !NodeBuffer) return base64DecodeTable(text);
  if (text.length % 4 !== 0 || !CANONICAL.test(text) || !canonicalTail(text)) return undefined;
  if (NodeBuffer) {
    const decoded = NodeBuffer.from(text, 'base64');
    // A copy into a plain Uint8Array: pooled Buffers share one slab with other allocations.
    return new Uint8Array(decoded);
  }
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Bytes `text` decodes to if it is canonical padded base64 of that length shape, else -1. */
export function base64DecodedLength(text: string): number {
  if (text.length % 4 !== 0) return -1;
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  return (text.length / 4) * 3 - pad;
}

/**
 * Decodes canonical padded base64 into `out` at `at` (which must have room for
 * base64DecodedLength(text) bytes), so many payloads can share one allocation. Answers false,
 * having written nothing meaningful, for anything `base64Decode` would refuse.
 */
export function base64DecodeInto(text: string, out: Uint8Array, at: number): boolean {
  const n = base64DecodedLength(text);
  if (n < 0) return false;
  if (text.length < 64 || !NodeBuffer) {
    const bytes = base64Decode(text);
    if (bytes === undefined) return false;
    out.set(bytes, at);
    return true;
  }
  if (!CANONICAL.test(text) || !canonicalTail(text)) return false;
  return NodeBuffer.from(out.buffer, out.byteOffset + at, n).write(text, 'base64') === n;
}

/** The unused low bits of the last sextet before padding must be zero. */
function canonicalTail(text: string): boolean {
  if (text.endsWith('==')) return (sextet(text, text.length - 3) & 0x0f) === 0;
  if (text.endsWith('=')) return (sextet(text, text.length - 2) & 0x03) === 0;
  return true;
}

function base64DecodeTable(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined;
  let pad = 0;
  if (text.endsWith('==')) pad = 2;
  else if (text.endsWith('=')) pad = 1;
  const out = new Uint8Array((text.length / 4) * 3 - pad);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    const last = i + 4 === text.length;
    const a = sextet(text, i);
    const b = sextet(text, i + 1);
    const c = last && pad === 2 ? 0 : sextet(text, i + 2);
    const d = last && pad >= 1 ? 0 : sextet(text, i + 3);
    if (a < 0 || b < 0 || c < 0 || d < 0) return undefined;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = n >> 16;
    if (o < out.length) out[o++] = (n >> 8) & 0xff;
    if (o < out.length) out[o++] = n & 0xff;
    if (last && pad === 2 && (b & 0x0f) !== 0) return undefined;
    if (last && pad === 1 && (c & 0x03) !== 0) return undefined;
  }
  return out;
}

function sextet(text: string, index: number): number {
  const code = text.charCodeAt(index);
  return code < 128 ? LOOKUP[code]! : -1;
}
