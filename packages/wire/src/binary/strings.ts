/** u16-length-prefixed UTF-8 strings and byte fields of the binary client layouts. */
import { PiecesReader } from '../bytes/pieces-reader.js';
import type { ByteReader } from '../bytes/reader.js';
import { type ByteWriter, utf8Bytes } from '../bytes/writer.js';
import { FieldRangeError } from '../errors.js';
import { BINARY_STRING_BYTES_MAX, UTF8_ENCODE_MEMO_SLOTS, UTF8_MEMO_BYTES_MAX } from '../limits.js';

/** Strings encoded recently and their bytes (never handed out to be changed: the writers copy
 *  them into the frame), replaced round-robin. */
const memoText: Array<string | null> = new Array(UTF8_ENCODE_MEMO_SLOTS).fill(null);
const memoBytes: Uint8Array[] = new Array(UTF8_ENCODE_MEMO_SLOTS).fill(new Uint8Array(0));
let memoNext = 0;

/**
 * UTF-8 bytes of a field, checked to fit a u16 length prefix. Read only: a frame's tenant,
 * namespace and stream repeat from frame to frame, so recent ones are encoded once.
 */
export function u16Field(text: string, what: string): Uint8Array {
  for (let i = 0; i < UTF8_ENCODE_MEMO_SLOTS; i++) if (memoText[i] === text) return memoBytes[i]!;
  const bytes = utf8Bytes(text, what);
  checkU16Bytes(bytes, what);
  if (bytes.length > UTF8_MEMO_BYTES_MAX) return bytes; // a long message is not kept
  memoText[memoNext] = text;
  memoBytes[memoNext] = bytes;
  memoNext = (memoNext + 1) % UTF8_ENCODE_MEMO_SLOTS;
  return bytes;
}

export function checkU16Bytes(bytes: Uint8Array, what: string): void {
  if (bytes.length > BINARY_STRING_BYTES_MAX) {
    throw new FieldRangeError(what, `is ${bytes.length} bytes, more than a u16 length allows`);
  }
}

export function writeU16Bytes(writer: ByteWriter, bytes: Uint8Array): void {
  writer.u16(bytes.length);
  writer.raw(bytes);
}

export function readU16String(reader: ByteReader | PiecesReader, field: string): string {
  return reader.utf8(reader.u16(`${field} length`), field);
}

export function readU16Bytes(reader: ByteReader | PiecesReader, field: string): Uint8Array {
  return reader.bytesView(reader.u16(`${field} length`), field);
}

/**
 * A checked payload list kept as its bytes: `list` holds `u32 count, count × {u32 len, bytes}`
 * (views of the frame, in order; several when the frame arrived in pieces), `listBytes` their
 * total, `bytes` the sum of the payload lengths. Views of the payloads are made only when asked
 * for (`payloadListViews`).
 */
export interface PayloadList {
  list: readonly Uint8Array[];
  listBytes: number;
  count: number;
  bytes: number;
}

/** Checks `u32 count` then count × `{u32 len, bytes}` and returns it unsplit: no allocation per
 *  payload, the same bounds as `readPayloadList`. */
export function readPayloadListBytes(
  reader: ByteReader | PiecesReader,
  maxCount: number,
): PayloadList {
  const start = reader.position;
  const count = reader.count(reader.u32('payload count'), 4, maxCount, 'payload count');
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const len = reader.u32('payload length');
    reader.need(len, 'payload');
    reader.skip(len);
    bytes += len;
  }
  return { list: reader.viewsSince(start), listBytes: reader.position - start, count, bytes };
}

/** The payloads of a list checked by `readPayloadListBytes`, as views of its bytes (a payload
 *  split across two pieces is copied). */
export function payloadListViews(payloads: PayloadList): Uint8Array[] {
  const reader = new PiecesReader(payloads.list, payloads.listBytes, 'payload list');
  const count = reader.u32('payload count');
  const out = new Array<Uint8Array>(count);
  for (let i = 0; i < count; i++)
    out[i] = reader.bytesView(reader.u32('payload length'), 'payload');
  return out;
}

/** Reads `u32 count` then count × `{u32 len, bytes}` as views; count checked before allocating. */
export function readPayloadList(reader: ByteReader, maxCount: number): Uint8Array[] {
  const count = reader.count(reader.u32('payload count'), 4, maxCount, 'payload count');
  const payloads = new Array<Uint8Array>(count);
  for (let i = 0; i < count; i++)
    payloads[i] = reader.bytesView(reader.u32('payload length'), 'payload');
  return payloads;
}

export function payloadListBytes(payloads: readonly Uint8Array[]): number {
  let size = 4;
  for (const p of payloads) size += 4 + p.length;
  return size;
}

export function writePayloadList(writer: ByteWriter, payloads: readonly Uint8Array[]): void {
  writer.u32(payloads.length);
  for (const p of payloads) {
    writer.u32(p.length);
    writer.raw(p);
  }
}
