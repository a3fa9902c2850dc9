/**
 * The `cache_get` request and its `cache_value` answer, written and read without the general
 * JSON codec: a get is the cache's hottest request, and the codec's per-field walk, base64
 * regex and extra copies were most of the client's time per get.
 *
 * The request is the codec's exact text (fields in table order, strings through
 * JSON.stringify), so a broker cannot tell the two apart (`a_get_request_is_the_bytes_the_codec_writes`).
 * The answer is read quickly only when the broker echoed the request's tenant, namespace,
 * cache and key byte for byte, the value is canonical padded base64 or null, and what follows
 * is exactly this request's id; anything else (another field, another order, an error) goes
 * to the general decoder, which keeps its strictness (`an_unusual_cache_value_falls_back_to_the_codec`).
 */
import { ownBytes } from '@felix/common';
import {
  FRAME_HEADER_BYTES,
  type Message,
  asciiBytes,
  bytesStartWith as startsWith,
  decimalDigits,
  writeDecimal,
  writeFrameHeader,
} from '@felix/wire';

const GET_OPEN = '{"type":"cache_get",';
const VALUE_OPEN = asciiBytes('{"type":"cache_value",');
const VALUE_FIELD = asciiBytes(',"value":');
const NULL = asciiBytes('null');
const RID_FIELD = asciiBytes(',"request_id":');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const CLOSE = 0x7d;
/** Where the frame header keeps the payload length (u32, big-endian). */
const LENGTH_AT = 8;

/**
 * `{"type":"cache_get",` and the scope fields, up to the key's value: as text, and as a frame
 * header followed by that text's UTF-8 (the header's length is set per request).
 */
export interface GetPrefix {
  text: string;
  frameHead: Uint8Array;
}

export function getRequestPrefix(tenant: string, namespace: string, cache: string): GetPrefix {
  const text = `${GET_OPEN}"tenant_id":${JSON.stringify(tenant)},"namespace":${JSON.stringify(namespace)},"cache":${JSON.stringify(cache)},"key":`;
  const utf8 = Buffer.from(text, 'utf8');
  const frameHead = new Uint8Array(FRAME_HEADER_BYTES + utf8.length);
  writeFrameHeader(frameHead, 0, 0, utf8.length);
  frameHead.set(utf8, FRAME_HEADER_BYTES);
  return { text, frameHead };
}

/** A sent `cache_get` frame, with what reading its answer needs. */
export interface GetRequest {
  frame: Uint8Array;
  /** Where the echoed fields (`"tenant_id":…"key":"…"`) start and end in `frame`. */
  echoFrom: number;
  echoTo: number;
  requestId: number;
}

export function encodeGetRequest(prefix: GetPrefix, key: string, requestId: number): GetRequest {
  // A key of printable ASCII without `"` or `\` is its own JSON text, quoted: its bytes are
  // written straight into the frame. Any other key goes through JSON.stringify.
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === QUOTE || c === BACKSLASH) {
      return encodeGetRequestText(prefix, key, requestId);
    }
  }
  const head = prefix.frameHead;
  const digits = decimalDigits(requestId);
  const size = head.length + key.length + 2 + RID_FIELD.length + digits + 1;
  const frame = Buffer.allocUnsafe(size);
  frame.set(head, 0);
  frame.writeUInt32BE(size - FRAME_HEADER_BYTES, LENGTH_AT);
  let at = head.length;
  frame[at++] = QUOTE;
  for (let i = 0; i < key.length; i++) frame[at++] = key.charCodeAt(i);
  frame[at++] = QUOTE;
  const echoTo = at;
  frame.set(RID_FIELD, at);
  at += RID_FIELD.length + digits;
  // The request id is a safe integer: its decimal digits, straight into the frame.
  writeDecimal(frame, at, requestId);
  frame[at] = CLOSE;
  return { frame, echoFrom: FRAME_HEADER_BYTES + GET_OPEN.length, echoTo, requestId };
}

function encodeGetRequestText(prefix: GetPrefix, key: string, requestId: number): GetRequest {
  const head = `${prefix.text}${JSON.stringify(key)}`;
  const text = `${head},"request_id":${requestId}}`;
  const length = Buffer.byteLength(text);
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  writeFrameHeader(frame, 0, 0, length);
  frame.write(text, FRAME_HEADER_BYTES, 'utf8');
  // The request id and its field name are ASCII: the echo ends where they begin.
  const echoTo = FRAME_HEADER_BYTES + length - (text.length - head.length);
  return { frame, echoFrom: FRAME_HEADER_BYTES + GET_OPEN.length, echoTo, requestId };
}

/**
 * The answer to `req` when it is the common form (see the file comment), else undefined. The
 * message carries only `key`, `value` and `request_id`; the echoed scope equals the request's.
 */
export function readValueAnswer(req: GetRequest, key: string, p: Uint8Array): Message | undefined {
  let at = 0;
  if (!startsWith(p, at, VALUE_OPEN)) return undefined;
  at += VALUE_OPEN.length;
  const echo = req.echoTo - req.echoFrom;
  if (p.length < at + echo) return undefined;
  const sent = req.frame;
  for (let i = 0; i < echo; i++) if (p[at + i] !== sent[req.echoFrom + i]) return undefined;
  at += echo;
  if (!startsWith(p, at, VALUE_FIELD)) return undefined;
  at += VALUE_FIELD.length;
  let value: Uint8Array | undefined;
  if (p[at] === QUOTE) {
    const end = p.indexOf(QUOTE, at + 1);
    if (end < 0) return undefined;
    value = base64Bytes(p, at + 1, end);
    if (value === undefined) return undefined;
    at = end + 1;
  } else if (startsWith(p, at, NULL)) {
    at += NULL.length;
  } else {
    return undefined;
  }
  if (!startsWith(p, at, RID_FIELD)) return undefined;
  at += RID_FIELD.length;
  const digits = String(req.requestId);
  if (p.length !== at + digits.length + 1 || p[p.length - 1] !== CLOSE) return undefined;
  for (let i = 0; i < digits.length; i++) {
    if (p[at + i] !== digits.charCodeAt(i)) return undefined;
  }
  const msg: Message = { type: 'cache_value', key, request_id: req.requestId };
  if (value !== undefined) msg.value = value;
  return msg;
}

const SEXTET = new Int8Array(256).fill(-1);
for (const [i, c] of [
  ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/',
].entries()) {
  SEXTET[c.charCodeAt(0)] = i;
}
const PAD = 0x3d;

/** Canonical padded base64 in p[from, to) (what the codec accepts), else undefined. */
function base64Bytes(p: Uint8Array, from: number, to: number): Uint8Array | undefined {
  const n = to - from;
  if (n % 4 !== 0) return undefined;
  let pad = 0;
  if (n > 0 && p[to - 1] === PAD) pad = p[to - 2] === PAD ? 2 : 1;
  // Room from Buffer's pool (ownBytes): a fresh ArrayBuffer cost more than the decode.
  const out = ownBytes((n / 4) * 3 - pad);
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
