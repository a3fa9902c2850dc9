/**
 * The `cache_value` answer of a hot get, built from bytes encoded once per remembered value.
 * The JSON codec writes `cache_value` fields in a fixed order (tenant_id, namespace, cache, key,
 * value, request_id, version), so everything before `request_id` depends only on the key and its
 * value: the head is the frame header and that text, encoded by the codec itself, and an answer
 * is the head (its header's length set), `,"request_id":N` and `}`. The bytes are the ones
 * `encodeMessage` writes for the same message (`a_hot_answer_is_the_bytes_the_codec_writes`).
 */
import {
  FRAME_HEADER_BYTES,
  type Message,
  asciiBytes,
  decimalDigits,
  messageJson,
  writeDecimal,
  writeFrameHeader,
} from '@felix/wire';

type CacheValue = Extract<Message, { type: 'cache_value' }>;

const UTF8 = new TextEncoder();
const RID_FIELD = asciiBytes(',"request_id":');
const CLOSE = 0x7d;
/** Where the frame header keeps the payload length (u32, big-endian). */
const LENGTH_AT = 8;

/** A frame header, then the UTF-8 JSON of a `cache_value` without request_id less its `}`. */
export function valueAnswerHead(
  scope: { tenant_id: string; namespace: string; cache: string },
  key: string,
  value: Uint8Array,
): Uint8Array {
  const msg: CacheValue = {
    type: 'cache_value',
    tenant_id: scope.tenant_id,
    namespace: scope.namespace,
    cache: scope.cache,
    key,
    value,
  };
  // Its own allocation: a pooled Buffer slice would pin a shared 8 KiB slab for as long as the
  // value stays hot.
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
  // From Node's pool: a fresh ArrayBuffer per answer costs more than the rest of this function,
  // and the frame lives only until the transport has copied or written it.
  const out = Buffer.allocUnsafe(size);
  out.set(head, 0);
  out.writeUInt32BE(size - FRAME_HEADER_BYTES, LENGTH_AT);
  let at = head.byteLength;
  if (requestId !== undefined) {
    out.set(RID_FIELD, at);
    at += RID_FIELD.length + digits;
    writeDecimal(out, at, requestId);
  }
  out[at] = CLOSE;
  return out;
}
