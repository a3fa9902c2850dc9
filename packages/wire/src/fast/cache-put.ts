/**
 * The `cache_put` request and its `cache_ok` answer, written and read without the general JSON
 * codec, as cache-get.ts does for the get: the codec's field walk, its base64 string and the
 * copies between them were most of what a put cost either end beyond a get. The client writes
 * the request (`putRequestPrefix`, `encodePutRequest`) and reads the answer (`readOkAnswer`);
 * the broker reads the request (`PutRequestReader`) and writes the answer (`okAnswerFrame`).
 *
 * The request is the codec's exact text (`a_put_request_is_the_bytes_the_codec_writes`):
 *
 *   {"type":"cache_put","tenant_id":S,"namespace":S,"cache":S,"key":S,"value":B,"request_id":N,"ttl_ms":T}
 *
 * where B is canonical padded base64 in quotes, `,"request_id":N` may be absent and T is `null`
 * or an integer. The reader takes only that form: no whitespace, these fields once each in this
 * order, every string without escapes or control characters (valid UTF-8), N and T plain
 * integers of at most 15 digits. Anything else answers undefined and the caller decodes the
 * frame with `decodeMessage`, so what the reader answers is what `decodeMessage` answers for the
 * same bytes (`the_put_reader_agrees_with_the_codec_on_arbitrary_and_mutated_frames`). It never
 * throws, and the value it answers is an allocation of its own (a cache keeps it).
 */
import { asciiBytes, bytesStartWith, decimalDigits, writeDecimal } from '../bytes/ascii.js';
import { writeFrameHeader } from '../frame/header.js';
import { encodeMessage } from '../json/message-codec.js';
import type { CacheOkMessage, CachePutMessage } from '../json/message-types.js';
import { FRAME_HEADER_BYTES, OFFSET_MAX } from '../limits.js';
import { checkWellFormed } from '../bytes/writer.js';
import { ScopeReader, checkScope } from './cache-get.js';
import {
  base64Bytes,
  base64Length,
  digitsValue,
  stringEnd,
  text,
  writeBase64,
} from './json-bytes.js';

const PUT_OPEN = '{"type":"cache_put",';
const OPEN = asciiBytes('{"type":"cache_put","tenant_id":"');
const NAMESPACE = asciiBytes('","namespace":"');
const CACHE = asciiBytes('","cache":"');
const KEY = asciiBytes('","key":"');
const VALUE = asciiBytes('","value":"');
const VALUE_FIELD = asciiBytes(',"value":"');
const RID_FIELD = asciiBytes(',"request_id":');
const TTL_FIELD = asciiBytes(',"ttl_ms":');
const NULL_CLOSE = asciiBytes('null}');
const OK_OPEN = asciiBytes('{"type":"cache_ok","request_id":');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const CLOSE = 0x7d;
const COMMA = 0x2c;

const UTF8 = new TextEncoder();
const ownAllocation = (size: number) => new Uint8Array(size);

/** `{"type":"cache_put",` and the scope fields up to the key's value, as UTF-8. */
export interface PutPrefix {
  bytes: Uint8Array;
}

export function putRequestPrefix(tenant: string, namespace: string, cache: string): PutPrefix {
  checkScope('cache_put', tenant, namespace, cache);
  const head = `${PUT_OPEN}"tenant_id":${JSON.stringify(tenant)},"namespace":${JSON.stringify(namespace)},"cache":${JSON.stringify(cache)},"key":`;
  return { bytes: UTF8.encode(head) };
}

/** The key as its JSON text's UTF-8: its own bytes, quoted, when it needs no escape (printable
 *  ASCII: no lone surrogate to look for). */
function keyJson(key: string): Uint8Array | undefined {
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === QUOTE || c === BACKSLASH) {
      checkWellFormed(key, 'cache_put.key');
      return UTF8.encode(JSON.stringify(key));
    }
  }
  return undefined;
}

const isU64 = (n: number | undefined) =>
  n === undefined || (Number.isInteger(n) && n >= 0 && n <= OFFSET_MAX);

/**
 * A complete `cache_put` frame. A request id or ttl the codec would refuse goes to the codec,
 * which throws its typed error.
 */
export function encodePutRequest(
  prefix: PutPrefix,
  scope: { tenant_id: string; namespace: string; cache: string },
  key: string,
  value: Uint8Array,
  requestId: number,
  ttlMs?: number,
): Uint8Array {
  if (!isU64(requestId) || !isU64(ttlMs) || !(value instanceof Uint8Array)) {
    const msg: CachePutMessage = { type: 'cache_put', ...scope, key, value, request_id: requestId };
    if (ttlMs !== undefined) msg.ttl_ms = ttlMs;
    return encodeMessage(msg);
  }
  const escaped = keyJson(key);
  const head = prefix.bytes;
  const keyBytes = escaped === undefined ? key.length + 2 : escaped.length;
  const ridDigits = decimalDigits(requestId);
  const ttlBytes = ttlMs === undefined ? 4 : decimalDigits(ttlMs);
  const size =
    FRAME_HEADER_BYTES +
    head.length +
    keyBytes +
    VALUE_FIELD.length +
    base64Length(value.length) +
    1 +
    RID_FIELD.length +
    ridDigits +
    TTL_FIELD.length +
    ttlBytes +
    1;
  // Its own allocation: the value's kilobyte would not fit Buffer's small pool anyway.
  const frame = new Uint8Array(size);
  writeFrameHeader(frame, 0, 0, size - FRAME_HEADER_BYTES);
  frame.set(head, FRAME_HEADER_BYTES);
  let at = writeKey(frame, FRAME_HEADER_BYTES + head.length, key, escaped);
  frame.set(VALUE_FIELD, at);
  at = writeBase64(frame, at + VALUE_FIELD.length, value);
  frame[at++] = QUOTE;
  frame.set(RID_FIELD, at);
  at += RID_FIELD.length + ridDigits;
  writeDecimal(frame, at, requestId);
  frame.set(TTL_FIELD, at);
  at += TTL_FIELD.length;
  if (ttlMs === undefined) frame.set(NULL_CLOSE, at);
  else {
    writeDecimal(frame, at + ttlBytes, ttlMs);
    frame[at + ttlBytes] = CLOSE;
  }
  return frame;
}

