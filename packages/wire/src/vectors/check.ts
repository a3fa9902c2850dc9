/**
 * Validates one conformance vector both ways: the frame decodes to the vector's fields, and
 * the fields encode to the vector's exact bytes. Pure (the CLI does the file reading), and
 * never throws: every failure is a result with a reason.
 */
import { decodeEventBatch, encodeEventBatch } from '../binary/event-batch.js';
import { decodeGroupRecords, encodeGroupRecordsFrame } from '../binary/group-records.js';
import { decodePublishAck, encodePublishAck } from '../binary/publish-ack.js';
import { decodePublishBatch, encodePublishBatch } from '../binary/publish-batch.js';
import { decodeFrame, encodeFrame } from '../frame/header.js';
import { decodeInternalMessage, encodeInternalMessage } from '../internal/messages.js';
import { InternalFrameDecoder } from '../internal/header.js';
import { decodeMessage, encodeMessage } from '../json/message-codec.js';
import {
  type VectorFields,
  cacheFrameFromFields,
  cacheFrameToFields,
  groupFrameFromFields,
  groupFrameToFields,
  eventBatchFromFields,
  eventBatchToFields,
  groupRecordsFromFields,
  groupRecordsToFields,
  internalFromJson,
  internalToJson,
  publishAckFromFields,
  publishAckToFields,
  publishBatchFromFields,
  publishBatchToFields,
} from './fields.js';
import { fromHex, toHex } from './hex.js';
import type { InternalMessage } from '../internal/messages.js';

export interface VectorResult {
  name: string;
  ok: boolean;
  /** Why it failed (empty when it passed). */
  reason: string;
}

/** Vector kinds this checker knows; any other kind fails. */
export const VECTOR_KINDS = [
  'json_message',
  'binary_publish_batch',
  'binary_acked_publish_batch',
  'binary_idempotent_publish_batch',
  'binary_publish_ack',
  'binary_event_batch',
  'binary_group_records',
  'binary_cache',
  'binary_group',
  'internal_message',
] as const;

const BATCH_KEYS = ['request_id', 'ack_mode', 'producer_id', 'sequence', 'key_utf8', 'tenant_id', 'namespace', 'stream', 'payloads'];
const ACK_KEYS = ['status', 'request_id', 'message', 'owner_node_id', 'owner_addr', 'owner_generation', 'code', 'retry', 'reason', 'retry_after_ms', 'offset'];
const GROUP_RECORDS_KEYS = ['request_id', 'records'];
const CACHE_KEYS = ['cache_kind', 'request_id', 'tenant_id', 'namespace', 'cache', 'key', 'ttl_ms', 'value_hex'];
const GROUP_KEYS = ['group_kind', 'request_id', 'tenant_id', 'namespace', 'stream', 'shard', 'group', 'max_records', 'wait_ms', 'reclaim', 'visibility_ms', 'consumer', 'offsets', 'stale'];
const EVENT_KEYS = ['subscription_id', 'base_offset', 'skipped_before', 'publisher', 'timestamps_micros', 'payloads'];

class Mismatch extends Error {}

/** Checks a vector given its JSON text and, when present, its companion `.hex` text. */
export function checkVector(jsonText: string, hexText?: string, fileName = '?'): VectorResult {
  let name = fileName;
  try {
    const v = JSON.parse(jsonText) as VectorFields;
    if (typeof v.name === 'string') name = v.name;
    checkFields(v, hexText);
    return { name, ok: true, reason: '' };
  } catch (error) {
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { name, ok: false, reason };
  }
}

