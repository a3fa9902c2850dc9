/**
 * Binary event batches. Legacy 0x0002 starts with `u64 subscription_id`; shared 0x0004 has
 * none (the uni stream's `event_stream_hello` binds it), so one encoding serves every
 * subscriber. Then, in this order when flagged:
 *   0x0020 u64 base_offset (payload i is at base_offset + i)
 *   0x0800 u64 skipped_before (needs 0x0020)
 *   0x2000 u8 publisher_len, publisher
 * then u32 count and count × {u32 len, bytes}, or with 0x4000 count × {u64 timestamp_micros,
 * u32 len, bytes}.
 */
import { PiecesReader } from '../bytes/pieces-reader.js';
import { ByteReader } from '../bytes/reader.js';
import { ByteWriter, utf8Bytes } from '../bytes/writer.js';
import { FieldRangeError, InvalidEnumError } from '../errors.js';
import {
  FLAG_BINARY_EVENT_BATCH,
  FLAG_BINARY_EVENT_BATCH_SHARED,
  FLAG_EVENT_BATCH_OFFSETS,
  FLAG_EVENT_BATCH_PUBLISHER,
  FLAG_EVENT_BATCH_SKIPPED,
  FLAG_EVENT_BATCH_TIMESTAMPS,
  frameLayout,
} from '../flags.js';
import { writeFrameHeader } from '../frame/header.js';
import { FRAME_HEADER_BYTES, PUBLISHER_BYTES_MAX } from '../limits.js';

export interface EventBatch {
  /** Present only on the legacy per-subscriber form (0x0002). */
  subscriptionId?: number;
  baseOffset?: number;
  /** Offsets just before this batch that hold no event; needs `baseOffset`. */
  skippedBefore?: number;
  /** `sub` of the publishing principal, at most 255 UTF-8 bytes. */
  publisher?: string;
  /** One append time (µs since epoch) per payload. */
  timestampsMicros?: number[];
  payloads: Uint8Array[];
}

/** The flag word a batch is encoded under: shared unless it names a subscription. */
export function eventBatchFlags(batch: EventBatch): number {
  let flags =
    batch.subscriptionId === undefined ? FLAG_BINARY_EVENT_BATCH_SHARED : FLAG_BINARY_EVENT_BATCH;
  if (batch.baseOffset !== undefined) flags |= FLAG_EVENT_BATCH_OFFSETS;
  if (batch.skippedBefore !== undefined) flags |= FLAG_EVENT_BATCH_SKIPPED;
  if (batch.publisher !== undefined) flags |= FLAG_EVENT_BATCH_PUBLISHER;
  if (batch.timestampsMicros !== undefined) flags |= FLAG_EVENT_BATCH_TIMESTAMPS;
  return flags;
}

/** Encodes a complete event batch frame in one allocation. */
export function encodeEventBatch(batch: EventBatch): Uint8Array {
  const flags = eventBatchFlags(batch);
  if (flags & FLAG_EVENT_BATCH_SKIPPED && !(flags & FLAG_EVENT_BATCH_OFFSETS)) {
    throw new FieldRangeError('skippedBefore', 'needs baseOffset');
  }
  const stamps = batch.timestampsMicros;
  if (stamps !== undefined && stamps.length !== batch.payloads.length) {
    throw new FieldRangeError('timestampsMicros', 'needs one entry per payload');
  }
  const publisher =
    batch.publisher === undefined ? undefined : utf8Bytes(batch.publisher, 'publisher');
  if (publisher !== undefined && publisher.length > PUBLISHER_BYTES_MAX) {
    throw new FieldRangeError('publisher', `is longer than ${PUBLISHER_BYTES_MAX} bytes`);
  }
  const perEvent = stamps === undefined ? 4 : 12;
  let size = 4;
  for (const p of batch.payloads) size += perEvent + p.length;
  if (flags & FLAG_BINARY_EVENT_BATCH) size += 8;
  if (flags & FLAG_EVENT_BATCH_OFFSETS) size += 8;
  if (flags & FLAG_EVENT_BATCH_SKIPPED) size += 8;
  if (publisher !== undefined) size += 1 + publisher.length;
  const writer = new ByteWriter(FRAME_HEADER_BYTES + size);
  writeFrameHeader(writer.bytes, 0, flags, size);
  writer.position = FRAME_HEADER_BYTES;
  if (batch.subscriptionId !== undefined) writer.u64(batch.subscriptionId, 'subscription_id');
  if (batch.baseOffset !== undefined) writer.u64(batch.baseOffset, 'base_offset');
  if (batch.skippedBefore !== undefined) writer.u64(batch.skippedBefore, 'skipped_before');
  if (publisher !== undefined) {
    writer.u8(publisher.length);
    writer.raw(publisher);
  }
  writer.u32(batch.payloads.length);
  for (let i = 0; i < batch.payloads.length; i++) {
    const p = batch.payloads[i]!;
    if (stamps !== undefined) writer.u64(stamps[i]!, 'timestamp_micros');
    writer.u32(p.length);
    writer.raw(p);
  }
  return writer.finish();
}

