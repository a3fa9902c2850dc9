/**
 * Binary publish batch (flag 0x0001) and its modifiers. Layout, big-endian:
 *   [acked 0x0008]      u64 request_id, u8 ack_mode (1 per_message, 2 per_batch)
 *   [idempotent 0x0100] u64 producer_id, u64 sequence            (needs 0x0008, ack_mode 2)
 *   [keyed 0x0040]      u16 key_len, key
 *   body                u16 tenant, u16 namespace, u16 stream (length-prefixed UTF-8),
 *                       u32 count, count × {u32 len, bytes}
 * The correlation prefix comes first so `request_id` is always at offset 0.
 */
import { PiecesReader } from '../bytes/pieces-reader.js';
import { ByteReader } from '../bytes/reader.js';
import { ByteWriter } from '../bytes/writer.js';
import { FieldRangeError, InvalidEnumError } from '../errors.js';
import {
  FLAG_BINARY_PUBLISH_ACKED,
  FLAG_BINARY_PUBLISH_BATCH,
  FLAG_BINARY_PUBLISH_IDEMPOTENT,
  FLAG_BINARY_PUBLISH_KEYED,
  frameLayout,
} from '../flags.js';
import { writeFrameHeader } from '../frame/header.js';
import { FRAME_HEADER_BYTES } from '../limits.js';
import {
  type PayloadList,
  checkU16Bytes,
  payloadListBytes,
  readPayloadList,
  readPayloadListBytes,
  readU16Bytes,
  readU16String,
  u16Field,
  writePayloadList,
  writeU16Bytes,
} from './strings.js';

export type BinaryAckMode = 'per_message' | 'per_batch';

export interface PublishBatch {
  tenantId: string;
  namespace: string;
  stream: string;
  payloads: Uint8Array[];
  /** Routing key (0x0040); an empty key is a real key. */
  key?: Uint8Array;
  /** With `ackMode`: the acked prefix (0x0008). */
  requestId?: number;
  ackMode?: BinaryAckMode;
  /** With `sequence`: the idempotent prefix (0x0100); requires `ackMode: 'per_batch'`. */
  producerId?: bigint;
  sequence?: number;
}

const ACK_BYTES: Record<BinaryAckMode, number> = { per_message: 1, per_batch: 2 };

/** The flag word a batch is encoded under. */
export function publishBatchFlags(batch: PublishBatch): number {
  let flags = FLAG_BINARY_PUBLISH_BATCH;
  if (batch.requestId !== undefined || batch.ackMode !== undefined)
    flags |= FLAG_BINARY_PUBLISH_ACKED;
  if (batch.producerId !== undefined || batch.sequence !== undefined) {
    flags |= FLAG_BINARY_PUBLISH_IDEMPOTENT;
  }
  if (batch.key !== undefined) flags |= FLAG_BINARY_PUBLISH_KEYED;
  return flags;
}

/**
 * Encodes a complete frame (header + payload) in one allocation, or into the bytes `into` gives
 * for the frame's size (exactly that many; null: allocate as usual), e.g. a buffer the caller
 * reuses once the frame is written.
 */
export function encodePublishBatch(
  batch: PublishBatch,
  into?: (size: number) => Uint8Array | null,
): Uint8Array {
  const flags = publishBatchFlags(batch);
  checkPrefixes(batch, flags);
  const tenant = u16Field(batch.tenantId, 'tenant');
  const namespace = u16Field(batch.namespace, 'namespace');
  const stream = u16Field(batch.stream, 'stream');
  if (batch.key !== undefined) checkU16Bytes(batch.key, 'key');
  let size =
    6 + tenant.length + namespace.length + stream.length + payloadListBytes(batch.payloads);
  if (flags & FLAG_BINARY_PUBLISH_ACKED) size += 9;
  if (flags & FLAG_BINARY_PUBLISH_IDEMPOTENT) size += 16;
  if (batch.key !== undefined) size += 2 + batch.key.length;
  const writer = new ByteWriter(FRAME_HEADER_BYTES + size, into?.(FRAME_HEADER_BYTES + size));
  writeFrameHeader(writer.bytes, 0, flags, size);
  writer.position = FRAME_HEADER_BYTES;
  if (flags & FLAG_BINARY_PUBLISH_ACKED) {
    writer.u64(batch.requestId!, 'request_id');
    writer.u8(ACK_BYTES[batch.ackMode!]);
  }
  if (flags & FLAG_BINARY_PUBLISH_IDEMPOTENT) {
    writer.u64Big(batch.producerId!, 'producer_id');
    writer.u64(batch.sequence!, 'sequence');
  }
  if (batch.key !== undefined) writeU16Bytes(writer, batch.key);
  writeU16Bytes(writer, tenant);
  writeU16Bytes(writer, namespace);
  writeU16Bytes(writer, stream);
  writePayloadList(writer, batch.payloads);
  return writer.finish();
}

