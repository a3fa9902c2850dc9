/**
 * The `cache_get` request, written and read without the general JSON codec: a get is the
 * cache's hottest request, and the codec's per-field walk and extra copies were most of each
 * end's time per get. The client writes it (`getRequestPrefix`, `encodeGetRequest`); the broker
 * reads it (`GetRequestReader`). Its answer is in cache-value.ts.
 *
 * The request is the codec's exact text, so a broker cannot tell the two apart
 * (`a_get_request_is_the_bytes_the_codec_writes`):
 *
 *   {"type":"cache_get","tenant_id":S,"namespace":S,"cache":S,"key":S,"request_id":N}
 *
 * The reader takes only that form, or the same without `,"request_id":N`: no whitespace, these
 * fields once each in this order, every string without escapes or control characters (valid
 * UTF-8), N a plain integer of at most 15 digits. Anything else answers undefined and the
 * caller decodes the frame with `decodeMessage`, which keeps every check and typed error; so
 * what the reader answers is exactly what `decodeMessage` answers for the same bytes
 * (`the_get_reader_agrees_with_the_codec_on_arbitrary_and_mutated_frames`). It never throws and
 * reads each byte at most twice, so its cost is bounded by the frame.
 */
import { ownBytes } from '@felix/common';
import {
  asciiBytes,
  bytesStartWith,
  decimalDigits,
  utf8Length,
  writeDecimal,
  writeU32,
} from '../bytes/ascii.js';
import { checkWellFormed } from '../bytes/writer.js';
import { writeFrameHeader } from '../frame/header.js';
import type { CacheGetMessage } from '../json/message-types.js';
import { FRAME_HEADER_BYTES, GET_SCOPE_MEMO_BYTES_MAX } from '../limits.js';
import { digitsValue, stringEnd, text } from './json-bytes.js';

const GET_OPEN = '{"type":"cache_get",';
const OPEN = asciiBytes('{"type":"cache_get","tenant_id":"');
const NAMESPACE = asciiBytes('","namespace":"');
const CACHE = asciiBytes('","cache":"');
const KEY = asciiBytes('","key":"');
const RID = asciiBytes('","request_id":');
const RID_FIELD = asciiBytes(',"request_id":');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const CLOSE = 0x7d;
/** Where the frame header keeps the payload length (u32, big-endian). */
const LENGTH_AT = 8;

const UTF8_OUT = new TextEncoder();

/**
 * `{"type":"cache_get",` and the scope fields, up to the key's value: as text, and as a frame
 * header followed by that text's UTF-8 (the header's length is set per request).
 */
export interface GetPrefix {
  text: string;
  frameHead: Uint8Array;
}

export function getRequestPrefix(tenant: string, namespace: string, cache: string): GetPrefix {
  checkScope('cache_get', tenant, namespace, cache);
  const text = `${GET_OPEN}"tenant_id":${JSON.stringify(tenant)},"namespace":${JSON.stringify(namespace)},"cache":${JSON.stringify(cache)},"key":`;
  const utf8 = UTF8_OUT.encode(text);
  const frameHead = new Uint8Array(FRAME_HEADER_BYTES + utf8.length);
  writeFrameHeader(frameHead, 0, 0, utf8.length);
  frameHead.set(utf8, FRAME_HEADER_BYTES);
  return { text, frameHead };
}

/** A `cache_get` frame as sent, with what reading its answer needs (cache-value.ts). */
export interface SentGetRequest {
  frame: Uint8Array;
  /** Where the echoed fields (`"tenant_id":…"key":"…"`) start and end in `frame`. */
  echoFrom: number;
  echoTo: number;
  requestId: number;
}

export function encodeGetRequest(
  prefix: GetPrefix,
  key: string,
  requestId: number,
): SentGetRequest {
  // A key of printable ASCII without `"` or `\` is its own JSON text, quoted: its bytes are
  // written straight into the frame. Any other key goes through JSON.stringify.
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === QUOTE || c === BACKSLASH) {
      return encodeGetRequestText(prefix, key, requestId);
    }
  }
  // Printable ASCII: no lone surrogate to look for.
  const head = prefix.frameHead;
  const digits = decimalDigits(requestId);
  const size = head.length + key.length + 2 + RID_FIELD.length + digits + 1;
  // From Buffer's pool where there is one: a fresh ArrayBuffer per get cost more than the rest.
  const frame = ownBytes(size);
  frame.set(head, 0);
  writeU32(frame, LENGTH_AT, size - FRAME_HEADER_BYTES);
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

