/**
 * Binary group exchange (flag word 0x8002, a Felix extension negotiated with
 * FEATURE_HI_GROUP_BINARY): the `group_poll` and `group_ack_batch` requests a consume loop sends
 * for every job, and the `group_acked` answer, without JSON text. A poll is still answered by
 * a `group_records` frame (0x8000 when negotiated, else JSON). Layout, big-endian, after a u8
 * kind:
 *
 *   1 poll:  u64 request_id, u32 max_records, u64 wait_ms, u8 options (bit 0 reclaim, bit 1
 *            visibility_ms follows, bit 2 consumer follows; other bits refused),
 *            [u64 visibility_ms], scope, [u16 consumer_len, consumer]
 *   2 ack:   u64 request_id, scope, u16 count, count × u64 offset
 *   3 acked: u64 request_id, u16 count, count × u64 stale offset
 *
 * where scope is `u16 tenant_len, tenant, u16 namespace_len, namespace, u16 stream_len, stream,
 * u32 shard, u16 group_len, group` (UTF-8). Every length is checked against the bytes left
 * before anything is allocated, and a decoder throws only WireErrors. The broker bounds an ack
 * batch's offsets as it does the JSON form's.
 */
import { copyBytes, ownBytes } from '@felix/common';
import { FieldRangeError, InvalidEnumError } from '../errors.js';
import { FLAG_BINARY_GROUP } from '../flags.js';
import { writeFrameHeader } from '../frame/header.js';
import type {
  GroupAckBatchMessage,
  GroupAckedMessage,
  GroupPollMessage,
} from '../json/message-types.js';
import {
  BINARY_GROUP_OFFSETS_MAX,
  FRAME_HEADER_BYTES,
  GROUP_SCOPE_MEMO_BYTES_MAX,
} from '../limits.js';
import {
  FrameCursor,
  checkU64,
  fieldBytes,
  putU16Bytes,
  putU32,
  putU64,
  sameBytes,
} from './cursor.js';

export const GROUP_KIND_POLL = 1;
export const GROUP_KIND_ACK = 2;
export const GROUP_KIND_ACKED = 3;

const WHAT = 'binary group frame';
/** kind + request id, right after the frame header. */
const HEAD_BYTES = FRAME_HEADER_BYTES + 9;
const OPT_RECLAIM = 1;
const OPT_VISIBILITY = 2;
const OPT_CONSUMER = 4;

export type GroupRequest = GroupPollMessage | GroupAckBatchMessage;

/** What a poll asks beyond its scope (the JSON form's fields). */
export interface PollAsk {
  maxRecords: number;
  waitMs: number;
  reclaim: boolean;
  visibilityMs?: number;
  consumer?: string;
}

/** A group's binary scope, encoded once per group and connection by the client. */
export function groupScopeBytes(
  tenant: string,
  namespace: string,
  stream: string,
  shard: number,
  group: string,
): Uint8Array {
  if (!Number.isInteger(shard) || shard < 0 || shard > 0xffff_ffff) {
    throw new FieldRangeError('shard', `must be a u32, got ${shard}`);
  }
  const t = fieldBytes(tenant, 'tenant');
  const n = fieldBytes(namespace, 'namespace');
  const s = fieldBytes(stream, 'stream');
  const g = fieldBytes(group, 'group');
  const out = new Uint8Array(2 + t.length + 2 + n.length + 2 + s.length + 4 + 2 + g.length);
  let at = putU16Bytes(out, 0, t);
  at = putU16Bytes(out, at, n);
  at = putU16Bytes(out, at, s);
  at = putU32(out, at, shard);
  putU16Bytes(out, at, g);
  return out;
}

