/**
 * The decoded-field notation of vectors: how binary layouts and internal messages are
 * written as plain JSON (snake_case fields, payloads as UTF-8 text or hex) and read back.
 */
import {
  CACHE_KIND_GET,
  CACHE_KIND_OK,
  CACHE_KIND_PUT,
  CACHE_KIND_VALUE,
  CacheFrameReader,
  cacheScopeBytes,
  decodeCacheAnswer,
  encodeCacheGet,
  encodeCacheOk,
  encodeCachePut,
  encodeCacheValue,
} from '../binary/cache.js';
import type { EventBatch } from '../binary/event-batch.js';
import {
  GROUP_KIND_ACKED,
  GROUP_KIND_POLL,
  GroupFrameReader,
  decodeGroupAcked,
  encodeGroupAck,
  encodeGroupAcked,
  encodeGroupPoll,
  groupScopeBytes,
} from '../binary/group-requests.js';
import type { PublishAck } from '../binary/publish-ack.js';
import type { BinaryAckMode, PublishBatch } from '../binary/publish-batch.js';
import type { InternalMessage } from '../internal/messages.js';
import type { GroupRecordsMessage } from '../json/message-types.js';
import { fromHex, toHex } from './hex.js';

export type VectorFields = { [key: string]: unknown };

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Writes payloads as `payloads_utf8` when every one is UTF-8, else `payloads_hex`. */
export function payloadFields(payloads: Uint8Array[]): VectorFields {
  try {
    return { payloads_utf8: payloads.map((p) => STRICT_UTF8.decode(p)) };
  } catch {
    return { payloads_hex: payloads.map(toHex) };
  }
}

/** Reads payloads back from either notation. */
export function readPayloads(v: VectorFields): Uint8Array[] {
  if (Array.isArray(v.payloads_utf8)) {
    return v.payloads_utf8.map((p) => new TextEncoder().encode(String(p)));
  }
  if (Array.isArray(v.payloads_hex)) {
    return v.payloads_hex.map((p) => fromHex(String(p)) ?? new Uint8Array(0));
  }
  return [];
}

/**
 * The reference writes an absent optional field as `null` (serde's `Option::None`), this
 * package leaves it out: both mean absent, so a `null` field is dropped before reading.
 */
export function withoutNulls(v: VectorFields): VectorFields {
  const out: VectorFields = {};
  for (const [key, value] of Object.entries(v)) if (value !== null) out[key] = value;
  return out;
}

function setIf(out: VectorFields, key: string, value: unknown): void {
  if (value !== undefined) out[key] = value;
}

export function publishBatchToFields(b: PublishBatch): VectorFields {
  const out: VectorFields = {};
  setIf(out, 'request_id', b.requestId);
  setIf(out, 'ack_mode', b.ackMode);
  setIf(out, 'producer_id', b.producerId?.toString());
  setIf(out, 'sequence', b.sequence);
  if (b.key !== undefined) out.key_utf8 = new TextDecoder().decode(b.key);
  Object.assign(out, { tenant_id: b.tenantId, namespace: b.namespace, stream: b.stream });
  return { ...out, ...payloadFields(b.payloads) };
}

export function publishBatchFromFields(fields: VectorFields): PublishBatch {
  const v = withoutNulls(fields);
  const b: PublishBatch = {
    tenantId: String(v.tenant_id),
    namespace: String(v.namespace),
    stream: String(v.stream),
    payloads: readPayloads(v),
  };
  if (v.request_id !== undefined) b.requestId = Number(v.request_id);
  if (v.ack_mode !== undefined) b.ackMode = v.ack_mode as BinaryAckMode;
  if (v.producer_id !== undefined) b.producerId = BigInt(String(v.producer_id));
  if (v.sequence !== undefined) b.sequence = Number(v.sequence);
  if (v.key_utf8 !== undefined) b.key = new TextEncoder().encode(String(v.key_utf8));
  return b;
}

export function publishAckToFields(a: PublishAck): VectorFields {
  const out: VectorFields = { status: a.status, request_id: a.requestId };
  if (a.status === 'error' || a.message !== '') out.message = a.message;
  setIf(out, 'owner_node_id', a.owner?.nodeId);
  setIf(out, 'owner_addr', a.owner?.addr);
  setIf(out, 'owner_generation', a.owner?.generation);
  setIf(out, 'code', a.code);
  setIf(out, 'retry', a.retry);
  setIf(out, 'reason', a.reason);
  setIf(out, 'retry_after_ms', a.retryAfterMs);
  setIf(out, 'offset', a.offset);
  return out;
}

