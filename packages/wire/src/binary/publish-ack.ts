/**
 * Binary publish acknowledgement (flag 0x0010). Layout, big-endian:
 *   u8 status (0 ok, 1 error), u64 request_id, u16 message_len, message (UTF-8)
 *   [0x0080 owner]  u16 node_id_len, node_id, u16 addr_len (0 = absent), addr, u64 generation
 *   [0x0200 code]   u16 code, u8 retry                  (failed acks only)
 *   [0x0400 detail] u16 reason_len, reason, u64 retry_after_ms (0 = none; needs 0x0200)
 *   [0x1000 offset] u64 offset of the batch's first record (successful acks only; last)
 */
import { ByteReader, decodeUtf8 } from '../bytes/reader.js';
import { ByteWriter } from '../bytes/writer.js';
import { FieldRangeError, InvalidEnumError, InvalidFlagCombinationError } from '../errors.js';
import {
  FLAG_BINARY_PUBLISH_ACK,
  FLAG_BINARY_PUBLISH_ACK_CODE,
  FLAG_BINARY_PUBLISH_ACK_DETAIL,
  FLAG_BINARY_PUBLISH_ACK_OFFSET,
  FLAG_BINARY_PUBLISH_ACK_OWNER,
  frameLayout,
} from '../flags.js';
import { writeFrameHeader } from '../frame/header.js';
import { FRAME_HEADER_BYTES } from '../limits.js';
import { readU16Bytes, readU16String, u16Field, writeU16Bytes } from './strings.js';

export interface AckOwner {
  nodeId: string;
  /** Client-facing address; absent when the cluster has not published one. */
  addr?: string;
  generation: number;
}

export interface PublishAck {
  status: 'ok' | 'error';
  requestId: number;
  /** Error text (empty on ok). */
  message: string;
  /** 0x0080: the batch was forwarded; a hint naming the shard owner. */
  owner?: AckOwner;
  /** 0x0200: error code number (kept even when unknown). */
  code?: number;
  /** 0x0200: retry class byte; unknown bytes mean fatal (see `retryClass`). */
  retry?: number;
  /** 0x0400: e.g. `moving`. */
  reason?: string;
  /** 0x0400: suggested wait, 0 = no suggestion. */
  retryAfterMs?: number;
  /** 0x1000: offset of the batch's first record. */
  offset?: number;
}

/** The flag word an ack is encoded under. */
export function publishAckFlags(ack: PublishAck): number {
  let flags = FLAG_BINARY_PUBLISH_ACK;
  if (ack.owner !== undefined) flags |= FLAG_BINARY_PUBLISH_ACK_OWNER;
  if (ack.code !== undefined || ack.retry !== undefined) flags |= FLAG_BINARY_PUBLISH_ACK_CODE;
  if (ack.reason !== undefined || ack.retryAfterMs !== undefined) {
    flags |= FLAG_BINARY_PUBLISH_ACK_DETAIL;
  }
  if (ack.offset !== undefined) flags |= FLAG_BINARY_PUBLISH_ACK_OFFSET;
  return flags;
}

/** Encodes a complete ack frame. */
export function encodePublishAck(ack: PublishAck): Uint8Array {
  const flags = publishAckFlags(ack);
  checkAck(ack, flags);
  const message = u16Field(ack.message, 'message');
  const nodeId = ack.owner ? u16Field(ack.owner.nodeId, 'owner node_id') : undefined;
  const addr = ack.owner ? u16Field(ack.owner.addr ?? '', 'owner addr') : undefined;
  const reason =
    flags & FLAG_BINARY_PUBLISH_ACK_DETAIL ? u16Field(ack.reason ?? '', 'reason') : undefined;
  let size = 11 + message.length;
  if (nodeId && addr) size += 12 + nodeId.length + addr.length;
  if (flags & FLAG_BINARY_PUBLISH_ACK_CODE) size += 3;
  if (reason) size += 10 + reason.length;
  if (ack.offset !== undefined) size += 8;
  const writer = new ByteWriter(FRAME_HEADER_BYTES + size);
  writeFrameHeader(writer.bytes, 0, flags, size);
  writer.position = FRAME_HEADER_BYTES;
  writer.u8(ack.status === 'ok' ? 0 : 1);
  writer.u64(ack.requestId, 'request_id');
  writeU16Bytes(writer, message);
  if (nodeId && addr) {
    writeU16Bytes(writer, nodeId);
    writeU16Bytes(writer, addr);
    writer.u64(ack.owner!.generation, 'owner generation');
  }
  if (flags & FLAG_BINARY_PUBLISH_ACK_CODE) {
    writer.u16(ack.code ?? 0);
    writer.u8(ack.retry ?? 0);
  }
  if (reason) {
    writeU16Bytes(writer, reason);
    writer.u64(ack.retryAfterMs ?? 0, 'retry_after_ms');
  }
  if (ack.offset !== undefined) writer.u64(ack.offset, 'offset');
  return writer.finish();
}

