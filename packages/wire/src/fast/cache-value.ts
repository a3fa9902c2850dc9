/**
 * The `cache_value` answer to a hot get, written and read without the general JSON codec. The
 * broker builds it from bytes encoded once per remembered value (`valueAnswerHead`) plus the
 * request id (`valueAnswerFrame`); the client reads it against the request it sent
 * (`readValueAnswer`). The request is in cache-get.ts.
 *
 * The codec writes `cache_value` fields in a fixed order (tenant_id, namespace, cache, key,
 * value, request_id, version), so everything before `request_id` depends only on the key and
 * its value: the head is the frame header and that text, encoded by the codec itself, and an
 * answer is the head (its header's length set), `,"request_id":N` and `}`. The bytes are the
 * ones `encodeMessage` writes for the same message (`a_hot_answer_is_the_bytes_the_codec_writes`).
 *
 * The client reads an answer quickly only when the broker echoed the request's tenant,
 * namespace, cache and key byte for byte, the value is canonical padded base64 or null, and what
 * follows is exactly this request's id; anything else (another field, another order, an error)
 * answers undefined and goes to the general decoder, which keeps its strictness
 * (`an_unusual_cache_value_falls_back_to_the_codec`).
 */
import { ownBytes } from '@felix/common';
import {
  asciiBytes,
  bytesStartWith,
  decimalDigits,
  writeDecimal,
  writeU32,
} from '../bytes/ascii.js';
import { writeFrameHeader } from '../frame/header.js';
import { messageJson } from '../json/message-codec.js';
import type { CacheValueMessage } from '../json/message-types.js';
import { FRAME_HEADER_BYTES } from '../limits.js';
import type { SentGetRequest } from './cache-get.js';
import { base64Bytes } from './json-bytes.js';

const UTF8 = new TextEncoder();
const VALUE_OPEN = asciiBytes('{"type":"cache_value",');
const VALUE_FIELD = asciiBytes(',"value":');
const NULL = asciiBytes('null');
const RID_FIELD = asciiBytes(',"request_id":');
const QUOTE = 0x22;
const CLOSE = 0x7d;
/** Where the frame header keeps the payload length (u32, big-endian). */
const LENGTH_AT = 8;

/** A frame header, then the UTF-8 JSON of a `cache_value` without request_id less its `}`. */
export function valueAnswerHead(
  scope: { tenant_id: string; namespace: string; cache: string },
  key: string,
  value: Uint8Array,
): Uint8Array {
  const msg: CacheValueMessage = {
    type: 'cache_value',
    tenant_id: scope.tenant_id,
    namespace: scope.namespace,
    cache: scope.cache,
    key,
    value,
  };
  // Its own allocation: a pooled slice would pin a shared 8 KiB slab for as long as the value
  // stays hot.
  const json = UTF8.encode(messageJson(msg).slice(0, -1));
  const head = new Uint8Array(FRAME_HEADER_BYTES + json.length);
  // The length written here is the head's own; each answer sets its own.
  writeFrameHeader(head, 0, 0, json.length);
  head.set(json, FRAME_HEADER_BYTES);
  return head;
}

/** A complete frame: the head, then the request id (when the request carried one) and `}`. */
export function valueAnswerFrame(head: Uint8Array, requestId: number | undefined): Uint8Array {
  // The request id was decoded as a u64 within OFFSET_MAX (a safe integer): written as its
  // decimal digits straight into the frame, last digit first.
  const digits = requestId === undefined ? 0 : decimalDigits(requestId);
  const size = head.byteLength + (requestId === undefined ? 0 : RID_FIELD.length + digits) + 1;
  // From Buffer's pool where there is one: a fresh ArrayBuffer per answer costs more than the
  // rest of this function, and the frame lives only until the transport has written it.
  const out = ownBytes(size);
  out.set(head, 0);
  writeU32(out, LENGTH_AT, size - FRAME_HEADER_BYTES);
  let at = head.byteLength;
  if (requestId !== undefined) {
    out.set(RID_FIELD, at);
    at += RID_FIELD.length + digits;
    writeDecimal(out, at, requestId);
  }
  out[at] = CLOSE;
  return out;
}

/**
 * The answer to `req` when it is the common form (see the file comment), else undefined. The
 * message carries only `key`, `value` and `request_id`; the echoed scope equals the request's.
 */
export function readValueAnswer(
  req: SentGetRequest,
  key: string,
  p: Uint8Array,
): CacheValueMessage | undefined {
  let at = 0;
  if (!bytesStartWith(p, at, VALUE_OPEN)) return undefined;
  at += VALUE_OPEN.length;
  const echo = req.echoTo - req.echoFrom;
  if (p.length < at + echo) return undefined;
  const sent = req.frame;
  for (let i = 0; i < echo; i++) if (p[at + i] !== sent[req.echoFrom + i]) return undefined;
  at += echo;
  if (!bytesStartWith(p, at, VALUE_FIELD)) return undefined;
  at += VALUE_FIELD.length;
  let value: Uint8Array | undefined;
  if (p[at] === QUOTE) {
    const end = p.indexOf(QUOTE, at + 1);
    if (end < 0) return undefined;
    // Room from Buffer's pool (ownBytes): a fresh ArrayBuffer cost more than the decode.
    value = base64Bytes(p, at + 1, end, ownBytes);
    if (value === undefined) return undefined;
    at = end + 1;
  } else if (bytesStartWith(p, at, NULL)) {
    at += NULL.length;
  } else {
    return undefined;
  }
  if (!bytesStartWith(p, at, RID_FIELD)) return undefined;
  at += RID_FIELD.length;
  const digits = String(req.requestId);
  if (p.length !== at + digits.length + 1 || p[p.length - 1] !== CLOSE) return undefined;
  for (let i = 0; i < digits.length; i++) {
    if (p[at + i] !== digits.charCodeAt(i)) return undefined;
  }
  const msg: CacheValueMessage = { type: 'cache_value', key, request_id: req.requestId };
  if (value !== undefined) msg.value = value;
  return msg;
}