/**
 * The head of a shared event batch (0x0004, offsets flagged when `baseOffset` is given, nothing
 * else) whose `u32 count, count × {u32 len, bytes}` list follows as separate bytes of
 * `listBytes` length: the frame header and `base_offset`. Head then list is exactly the frame
 * `encodeEventBatch` builds, so a broker can forward a publish batch's list
 * (`decodePublishBatchList`) without copying the payloads again.
 */
export function encodeEventBatchHead(head: { baseOffset?: number }, listBytes: number): Uint8Array {
  let flags = FLAG_BINARY_EVENT_BATCH_SHARED;
  let size = listBytes;
  if (head.baseOffset !== undefined) {
    flags |= FLAG_EVENT_BATCH_OFFSETS;
    size += 8;
  }
  const writer = new ByteWriter(FRAME_HEADER_BYTES + size - listBytes);
  writeFrameHeader(writer.bytes, 0, flags, size);
  writer.position = FRAME_HEADER_BYTES;
  if (head.baseOffset !== undefined) writer.u64(head.baseOffset, 'base_offset');
  return writer.finish();
}

/** Decodes an event batch payload under its frame flags. Payloads are views of `payload`. */
export function decodeEventBatch(flags: number, payload: Uint8Array): EventBatch {
  return decodeWith(flags, new ByteReader(payload, 'event batch'));
}

/**
 * `decodeEventBatch` over a payload of `length` bytes held as `pieces` (a frame read off a stream
 * in chunks, never joined): the same checks and errors; an event is a view of its piece unless it
 * straddles two, and only then copied.
 */
export function decodeEventBatchPieces(
  flags: number,
  pieces: readonly Uint8Array[],
  length: number,
): EventBatch {
  return decodeWith(flags, new PiecesReader(pieces, length, 'event batch'));
}

function decodeWith(flags: number, reader: ByteReader | PiecesReader): EventBatch {
  if (frameLayout(flags) !== 'event_batch') throw new InvalidEnumError('event batch flags', flags);
  const batch: EventBatch = { payloads: [] };
  if (flags & FLAG_BINARY_EVENT_BATCH) batch.subscriptionId = reader.u64('subscription_id');
  if (flags & FLAG_EVENT_BATCH_OFFSETS) batch.baseOffset = reader.u64('base_offset');
  if (flags & FLAG_EVENT_BATCH_SKIPPED) batch.skippedBefore = reader.u64('skipped_before');
  if (flags & FLAG_EVENT_BATCH_PUBLISHER) {
    batch.publisher = reader.utf8(reader.u8('publisher length'), 'publisher');
  }
  const timed = (flags & FLAG_EVENT_BATCH_TIMESTAMPS) !== 0;
  const count = reader.count(reader.u32('count'), timed ? 12 : 4, Number.MAX_SAFE_INTEGER, 'count');
  const payloads = new Array<Uint8Array>(count);
  const stamps = timed ? new Array<number>(count) : undefined;
  for (let i = 0; i < count; i++) {
    if (stamps) stamps[i] = reader.u64('timestamp_micros');
    payloads[i] = reader.bytesView(reader.u32('event length'), 'event');
  }
  batch.payloads = payloads;
  if (stamps) batch.timestampsMicros = stamps;
  reader.end();
  return batch;
}
