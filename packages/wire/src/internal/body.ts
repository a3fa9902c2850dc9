/**
 * Body primitives of internal frames: u32-length UTF-8 strings bounded by
 * `INTERNAL_IDENT_BYTES_MAX`, credentials bounded by `INTERNAL_CREDENTIAL_BYTES_MAX`, payload
 * lists bounded by `INTERNAL_BATCH_PAYLOADS_MAX` and by remaining/4, and `ShardRef`.
 * Note the u32 string prefixes: the client binary layouts use u16.
 */
import { crc32 } from '@felix/common';
import { ByteReader } from '../bytes/reader.js';
import { utf8Bytes } from '../bytes/writer.js';
import { CountTooLargeError, FieldRangeError } from '../errors.js';
import {
  INTERNAL_BATCH_PAYLOADS_MAX,
  INTERNAL_BODY_START_BYTES,
  INTERNAL_CREDENTIAL_BYTES_MAX,
  INTERNAL_IDENT_BYTES_MAX,
  OFFSET_MAX,
} from '../limits.js';

export interface ShardRef {
  tenantId: string;
  namespace: string;
  /** Stream name, or the cache name for cache shards. */
  stream: string;
  shard: number;
  /** Assignment generation (leader epoch) the sender resolved against. */
  generation: number;
}

export class BodyReader extends ByteReader {
  str(field: string): string {
    const length = this.u32(`${field} length`);
    if (length > INTERNAL_IDENT_BYTES_MAX) {
      throw new CountTooLargeError(
        `${this.what} ${field} length`,
        length,
        INTERNAL_IDENT_BYTES_MAX,
      );
    }
    return this.utf8(length, field);
  }

  credential(): Uint8Array {
    const length = this.u32('credential length');
    if (length === 0 || length > INTERNAL_CREDENTIAL_BYTES_MAX) {
      throw new CountTooLargeError(
        `${this.what} credential length`,
        length,
        INTERNAL_CREDENTIAL_BYTES_MAX,
      );
    }
    return this.bytesView(length, 'credential');
  }

  blob(field: string): Uint8Array {
    return this.bytesView(this.u32(`${field} length`), field);
  }

  payloads(): Uint8Array[] {
    const count = this.count(
      this.u32('payload count'),
      4,
      INTERNAL_BATCH_PAYLOADS_MAX,
      'payload count',
    );
    const out = new Array<Uint8Array>(count);
    for (let i = 0; i < count; i++) out[i] = this.blob('payload');
    return out;
  }

  shardRef(): ShardRef {
    return {
      tenantId: this.str('tenant_id'),
      namespace: this.str('namespace'),
      stream: this.str('stream'),
      shard: this.u32('shard'),
      generation: this.u64('generation'),
    };
  }
}

/**
 * Writes a body straight into one growing buffer, after `room` bytes left for the frame's
 * header. Fields go in place (no part per field, no closure, no BigInt for a u64), so a
 * replication batch costs one allocation, or two when its payloads outgrow the first guess.
 */
export class BodyWriter {
  private buf: Uint8Array;
  private view: DataView;
  private pos: number;

  constructor(room = 0, bodyBytes = INTERNAL_BODY_START_BYTES) {
    this.buf = new Uint8Array(room + bodyBytes);
    this.view = new DataView(this.buf.buffer);
    this.pos = room;
  }

  /** Makes room for `n` more bytes (doubling, or to the exact need when that is more). */
  private reserve(n: number): void {
    const need = this.pos + n;
    if (need <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(need, this.buf.length * 2));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
    this.view = new DataView(grown.buffer);
  }

  u8(value: number, what: string): void {
    checkInt(value, 0xff, what);
    this.reserve(1);
    this.buf[this.pos++] = value;
  }

  u16(value: number, what: string): void {
    checkInt(value, 0xffff, what);
    this.reserve(2);
    this.view.setUint16(this.pos, value);
    this.pos += 2;
  }

  u32(value: number, what: string): void {
    checkInt(value, 0xffff_ffff, what);
    this.reserve(4);
    this.view.setUint32(this.pos, value);
    this.pos += 4;
  }

  u64(value: number, what: string): void {
    checkInt(value, OFFSET_MAX, what);
    this.reserve(8);
    // Two u32 halves: exact for every safe integer, and no BigInt per field.
    const high = Math.floor(value / 0x1_0000_0000);
    this.view.setUint32(this.pos, high);
    this.view.setUint32(this.pos + 4, value - high * 0x1_0000_0000);
    this.pos += 8;
  }