function writeKey(frame: Uint8Array, at: number, key: string, escaped?: Uint8Array): number {
  if (escaped !== undefined) {
    frame.set(escaped, at);
    return at + escaped.length;
  }
  frame[at++] = QUOTE;
  for (let i = 0; i < key.length; i++) frame[at++] = key.charCodeAt(i);
  frame[at++] = QUOTE;
  return at;
}

/** Reads put requests on one stream, reusing the scope's strings while its bytes repeat. */
export class PutRequestReader extends ScopeReader {
  /** The request, or undefined when the payload is not in the exact form (see above). */
  read(p: Uint8Array): CachePutMessage | undefined {
    if (!bytesStartWith(p, 0, OPEN)) return undefined;
    const tenantAt = OPEN.length;
    const tenantEnd = stringEnd(p, tenantAt);
    if (tenantEnd < 0 || !bytesStartWith(p, tenantEnd, NAMESPACE)) return undefined;
    const namespaceAt = tenantEnd + NAMESPACE.length;
    const namespaceEnd = stringEnd(p, namespaceAt);
    if (namespaceEnd < 0 || !bytesStartWith(p, namespaceEnd, CACHE)) return undefined;
    const cacheAt = namespaceEnd + CACHE.length;
    const cacheEnd = stringEnd(p, cacheAt);
    if (cacheEnd < 0 || !bytesStartWith(p, cacheEnd, KEY)) return undefined;
    const keyAt = cacheEnd + KEY.length;
    const keyEnd = stringEnd(p, keyAt);
    if (keyEnd < 0 || !bytesStartWith(p, keyEnd, VALUE)) return undefined;
    const valueAt = keyEnd + VALUE.length;
    const valueEnd = p.indexOf(QUOTE, valueAt);
    if (valueEnd < 0) return undefined;
    const tail = readTail(p, valueEnd + 1);
    if (tail === undefined) return undefined;
    const key = text(p, keyAt, keyEnd);
    if (key === undefined) return undefined;
    if (!this.readScope(p, tenantAt, tenantEnd, namespaceAt, namespaceEnd, cacheAt, cacheEnd))
      return undefined;
    const value = base64Bytes(p, valueAt, valueEnd, ownAllocation);
    if (value === undefined) return undefined;
    const msg: CachePutMessage = {
      type: 'cache_put',
      tenant_id: this.tenant,
      namespace: this.namespace,
      cache: this.cache,
      key,
      value,
    };
    if (tail.requestId !== undefined) msg.request_id = tail.requestId;
    if (tail.ttlMs !== undefined) msg.ttl_ms = tail.ttlMs;
    return msg;
  }
}

/** `[,"request_id":N],"ttl_ms":T}` from `at` to the payload's end, else undefined. */
function readTail(
  p: Uint8Array,
  at: number,
): { requestId: number | undefined; ttlMs: number | undefined } | undefined {
  let requestId: number | undefined;
  if (bytesStartWith(p, at, RID_FIELD)) {
    const from = at + RID_FIELD.length;
    let end = from;
    while (end < p.length && p[end] !== COMMA) end++;
    requestId = digitsValue(p, from, end);
    if (requestId === undefined) return undefined;
    at = end;
  }
  if (!bytesStartWith(p, at, TTL_FIELD)) return undefined;
  at += TTL_FIELD.length;
  if (p.length === at + NULL_CLOSE.length && bytesStartWith(p, at, NULL_CLOSE)) {
    return { requestId, ttlMs: undefined };
  }
  if (p[p.length - 1] !== CLOSE) return undefined;
  const ttlMs = digitsValue(p, at, p.length - 1);
  return ttlMs === undefined ? undefined : { requestId, ttlMs };
}

/** `{"type":"cache_ok","request_id":N}` as a frame: the bytes the codec writes for it. */
export function okAnswerFrame(requestId: number): Uint8Array {
  const digits = decimalDigits(requestId);
  const size = FRAME_HEADER_BYTES + OK_OPEN.length + digits + 1;
  const frame = new Uint8Array(size);
  writeFrameHeader(frame, 0, 0, size - FRAME_HEADER_BYTES);
  frame.set(OK_OPEN, FRAME_HEADER_BYTES);
  writeDecimal(frame, size - 1, requestId);
  frame[size - 1] = CLOSE;
  return frame;
}

/** The answer when it is exactly `cache_ok` for `requestId`; anything else answers undefined. */
export function readOkAnswer(requestId: number, p: Uint8Array): CacheOkMessage | undefined {
  const digits = decimalDigits(requestId);
  if (p.length !== OK_OPEN.length + digits + 1 || !bytesStartWith(p, 0, OK_OPEN)) return undefined;
  if (p[p.length - 1] !== CLOSE) return undefined;
  for (let i = p.length - 2, v = requestId; i >= OK_OPEN.length; i--, v = Math.floor(v / 10)) {
    if (p[i] !== 0x30 + (v % 10)) return undefined;
  }
  return { type: 'cache_ok', request_id: requestId };
}