export function publishAckFromFields(fields: VectorFields): PublishAck {
  const v = withoutNulls(fields);
  const a: PublishAck = {
    status: v.status === 'error' ? 'error' : 'ok',
    requestId: Number(v.request_id),
    message: v.message === undefined ? '' : String(v.message),
  };
  if (v.owner_node_id !== undefined) {
    a.owner = { nodeId: String(v.owner_node_id), generation: Number(v.owner_generation ?? 0) };
    if (v.owner_addr !== undefined) a.owner.addr = String(v.owner_addr);
  }
  if (v.code !== undefined) a.code = Number(v.code);
  if (v.retry !== undefined) a.retry = Number(v.retry);
  if (v.reason !== undefined) a.reason = String(v.reason);
  if (v.retry_after_ms !== undefined) a.retryAfterMs = Number(v.retry_after_ms);
  if (v.offset !== undefined) a.offset = Number(v.offset);
  return a;
}

export function eventBatchToFields(b: EventBatch): VectorFields {
  const out: VectorFields = {};
  setIf(out, 'subscription_id', b.subscriptionId);
  setIf(out, 'base_offset', b.baseOffset);
  setIf(out, 'skipped_before', b.skippedBefore);
  setIf(out, 'publisher', b.publisher);
  setIf(out, 'timestamps_micros', b.timestampsMicros);
  return { ...out, ...payloadFields(b.payloads) };
}

export function eventBatchFromFields(fields: VectorFields): EventBatch {
  const v = withoutNulls(fields);
  const b: EventBatch = { payloads: readPayloads(v) };
  if (v.subscription_id !== undefined) b.subscriptionId = Number(v.subscription_id);
  if (v.base_offset !== undefined) b.baseOffset = Number(v.base_offset);
  if (v.skipped_before !== undefined) b.skippedBefore = Number(v.skipped_before);
  if (v.publisher !== undefined) b.publisher = String(v.publisher);
  if (Array.isArray(v.timestamps_micros)) b.timestampsMicros = v.timestamps_micros.map(Number);
  return b;
}

/** A binary `group_records` answer: `request_id`, and `records` as {offset, attempts, payload_hex}. */
export function groupRecordsToFields(m: GroupRecordsMessage): VectorFields {
  return {
    request_id: m.request_id,
    records: m.records.map((r) => ({
      offset: r.offset,
      attempts: r.attempts,
      payload_hex: toHex(r.payload),
    })),
  };
}

export function groupRecordsFromFields(v: VectorFields): GroupRecordsMessage {
  const records = Array.isArray(v.records) ? (v.records as VectorFields[]) : [];
  return {
    type: 'group_records',
    request_id: Number(v.request_id),
    records: records.map((r) => ({
      offset: Number(r.offset),
      attempts: Number(r.attempts),
      payload: fromHex(String(r.payload_hex)) ?? new Uint8Array(0),
      skipped_before: 0,
    })),
  };
}

const CACHE_KINDS = ['get', 'put', 'value', 'ok'];

/**
 * A binary cache frame's payload (flag word 0x8001) as fields: `cache_kind` (get, put, value,
 * ok), `request_id`, and as the kind has them `tenant_id`, `namespace`, `cache`, `key`, `ttl_ms`
 * and `value_hex` (absent on a miss).
 */
export function cacheFrameToFields(payload: Uint8Array): VectorFields {
  const kind = payload[0];
  if (kind === CACHE_KIND_GET || kind === CACHE_KIND_PUT) {
    const m = new CacheFrameReader().request(payload);
    const out: VectorFields = {
      cache_kind: m.type === 'cache_get' ? 'get' : 'put',
      request_id: m.request_id,
      tenant_id: m.tenant_id,
      namespace: m.namespace,
      cache: m.cache,
      key: m.key,
    };
    if (m.type === 'cache_put') {
      if (m.ttl_ms !== undefined) out.ttl_ms = m.ttl_ms;
      out.value_hex = toHex(m.value);
    }
    return out;
  }
  const a = decodeCacheAnswer(payload, '');
  if (a.type === 'cache_ok') return { cache_kind: 'ok', request_id: a.request_id };
  const out: VectorFields = { cache_kind: 'value', request_id: a.request_id };
  if (a.value !== undefined) out.value_hex = toHex(a.value);
  return out;
}