function encodeGetRequestText(prefix: GetPrefix, key: string, requestId: number): SentGetRequest {
  checkWellFormed(key, 'cache_get.key');
  const head = `${prefix.text}${JSON.stringify(key)}`;
  const text = `${head},"request_id":${requestId}}`;
  const length = utf8Length(text);
  const frame = ownBytes(FRAME_HEADER_BYTES + length);
  writeFrameHeader(frame, 0, 0, length);
  UTF8_OUT.encodeInto(text, frame.subarray(FRAME_HEADER_BYTES));
  // The request id and its field name are ASCII: the echo ends where they begin.
  const echoTo = FRAME_HEADER_BYTES + length - (text.length - head.length);
  return { frame, echoFrom: FRAME_HEADER_BYTES + GET_OPEN.length, echoTo, requestId };
}

/** Refuses a scope name holding a lone surrogate, as the JSON codec would for `type`. */
export function checkScope(type: string, tenant: string, namespace: string, cache: string): void {
  checkWellFormed(tenant, `${type}.tenant_id`);
  checkWellFormed(namespace, `${type}.namespace`);
  checkWellFormed(cache, `${type}.cache`);
}

/**
 * The scope (tenant, namespace, cache) of a cache request read from its bytes, reused while the
 * next request's scope bytes are the same: consecutive requests on a stream usually name one
 * cache. The get and put readers share it.
 */
export class ScopeReader {
  private scope: Uint8Array | null = null;
  protected tenant = '';
  protected namespace = '';
  protected cache = '';

  /** Sets tenant, namespace and cache (reused while their bytes repeat); false on bad UTF-8. */
  protected readScope(
    p: Uint8Array,
    tenantAt: number,
    tenantEnd: number,
    namespaceAt: number,
    namespaceEnd: number,
    cacheAt: number,
    cacheEnd: number,
  ): boolean {
    const memo = this.scope;
    if (memo !== null && memo.length === cacheEnd - tenantAt && bytesStartWith(p, tenantAt, memo))
      return true;
    const tenant = text(p, tenantAt, tenantEnd);
    const namespace = text(p, namespaceAt, namespaceEnd);
    const cache = text(p, cacheAt, cacheEnd);
    if (tenant === undefined || namespace === undefined || cache === undefined) return false;
    this.tenant = tenant;
    this.namespace = namespace;
    this.cache = cache;
    this.scope =
      cacheEnd - tenantAt <= GET_SCOPE_MEMO_BYTES_MAX ? p.slice(tenantAt, cacheEnd) : null;
    return true;
  }
}

/**
 * Reads get requests on one stream. The scope (tenant, namespace, cache) of consecutive gets is
 * usually the same bytes: it is decoded once and its strings reused while the bytes match.
 */
export class GetRequestReader extends ScopeReader {
  /** The request, or undefined when the payload is not in the exact form (see above). */
  read(p: Uint8Array): CacheGetMessage | undefined {
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
    if (keyEnd < 0) return undefined;
    let requestId: number | undefined;
    if (keyEnd + 2 === p.length && p[keyEnd + 1] === CLOSE) {
      requestId = undefined;
    } else {
      if (!bytesStartWith(p, keyEnd, RID)) return undefined;
      requestId = digitsValue(p, keyEnd + RID.length, p.length - 1);
      if (requestId === undefined || p[p.length - 1] !== CLOSE) return undefined;
    }
    const key = text(p, keyAt, keyEnd);
    if (key === undefined) return undefined;
    if (!this.readScope(p, tenantAt, tenantEnd, namespaceAt, namespaceEnd, cacheAt, cacheEnd))
      return undefined;
    const msg: CacheGetMessage = {
      type: 'cache_get',
      tenant_id: this.tenant,
      namespace: this.namespace,
      cache: this.cache,
      key,
    };
    if (requestId !== undefined) msg.request_id = requestId;
    return msg;
  }
}