function checkFields(v: VectorFields, hexText: string | undefined): void {
  const frameHex = expectString(v.frame_hex, 'frame_hex');
  const payloadHex = expectString(v.payload_hex, 'payload_hex');
  const frame = fromHex(frameHex) ?? fail('frame_hex is not hex');
  const payload = fromHex(payloadHex) ?? fail('payload_hex is not hex');
  if (hexText !== undefined && hexText.trim().toLowerCase() !== frameHex.toLowerCase()) {
    fail('.hex file differs from frame_hex');
  }
  const kind = v.kind == null ? 'json_message' : String(v.kind);
  if (!(VECTOR_KINDS as readonly string[]).includes(kind)) fail(`unknown vector kind ${kind}`);
  const flags = v.flags == null ? 0 : Number(v.flags);
  if (kind === 'internal_message') return checkInternal(v, frame, payload);
  same(toHex(encodeFrame(flags, payload)), frameHex, 'framing payload_hex with flags');
  const decoded = decodeFrame(frame);
  same(decoded.flags, flags, 'decoded flags');
  switch (kind) {
    case 'json_message': {
      const message = decodeMessage(decoded.payload);
      if (v.payload_json != null) {
        same(new TextDecoder().decode(payload), String(v.payload_json), 'payload_json');
      }
      same(toHex(encodeMessage(message)), frameHex, 're-encoded message');
      return;
    }
    case 'binary_publish_ack': {
      compare(v, publishAckToFields(decodePublishAck(flags, decoded.payload)), ACK_KEYS);
      same(toHex(encodePublishAck(publishAckFromFields(v))), frameHex, 're-encoded ack');
      return;
    }
    case 'binary_event_batch': {
      compare(v, eventBatchToFields(decodeEventBatch(flags, decoded.payload)), EVENT_KEYS);
      same(toHex(encodeEventBatch(eventBatchFromFields(v))), frameHex, 're-encoded event batch');
      return;
    }
    case 'binary_group_records': {
      compare(v, groupRecordsToFields(decodeGroupRecords(flags, decoded.payload)), GROUP_RECORDS_KEYS);
      same(
        toHex(encodeGroupRecordsFrame(groupRecordsFromFields(v))),
        frameHex,
        're-encoded group records',
      );
      return;
    }
    case 'binary_cache': {
      compare(v, cacheFrameToFields(decoded.payload), CACHE_KEYS);
      same(toHex(cacheFrameFromFields(v)), frameHex, 're-encoded cache frame');
      return;
    }
    case 'binary_group': {
      compare(v, groupFrameToFields(decoded.payload), GROUP_KEYS);
      same(toHex(groupFrameFromFields(v)), frameHex, 're-encoded group frame');
      return;
    }
    default: {
      compare(v, publishBatchToFields(decodePublishBatch(flags, decoded.payload)), BATCH_KEYS);
      same(toHex(encodePublishBatch(publishBatchFromFields(v))), frameHex, 're-encoded batch');
    }
  }
}

function checkInternal(v: VectorFields, frame: Uint8Array, payload: Uint8Array): void {
  const frames = new InternalFrameDecoder().push(frame);
  if (frames.length !== 1) fail('frame_hex is not exactly one internal frame');
  same(toHex(frames[0]!.body), toHex(payload), 'internal body');
  const decoded = decodeInternalMessage(frames[0]!);
  same(JSON.stringify(internalToJson(decoded)), JSON.stringify(v.message), 'decoded message');
  const message = internalFromJson(v.message) as InternalMessage;
  same(toHex(encodeInternalMessage(message)), toHex(frame), 're-encoded internal message');
}

function compare(v: VectorFields, decoded: VectorFields, keys: string[]): void {
  for (const key of keys) {
    if (key === 'payloads') {
      const want = payloadsHex(v);
      const got = payloadsHex(decoded);
      same(JSON.stringify(got), JSON.stringify(want), 'payloads');
      continue;
    }
    same(JSON.stringify(decoded[key]), JSON.stringify(absentAsUndefined(v[key])), key);
  }
}

/** The reference writes an absent optional field as `null` (serde's `Option::None`). */
function absentAsUndefined(value: unknown): unknown {
  return value === null ? undefined : value;
}

function payloadsHex(v: VectorFields): string[] {
  if (Array.isArray(v.payloads_utf8)) {
    return v.payloads_utf8.map((p) => toHex(new TextEncoder().encode(String(p))));
  }
  if (Array.isArray(v.payloads_hex)) return v.payloads_hex.map((p) => String(p).toLowerCase());
  return [];
}

function same(got: unknown, want: unknown, what: string): void {
  if (got !== want) fail(`${what}: got ${String(got)}, want ${String(want)}`);
}

function expectString(value: unknown, what: string): string {
  return typeof value === 'string' ? value : fail(`${what} is missing`);
}

function fail(reason: string): never {
  throw new Mismatch(reason);
}

/** The summary line the CLI ends with. */
export function summaryLine(results: readonly VectorResult[]): string {
  const passed = results.filter((r) => r.ok).length;
  return `${passed} passed, ${results.length - passed} failed`;
}