function checkAck(ack: PublishAck, flags: number): void {
  if (ack.status !== 'ok' && ack.status !== 'error') {
    throw new FieldRangeError('ack status', 'must be ok or error');
  }
  if (flags & FLAG_BINARY_PUBLISH_ACK_CODE) {
    if (ack.status !== 'error') throw new FieldRangeError('ack code', 'is for failed acks only');
    if (ack.code === undefined || ack.retry === undefined) {
      throw new FieldRangeError('ack code', 'needs both code and retry');
    }
    if (!isUint(ack.code, 0xffff) || !isUint(ack.retry, 0xff)) {
      throw new FieldRangeError('ack code', 'code must be a u16 and retry a u8');
    }
  }
  if (flags & FLAG_BINARY_PUBLISH_ACK_DETAIL && !(flags & FLAG_BINARY_PUBLISH_ACK_CODE)) {
    throw new FieldRangeError('ack detail', 'needs a code');
  }
  if (ack.offset !== undefined && ack.status !== 'ok') {
    throw new FieldRangeError('ack offset', 'is for successful acks only');
  }
}

function isUint(value: number, max: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= max;
}

/** Decodes an ack payload under its frame flags. */
export function decodePublishAck(flags: number, payload: Uint8Array): PublishAck {
  if (frameLayout(flags) !== 'publish_ack') throw new InvalidEnumError('publish ack flags', flags);
  const reader = new ByteReader(payload, 'publish ack');
  const statusByte = reader.u8('status');
  if (statusByte > 1) throw new InvalidEnumError('publish ack status', statusByte);
  const status = statusByte === 0 ? 'ok' : 'error';
  if (status === 'ok' && flags & FLAG_BINARY_PUBLISH_ACK_CODE) {
    throw new InvalidFlagCombinationError(flags, 'code on a successful ack');
  }
  if (status === 'error' && flags & FLAG_BINARY_PUBLISH_ACK_OFFSET) {
    throw new InvalidFlagCombinationError(flags, 'offset on a failed ack');
  }
  const ack: PublishAck = {
    status,
    requestId: reader.u64('request_id'),
    message: readU16String(reader, 'message'),
  };
  if (flags & FLAG_BINARY_PUBLISH_ACK_OWNER) {
    const nodeId = readU16String(reader, 'owner node_id');
    const addr = readU16Bytes(reader, 'owner addr');
    const owner: AckOwner = { nodeId, generation: 0 };
    if (addr.length > 0) owner.addr = decodeUtf8(addr, 'publish ack owner addr');
    owner.generation = reader.u64('owner generation');
    ack.owner = owner;
  }
  if (flags & FLAG_BINARY_PUBLISH_ACK_CODE) {
    ack.code = reader.u16('code');
    ack.retry = reader.u8('retry');
  }
  if (flags & FLAG_BINARY_PUBLISH_ACK_DETAIL) {
    ack.reason = readU16String(reader, 'reason');
    ack.retryAfterMs = reader.u64('retry_after_ms');
  }
  if (flags & FLAG_BINARY_PUBLISH_ACK_OFFSET) ack.offset = reader.u64('offset');
  reader.end();
  return ack;
}
