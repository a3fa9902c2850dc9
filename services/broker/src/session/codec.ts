/**
 * The broker's use of @felix/wire in one place: frame reading with the pre-auth bound, JSON
 * messages, publish batches, acks and event batches.
 */
import {
  DecoderFailedError,
  FLAG_BINARY_PUBLISH_ACK_CODE,
  FLAG_BINARY_PUBLISH_ACK_OFFSET,
  FLAG_EVENT_BATCH_OFFSETS,
  FLAG_EVENT_BATCH_SKIPPED,
  FLAG_EVENT_BATCH_TIMESTAMPS,
  FRAME_HEADER_BYTES,
  WireError,
  type Message,
  type PayloadList,
  decodeFrameHeader,
  decodeMessage,
  decodePublishBatchListPieces,
  encodeEventBatch,
  encodeEventBatchHead,
  encodeMessage,
  encodePublishAck,
  frameLayout,
  shardForKey,
} from '@felix/wire';
import type { EventBatch, EventVariant } from '../streams/event-batch.js';
import {
  ERROR_CODE_NUMBERS,
  type ErrorCodeName,
  RETRY_NUMBERS,
  type RetryName,
} from './refusal.js';

/** One frame as the chunks it arrived in; `payload` joins them on first use (a copy only when
 *  there are several). Publish batches are decoded from the pieces and never joined. */
export class InboundFrame {
  private joined: Uint8Array | null = null;
  constructor(
    readonly flags: number,
    readonly length: number,
    readonly pieces: readonly Uint8Array[],
  ) {}

  get payload(): Uint8Array {
    if (this.joined === null) {
      if (this.pieces.length === 1) this.joined = this.pieces[0]!;
      else {
        const out = new Uint8Array(this.length);
        let at = 0;
        for (const p of this.pieces) {
          out.set(p, at);
          at += p.length;
        }
        this.joined = out;
      }
    }
    return this.joined;
  }
}

/**
 * Frames from one client stream; the payload bound is raised once the stream authenticates. A
 * frame split across chunks is kept as views of them (no assembly copy): what is held between
 * pushes is one incomplete frame, never more than its header's checked length. After an error
 * the reader is failed for good (the stream is no longer aligned on frames).
 */
export class FrameReader {
  private readonly header = new Uint8Array(FRAME_HEADER_BYTES);
  private headerFill = 0;
  private flags = 0;
  private length = 0;
  private left = -1; // payload bytes still to come for the frame being read; -1: none
  private pieces: Uint8Array[] = [];
  private failure: WireError | null = null;

  constructor(private maxPayloadBytes: number) {}

  push(chunk: Uint8Array): InboundFrame[] {
    if (this.failure) throw new DecoderFailedError(this.failure);
    try {
      return this.consume(chunk);
    } catch (err) {
      if (err instanceof WireError) this.failure = err;
      throw err;
    }
  }

  setMax(maxPayloadBytes: number): void {
    this.maxPayloadBytes = maxPayloadBytes;
  }

  private consume(chunk: Uint8Array): InboundFrame[] {
    const frames: InboundFrame[] = [];
    let pos = 0;
    while (pos < chunk.length) {
      if (this.left < 0) {
        let header: Uint8Array;
        if (this.headerFill === 0 && chunk.length - pos >= FRAME_HEADER_BYTES) {
          header = chunk.subarray(pos, pos + FRAME_HEADER_BYTES);
          pos += FRAME_HEADER_BYTES;
        } else {
          const n = Math.min(FRAME_HEADER_BYTES - this.headerFill, chunk.length - pos);
          this.header.set(chunk.subarray(pos, pos + n), this.headerFill);
          this.headerFill += n;
          pos += n;
          if (this.headerFill < FRAME_HEADER_BYTES) break;
          this.headerFill = 0;
          header = this.header;
        }
        const { flags, length } = decodeFrameHeader(header, 0, this.maxPayloadBytes);
        this.flags = flags;
        this.length = length;
        this.left = length;
      }
      const n = Math.min(this.left, chunk.length - pos);
      if (n > 0) this.pieces.push(chunk.subarray(pos, pos + n));
      pos += n;
      this.left -= n;
      if (this.left === 0) {
        frames.push(new InboundFrame(this.flags, this.length, this.pieces));
        this.pieces = [];
        this.left = -1;
      }
    }
    return frames;
  }
}