/** A binary `group_poll` frame (header included). */
export function encodeGroupPoll(scope: Uint8Array, ask: PollAsk, requestId: number): Uint8Array {
  if (!Number.isInteger(ask.maxRecords) || ask.maxRecords < 0 || ask.maxRecords > 0xffff_ffff) {
    throw new FieldRangeError('max_records', `must be a u32, got ${ask.maxRecords}`);
  }
  checkU64(ask.waitMs, 'wait_ms');
  if (ask.visibilityMs !== undefined) checkU64(ask.visibilityMs, 'visibility_ms');
  const consumer = ask.consumer === undefined ? undefined : fieldBytes(ask.consumer, 'consumer');
  let options = ask.reclaim ? OPT_RECLAIM : 0;
  if (ask.visibilityMs !== undefined) options |= OPT_VISIBILITY;
  if (consumer !== undefined) options |= OPT_CONSUMER;
  const size =
    HEAD_BYTES +
    4 +
    8 +
    1 +
    (ask.visibilityMs === undefined ? 0 : 8) +
    scope.length +
    (consumer === undefined ? 0 : 2 + consumer.length);
  const frame = ownBytes(size);
  let at = head(frame, GROUP_KIND_POLL, requestId);
  at = putU32(frame, at, ask.maxRecords);
  at = putU64(frame, at, ask.waitMs);
  frame[at++] = options;
  if (ask.visibilityMs !== undefined) at = putU64(frame, at, ask.visibilityMs);
  frame.set(scope, at);
  at += scope.length;
  if (consumer !== undefined) putU16Bytes(frame, at, consumer);
  return frame;
}

/** A binary `group_ack_batch` frame (header included) naming `offsets` (at most 65,535). */
export function encodeGroupAck(
  scope: Uint8Array,
  offsets: readonly number[],
  requestId: number,
): Uint8Array {
  if (offsets.length > BINARY_GROUP_OFFSETS_MAX) {
    throw new FieldRangeError('offsets', `a binary ack names at most ${BINARY_GROUP_OFFSETS_MAX}`);
  }
  for (const o of offsets) checkU64(o, 'offset');
  const frame = ownBytes(HEAD_BYTES + scope.length + 2 + 8 * offsets.length);
  let at = head(frame, GROUP_KIND_ACK, requestId);
  frame.set(scope, at);
  at = putOffsets(frame, at + scope.length, offsets);
  return frame;
}

/** A binary `group_acked` frame (header included); `stale` may be empty. */
export function encodeGroupAcked(requestId: number, stale: readonly number[]): Uint8Array {
  if (stale.length > BINARY_GROUP_OFFSETS_MAX) {
    throw new FieldRangeError('stale', `a binary answer names at most ${BINARY_GROUP_OFFSETS_MAX}`);
  }
  for (const o of stale) checkU64(o, 'stale');
  const frame = ownBytes(HEAD_BYTES + 2 + 8 * stale.length);
  putOffsets(frame, head(frame, GROUP_KIND_ACKED, requestId), stale);
  return frame;
}

/** Whether a `group_acked` fits the binary answer (its stale list within a u16 count). */
export function fitsBinaryGroupAcked(m: GroupAckedMessage): boolean {
  return m.stale.length <= BINARY_GROUP_OFFSETS_MAX;
}

/**
 * Reads binary group requests on one stream (the broker's side). The scope bytes of the last
 * request and their strings are kept: a consumer names the same group on every request, and
 * comparing its few dozen bytes costs less than decoding four strings.
 */
export class GroupFrameReader {
  private scopeBytes: Uint8Array | null = null;
  private tenant = '';
  private namespace = '';
  private stream = '';
  private shard = 0;
  private group = '';

  /** A request; anything else (an answer's kind included) is a WireError. */
  request(p: Uint8Array): GroupRequest {
    const c = new FrameCursor(p, WHAT);
    const kind = c.u8('kind');
    if (kind === GROUP_KIND_POLL) return this.poll(c);
    if (kind !== GROUP_KIND_ACK) throw new InvalidEnumError(`${WHAT} request kind`, kind);
    const requestId = c.u64('request_id');
    this.scope(c);
    // An empty list is read as the JSON form's is: the broker refuses it, not the codec.
    const offsets = readOffsets(c, 'offsets');
    c.end();
    const msg: GroupAckBatchMessage = {
      type: 'group_ack_batch',
      tenant_id: this.tenant,
      namespace: this.namespace,
      stream: this.stream,
      shard: this.shard,
      group: this.group,
      offsets,
      request_id: requestId,
    };
    return msg;
  }

