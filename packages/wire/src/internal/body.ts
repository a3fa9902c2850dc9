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

/** Accumulates body parts, then joins them in one allocation. */
export class BodyWriter {
  private readonly parts: Uint8Array[] = [];
  private size = 0;

  private push(part: Uint8Array): void {
    this.parts.push(part);
    this.size += part.length;
  }

  private fixed(bytes: number, fill: (view: DataView) => void): void {
    const part = new Uint8Array(bytes);
    fill(new DataView(part.buffer));
    this.push(part);
  }

  u8(value: number, what: string): void {
    checkInt(value, 0xff, what);
    this.push(Uint8Array.of(value));
  }

  u16(value: number, what: string): void {
    checkInt(value, 0xffff, what);
    this.fixed(2, (v) => v.setUint16(0, value));
  }

  u32(value: number, what: string): void {
    checkInt(value, 0xffff_ffff, what);
    this.fixed(4, (v) => v.setUint32(0, value));
  }

  u64(value: number, what: string): void {
    checkInt(value, OFFSET_MAX, what);
    this.fixed(8, (v) => v.setBigUint64(0, BigInt(value)));
  }

  u64Big(value: bigint, what: string): void {
    if (value < 0n || value > 0xffff_ffff_ffff_ffffn)
      throw new FieldRangeError(what, 'must fit a u64');
    this.fixed(8, (v) => v.setBigUint64(0, value));
  }

  str(text: string, what: string): void {
    const bytes = utf8Bytes(text);
    if (bytes.length > INTERNAL_IDENT_BYTES_MAX) {
      throw new FieldRangeError(what, `is longer than ${INTERNAL_IDENT_BYTES_MAX} bytes`);
    }
    this.blob(bytes, what);
  }

  blob(bytes: Uint8Array, what: string): void {
    this.u32(bytes.length, `${what} length`);
    this.push(bytes);
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
    this.u32(payloads.length, 'payload count');
    for (const p of payloads) this.blob(p, 'payload');
  }

  shardRef(ref: ShardRef): void {
    this.str(ref.tenantId, 'tenant_id');
    this.str(ref.namespace, 'namespace');
    this.str(ref.stream, 'stream');
    this.u32(ref.shard, 'shard');
    this.u64(ref.generation, 'generation');
  }

  /** The body, after `room` zero bytes left for a header (0: the body alone). */
  finish(room = 0): Uint8Array {
    const out = new Uint8Array(room + this.size);
    let pos = room;
    for (const part of this.parts) {
      out.set(part, pos);
      pos += part.length;
    }
    return out;
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