export const layoutOf = frameLayout;
export const jsonFrame = (msg: Message): Uint8Array => encodeMessage(msg);
export const readMessage = (payload: Uint8Array): Message => decodeMessage(payload);

export interface PublishIn {
  tenant: string;
  namespace: string;
  stream: string;
  key: Uint8Array | undefined;
  /** The frame's checked payload list, unsplit: an event batch carries the same bytes. */
  payloads: PayloadList;
  requestId: number | undefined;
}

export function readPublish(frame: InboundFrame): PublishIn {
  const b = decodePublishBatchListPieces(frame.flags, frame.pieces, frame.length);
  return {
    tenant: b.tenantId,
    namespace: b.namespace,
    stream: b.stream,
    key: b.key,
    payloads: b.payloads,
    requestId: b.requestId,
  };
}

export interface AckOut {
  ok: boolean;
  requestId: number;
  message?: string;
  code?: ErrorCodeName;
  retry?: RetryName;
  offset?: number | undefined;
}

/** A binary publish ack using only the modifiers the client negotiated. */
export function ackFrame(negotiated: number, ack: AckOut): Uint8Array {
  const withOffset =
    ack.ok && ack.offset !== undefined && (negotiated & FLAG_BINARY_PUBLISH_ACK_OFFSET) !== 0;
  const withCode =
    !ack.ok && ack.code !== undefined && (negotiated & FLAG_BINARY_PUBLISH_ACK_CODE) !== 0;
  return encodePublishAck({
    status: ack.ok ? 'ok' : 'error',
    requestId: ack.requestId,
    message: ack.message ?? '',
    ...(withCode
      ? { code: ERROR_CODE_NUMBERS[ack.code!], retry: RETRY_NUMBERS[ack.retry ?? 'fatal'] }
      : {}),
    ...(withOffset ? { offset: ack.offset } : {}),
  });
}

/** JSON `event_batch` for clients that parse no binary event layout. */
export const JSON_VARIANT: EventVariant = -1;

/** The bytes of one event frame, in parts written back to back (the frame is their join). */
export function eventsFrame(
  batch: EventBatch,
  variant: EventVariant,
  scope: { tenant_id: string; namespace: string; stream: string },
): Uint8Array[] {
  if (variant === JSON_VARIANT) {
    return [
      encodeMessage({
        type: 'event_batch',
        ...scope,
        payloads: [...batch.payloads],
        base_offset: batch.first,
      }),
    ];
  }
  const offsets = (variant & FLAG_EVENT_BATCH_OFFSETS) !== 0;
  const timed = (variant & FLAG_EVENT_BATCH_TIMESTAMPS) !== 0;
  if (batch.list !== undefined && !(variant & FLAG_EVENT_BATCH_SKIPPED) && !timed) {
    // The published list goes out as it arrived, behind a small head: no copy of the payloads.
    const head = encodeEventBatchHead(offsets ? { baseOffset: batch.first } : {}, batch.listBytes);
    return [head, ...batch.list];
  }
  // The shared form (0x0004): no subscription id, so one encoding serves every subscriber.
  return [
    encodeEventBatch({
      ...(offsets ? { baseOffset: batch.first } : {}),
      ...(variant & FLAG_EVENT_BATCH_SKIPPED ? { skippedBefore: batch.skippedBefore } : {}),
      ...(timed ? { timestampsMicros: batch.timesMicros() } : {}),
      payloads: batch.payloads as Uint8Array[],
    }),
  ];
}

export function routeKey(key: Uint8Array, shards: number, routing: 'modulo' | 'jump_hash'): number {
  return shardForKey(key, shards, routing);
}