  private poll(c: FrameCursor): GroupPollMessage {
    const requestId = c.u64('request_id');
    const max = c.u32('max_records');
    const wait = c.u64('wait_ms');
    const options = c.u8('options');
    if ((options & ~(OPT_RECLAIM | OPT_VISIBILITY | OPT_CONSUMER)) !== 0) {
      throw new InvalidEnumError(`${WHAT} poll options`, options);
    }
    const visibility = (options & OPT_VISIBILITY) !== 0 ? c.u64('visibility_ms') : undefined;
    this.scope(c);
    const consumer = (options & OPT_CONSUMER) !== 0 ? c.text('consumer') : undefined;
    c.end();
    const msg: GroupPollMessage = {
      type: 'group_poll',
      tenant_id: this.tenant,
      namespace: this.namespace,
      stream: this.stream,
      shard: this.shard,
      group: this.group,
      max_records: max,
      wait_ms: wait,
      request_id: requestId,
      reclaim: (options & OPT_RECLAIM) !== 0,
    };
    if (consumer !== undefined) msg.consumer = consumer;
    if (visibility !== undefined) msg.visibility_ms = visibility;
    return msg;
  }

  /** Reads the scope, reusing the last one's strings when its bytes are the same. */
  private scope(c: FrameCursor): void {
    const from = c.at;
    c.skipU16Bytes('tenant');
    c.skipU16Bytes('namespace');
    c.skipU16Bytes('stream');
    c.u32('shard');
    c.skipU16Bytes('group');
    const bytes = c.p.subarray(from, c.at);
    const memo = this.scopeBytes;
    if (memo !== null && sameBytes(memo, bytes)) return;
    const r = new FrameCursor(bytes, WHAT);
    const tenant = r.text('tenant');
    const namespace = r.text('namespace');
    const stream = r.text('stream');
    const shard = r.u32('shard');
    const group = r.text('group');
    this.tenant = tenant;
    this.namespace = namespace;
    this.stream = stream;
    this.shard = shard;
    this.group = group;
    this.scopeBytes = bytes.length <= GROUP_SCOPE_MEMO_BYTES_MAX ? copyBytes(bytes) : null;
  }
}

/** A binary `group_acked` answer (the client's side); anything else is a WireError. */
export function decodeGroupAcked(p: Uint8Array): GroupAckedMessage {
  const c = new FrameCursor(p, WHAT);
  const kind = c.u8('kind');
  if (kind !== GROUP_KIND_ACKED) throw new InvalidEnumError(`${WHAT} answer kind`, kind);
  const requestId = c.u64('request_id');
  const stale = readOffsets(c, 'stale');
  c.end();
  return { type: 'group_acked', stale, request_id: requestId };
}

/** A u16 count and that many u64 offsets, the count checked against the bytes left first. */
function readOffsets(c: FrameCursor, field: string): number[] {
  const n = c.u16(`${field}_count`);
  c.need(8 * n, field); // before the array is made
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = c.u64(field);
  return out;
}

function putOffsets(frame: Uint8Array, at: number, offsets: readonly number[]): number {
  frame[at] = offsets.length >>> 8;
  frame[at + 1] = offsets.length & 0xff;
  at += 2;
  for (let i = 0; i < offsets.length; i++) at = putU64(frame, at, offsets[i]!);
  return at;
}

/** Writes the frame header, kind and request id; returns where the body goes on. */
function head(frame: Uint8Array, kind: number, requestId: number): number {
  checkU64(requestId, 'request_id');
  writeFrameHeader(frame, 0, FLAG_BINARY_GROUP, frame.length - FRAME_HEADER_BYTES);
  frame[FRAME_HEADER_BYTES] = kind;
  return putU64(frame, FRAME_HEADER_BYTES + 1, requestId);
}
