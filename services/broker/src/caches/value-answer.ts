/**
 * The `cache_value` answer of a hot get, built from bytes encoded once per remembered value.
 * The JSON codec writes `cache_value` fields in a fixed order (tenant_id, namespace, cache, key,
 * value, request_id, version), so everything before `request_id` depends only on the key and its
 * value: the head is that text, encoded by the codec itself, and an answer is the frame header,
 * the head and `,"request_id":N}`. The bytes are the ones `encodeMessage` writes for the same
 * message (`a_hot_answer_is_the_bytes_the_codec_writes`).
 */
import { FRAME_HEADER_BYTES, type Message, messageJson, writeFrameHeader } from '@felix/wire';

type CacheValue = Extract<Message, { type: 'cache_value' }>;

const UTF8 = new TextEncoder();

/** The UTF-8 JSON of a `cache_value` without request_id, less its closing brace. */
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
  return UTF8.encode(messageJson(msg).slice(0, -1));
}

/** A complete frame: header, head, then the request id (when the request carried one). */
export function valueAnswerFrame(head: Uint8Array, requestId: number | undefined): Uint8Array {
  // The request id was decoded as a u64 within OFFSET_MAX, so its decimal text is all ASCII.
  const tail = requestId === undefined ? '}' : `,"request_id":${requestId}}`;
  const length = head.byteLength + tail.length;
  // From Node's pool: a fresh ArrayBuffer per answer costs more than the rest of this function,
  // and the frame lives only until the transport has copied or written it.
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  writeFrameHeader(out, 0, 0, length);
  out.set(head, FRAME_HEADER_BYTES);
  let at = FRAME_HEADER_BYTES + head.byteLength;
  for (let i = 0; i < tail.length; i++) out[at++] = tail.charCodeAt(i);
  return out;
}