/** The complete frame the fields describe (cacheFrameToFields' inverse). */
export function cacheFrameFromFields(fields: VectorFields): Uint8Array {
  const v = withoutNulls(fields);
  const rid = Number(v.request_id);
  const value = v.value_hex === undefined ? undefined : (fromHex(String(v.value_hex)) ?? undefined);
  const kind = CACHE_KINDS.indexOf(String(v.cache_kind)) + CACHE_KIND_GET;
  if (kind === CACHE_KIND_OK) return encodeCacheOk(rid);
  if (kind === CACHE_KIND_VALUE) return encodeCacheValue(rid, value);
  const scope = cacheScopeBytes(String(v.tenant_id), String(v.namespace), String(v.cache));
  if (kind === CACHE_KIND_PUT) {
    const ttl = v.ttl_ms === undefined ? undefined : Number(v.ttl_ms);
    return encodeCachePut(scope, String(v.key), value ?? new Uint8Array(0), rid, ttl);
  }
  return encodeCacheGet(scope, String(v.key), rid);
}

/** Internal messages as JSON: bytes become `{"hex": ...}`, bigints `{"u64": "..."}`. */
const GROUP_KINDS = ['poll', 'ack', 'acked'];

/**
 * A binary group frame's payload (flag word 0x8002) as fields: `group_kind` (poll, ack, acked),
 * `request_id`, and as the kind has them `tenant_id`, `namespace`, `stream`, `shard`, `group`,
 * `max_records`, `wait_ms`, `reclaim`, `visibility_ms`, `consumer`, `offsets` and `stale`.
 */
export function groupFrameToFields(payload: Uint8Array): VectorFields {
  if (payload[0] === GROUP_KIND_ACKED) {
    const a = decodeGroupAcked(payload);
    return { group_kind: 'acked', request_id: a.request_id, stale: a.stale };
  }
  const m = new GroupFrameReader().request(payload);
  const out: VectorFields = {
    group_kind: m.type === 'group_poll' ? 'poll' : 'ack',
    request_id: m.request_id,
    tenant_id: m.tenant_id,
    namespace: m.namespace,
    stream: m.stream,
    shard: m.shard,
    group: m.group,
  };
  if (m.type === 'group_ack_batch') {
    out.offsets = m.offsets;
    return out;
  }
  out.max_records = m.max_records;
  out.wait_ms = m.wait_ms;
  out.reclaim = m.reclaim;
  setIf(out, 'visibility_ms', m.visibility_ms);
  setIf(out, 'consumer', m.consumer);
  return out;
}

/** The complete frame the fields describe (groupFrameToFields' inverse). */
export function groupFrameFromFields(fields: VectorFields): Uint8Array {
  const v = withoutNulls(fields);
  const rid = Number(v.request_id);
  const kind = GROUP_KINDS.indexOf(String(v.group_kind)) + GROUP_KIND_POLL;
  const numbers = (x: unknown) => (Array.isArray(x) ? x.map(Number) : []);
  if (kind === GROUP_KIND_ACKED) return encodeGroupAcked(rid, numbers(v.stale));
  const scope = groupScopeBytes(
    String(v.tenant_id),
    String(v.namespace),
    String(v.stream),
    Number(v.shard),
    String(v.group),
  );
  if (kind !== GROUP_KIND_POLL) return encodeGroupAck(scope, numbers(v.offsets), rid);
  const ask = {
    maxRecords: Number(v.max_records),
    waitMs: Number(v.wait_ms),
    reclaim: v.reclaim === true,
    ...(v.visibility_ms !== undefined ? { visibilityMs: Number(v.visibility_ms) } : {}),
    ...(v.consumer !== undefined ? { consumer: String(v.consumer) } : {}),
  };
  return encodeGroupPoll(scope, ask, rid);
}

export function internalToJson(value: unknown): unknown {
  if (value instanceof Uint8Array) return { hex: toHex(value) };
  if (typeof value === 'bigint') return { u64: value.toString() };
  if (Array.isArray(value)) return value.map(internalToJson);
  if (typeof value === 'object' && value !== null) {
    const out: VectorFields = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = internalToJson(v);
    return out;
  }
  return value;
}

export function internalFromJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(internalFromJson);
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value);
    const v = value as VectorFields;
    if (keys.length === 1 && typeof v.hex === 'string') return fromHex(v.hex) ?? new Uint8Array(0);
    if (keys.length === 1 && typeof v.u64 === 'string') return BigInt(v.u64);
    const out: VectorFields = {};
    for (const [k, item] of Object.entries(v)) out[k] = internalFromJson(item);
    return out;
  }
  return value;
}

export type { InternalMessage };