  u64Big(value: bigint, what: string): void {
    if (value < 0n || value > 0xffff_ffff_ffff_ffffn)
      throw new FieldRangeError(what, 'must fit a u64');
    this.reserve(8);
    this.view.setBigUint64(this.pos, value);
    this.pos += 8;
  }

  str(text: string, what: string): void {
    // Identifiers are short and nearly always ASCII: written in place, byte per char, with no
    // encoder call and no array per string (the shard ref of every batch has three).
    const start = this.pos + 4;
    this.reserve(4 + text.length);
    let n = 0;
    for (; n < text.length; n++) {
      const c = text.charCodeAt(n);
      if (c >= 0x80) break;
      this.buf[start + n] = c;
    }
    if (n < text.length) {
      // Not ASCII: the encoder's bytes, at their own length (a lone surrogate refused).
      const bytes = utf8Bytes(text, what);
      this.reserve(4 + bytes.length);
      this.buf.set(bytes, start);
      n = bytes.length;
    }
    if (n > INTERNAL_IDENT_BYTES_MAX) {
      throw new FieldRangeError(what, `is longer than ${INTERNAL_IDENT_BYTES_MAX} bytes`);
    }
    this.view.setUint32(this.pos, n);
    this.pos = start + n;
  }

  blob(bytes: Uint8Array, what: string): void {
    this.reserve(4 + bytes.length);
    this.lengthThenBytes(bytes, what);
  }

  credential(bytes: Uint8Array): void {
    if (bytes.length === 0 || bytes.length > INTERNAL_CREDENTIAL_BYTES_MAX) {
      throw new FieldRangeError('credential', `must be 1..${INTERNAL_CREDENTIAL_BYTES_MAX} bytes`);
    }
    this.blob(bytes, 'credential');
  }

  payloads(payloads: readonly Uint8Array[]): void {
    if (payloads.length > INTERNAL_BATCH_PAYLOADS_MAX) {
      throw new FieldRangeError('payloads', `more than ${INTERNAL_BATCH_PAYLOADS_MAX}`);
    }
    let bytes = 4;
    for (const p of payloads) bytes += 4 + p.length;
    this.reserve(bytes);
    this.u32(payloads.length, 'payload count');
    for (const p of payloads) this.lengthThenBytes(p, 'payload');
  }

  shardRef(ref: ShardRef): void {
    this.str(ref.tenantId, 'tenant_id');
    this.str(ref.namespace, 'namespace');
    this.str(ref.stream, 'stream');
    this.u32(ref.shard, 'shard');
    this.u64(ref.generation, 'generation');
  }

  /** The header's room and the body. A buffer mostly empty after doubling is cut to size, so
   *  a frame held in a send queue never pins twice its bytes. */
  finish(): Uint8Array {
    const spare = this.buf.length - this.pos;
    if (spare > INTERNAL_BODY_START_BYTES && spare > this.pos / 4)
      return this.buf.slice(0, this.pos);
    return this.buf.subarray(0, this.pos);
  }

  /** Space is reserved by the caller. */
  private lengthThenBytes(bytes: Uint8Array, what: string): void {
    if (bytes.length > 0xffff_ffff) checkInt(bytes.length, 0xffff_ffff, `${what} length`);
    this.view.setUint32(this.pos, bytes.length);
    this.buf.set(bytes, this.pos + 4);
    this.pos += 4 + bytes.length;
  }
}

function checkInt(value: number, max: number, what: string): void {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new FieldRangeError(what, `must be an integer in [0, ${max}], got ${value}`);
  }
}

/**
 * The replication batch checksum: CRC-32 (IEEE) fed each payload's u32 big-endian length
 * and then its bytes, in order; so `["ab","c"]` and `["a","bc"]` differ. Widened to u64 on
 * the wire (always below 2^32 here). A marked batch (kind 25) feeds its mark bytes after them.
 * `continueCrc` computes the payloads' part (the same CRC): a Node caller may pass a native one,
 * which this codec may not import.
 */
export function batchChecksum(
  payloads: readonly Uint8Array[],
  marks?: Uint8Array,
  continueCrc: (bytes: Uint8Array, crc: number) => number = crc32,
): number {
  const length = new Uint8Array(4);
  const view = new DataView(length.buffer);
  let crc = 0;
  for (const p of payloads) {
    view.setUint32(0, p.length);
    crc = crc32(length, crc);
    crc = continueCrc(p, crc);
  }
  // A marked batch's marks are fed after the payloads.
  if (marks !== undefined) crc = crc32(marks, crc);
  return crc;
}
