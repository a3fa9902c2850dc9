/**
 * Binary `group_records` (flag 0x8000, a Felix extension; broker to client). The same answer as
 * the JSON message without the text and base64 work on either side. Layout, big-endian:
 *   u64 request_id, u32 count, then count × {u64 offset, u32 attempts, u32 payload_len, payload}
 * It carries no `skipped_before`, `publisher` or `timestamp_micros`: an answer with any of
 * them goes as JSON (`fitsBinaryGroupRecords`). Payloads decode as views over the frame's bytes.
 */
import { ByteReader } from '../bytes/reader.js';
import { ByteWriter } from '../bytes/writer.js';
import { FieldRangeError, InvalidEnumError } from '../errors.js';
import { FLAG_BINARY_GROUP_RECORDS, frameLayout } from '../flags.js';
import { writeFrameHeader } from '../frame/header.js';
import type { GroupRecord, GroupRecordsMessage } from '../json/message-types.js';
import { FRAME_HEADER_BYTES, GROUP_RECORDS_BINARY_MAX } from '../limits.js';

/** Fixed bytes of one record before its payload. */
const RECORD_HEAD_BYTES = 16;

/** True when every record of the answer has only what the binary layout carries. */
export function fitsBinaryGroupRecords(msg: GroupRecordsMessage): boolean {
  if (msg.records.length > GROUP_RECORDS_BINARY_MAX) return false;
  for (const r of msg.records) {
    if (r.skipped_before !== 0 || r.publisher !== undefined || r.timestamp_micros !== undefined)
      return false;
  }
  return true;
}

/** Encodes a complete frame (header included). Throws FieldRangeError for what it cannot carry. */
export function encodeGroupRecordsFrame(msg: GroupRecordsMessage): Uint8Array {
  if (!fitsBinaryGroupRecords(msg)) {
    throw new FieldRangeError(
      'binary group_records',
      'cannot carry skipped_before, publisher or timestamps',
    );
  }
  let size = 12;
  for (const r of msg.records) size += RECORD_HEAD_BYTES + r.payload.length;
  const w = new ByteWriter(FRAME_HEADER_BYTES + size);
  writeFrameHeader(w.bytes, 0, FLAG_BINARY_GROUP_RECORDS, size);
  w.position = FRAME_HEADER_BYTES;
  w.u64(msg.request_id, 'request_id');
  w.u32(msg.records.length);
  for (const r of msg.records) {
    w.u64(r.offset, 'offset');
    if (!Number.isInteger(r.attempts) || r.attempts < 0 || r.attempts > 0xffff_ffff) {
      throw new FieldRangeError('attempts', `must fit a u32, got ${r.attempts}`);
    }
    w.u32(r.attempts);
    w.u32(r.payload.length);
    w.raw(r.payload);
  }
  return w.finish();
}

/**
 * Decodes a 0x8000 payload into the `group_records` message the JSON form decodes to. The count
 * is checked against GROUP_RECORDS_BINARY_MAX and the bytes left before anything is allocated.
 */
export function decodeGroupRecords(flags: number, payload: Uint8Array): GroupRecordsMessage {
  if (frameLayout(flags) !== 'group_records') {
    throw new InvalidEnumError('group records flags', flags);
  }
  const r = new ByteReader(payload, 'group_records');
  const request_id = r.u64('request_id');
  const count = r.count(r.u32('count'), RECORD_HEAD_BYTES, GROUP_RECORDS_BINARY_MAX, 'count');
  const records: GroupRecord[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const offset = r.u64('offset');
    const attempts = r.u32('attempts');
    const len = r.u32('payload_len');
    records[i] = { offset, payload: r.bytesView(len, 'payload'), attempts, skipped_before: 0 };
  }
  r.end();
  return { type: 'group_records', records, request_id };
}