function checkPrefixes(batch: PublishBatch, flags: number): void {
  if (flags & FLAG_BINARY_PUBLISH_ACKED) {
    if (batch.requestId === undefined || batch.ackMode === undefined) {
      throw new FieldRangeError('acked publish', 'needs both requestId and ackMode');
    }
    if (!(batch.ackMode in ACK_BYTES)) throw new FieldRangeError('ackMode', 'is not a binary mode');
  }
  if (flags & FLAG_BINARY_PUBLISH_IDEMPOTENT) {
    if (batch.producerId === undefined || batch.sequence === undefined) {
      throw new FieldRangeError('idempotent publish', 'needs both producerId and sequence');
    }
    if (batch.ackMode !== 'per_batch') {
      throw new FieldRangeError('idempotent publish', "needs ackMode 'per_batch'");
    }
  }
}

/** A publish batch whose payloads stay one checked list (see `decodePublishBatchList`). */
export type PublishBatchList = Omit<PublishBatch, 'payloads'> & { payloads: PayloadList };

/** Decodes a publish batch payload under its frame flags. Payloads are views of `payload`. */
export function decodePublishBatch(flags: number, payload: Uint8Array): PublishBatch {
  return decodeWith(flags, new ByteReader(payload, 'publish batch'), (reader) =>
    readPayloadList(reader, Number.MAX_SAFE_INTEGER),
  );
}

/**
 * Decodes a publish batch with the same checks as `decodePublishBatch`, but leaves the payloads
 * as one list (a view of `payload`): a broker that forwards the list as it arrived pays nothing
 * per record. `payloadListViews` splits it when the records are needed one by one.
 */
export function decodePublishBatchList(flags: number, payload: Uint8Array): PublishBatchList {
  return decodeWith(flags, new ByteReader(payload, 'publish batch'), (reader) =>
    readPayloadListBytes(reader, Number.MAX_SAFE_INTEGER),
  );
}

/** `decodePublishBatchList` over a payload of `length` bytes held as `pieces` (never joined). */
export function decodePublishBatchListPieces(
  flags: number,
  pieces: readonly Uint8Array[],
  length: number,
): PublishBatchList {
  return decodeWith(flags, new PiecesReader(pieces, length, 'publish batch'), (reader) =>
    readPayloadListBytes(reader, Number.MAX_SAFE_INTEGER),
  );
}

function decodeWith<R extends ByteReader | PiecesReader, P>(
  flags: number,
  reader: R,
  readPayloads: (reader: R) => P,
): Omit<PublishBatch, 'payloads'> & { payloads: P } {
  if (frameLayout(flags) !== 'publish_batch') {
    throw new InvalidEnumError('publish batch flags', flags);
  }
  const out: Partial<Omit<PublishBatch, 'payloads'>> = {};
  if (flags & FLAG_BINARY_PUBLISH_ACKED) {
    out.requestId = reader.u64('request_id');
    const mode = reader.u8('ack_mode');
    if (mode !== 1 && mode !== 2) throw new InvalidEnumError('publish batch ack_mode', mode);
    out.ackMode = mode === 1 ? 'per_message' : 'per_batch';
  }
  if (flags & FLAG_BINARY_PUBLISH_IDEMPOTENT) {
    if (out.ackMode !== 'per_batch') throw new InvalidEnumError('idempotent ack_mode', 1);
    out.producerId = reader.u64Big('producer_id');
    out.sequence = reader.u64('sequence');
  }
  if (flags & FLAG_BINARY_PUBLISH_KEYED) out.key = readU16Bytes(reader, 'key');
  const batch = {
    tenantId: readU16String(reader, 'tenant'),
    namespace: readU16String(reader, 'namespace'),
    stream: readU16String(reader, 'stream'),
    payloads: readPayloads(reader),
    ...out,
  };
  reader.end();
  return batch;
}
