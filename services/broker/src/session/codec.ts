/**
 * The broker's use of @felix/wire in one place: frame reading with the pre-auth bound, JSON
 * messages, publish batches, acks and event batches.
 */
import {
  FLAG_BINARY_PUBLISH_ACK_CODE,
  FLAG_BINARY_PUBLISH_ACK_OFFSET,
  FLAG_EVENT_BATCH_OFFSETS,
  FLAG_EVENT_BATCH_SKIPPED,
  FLAG_EVENT_BATCH_TIMESTAMPS,
  FrameDecoder,
  InboundFrame,
  type Message,
  type PayloadList,
  decodeMessage,
  decodePublishBatchListPieces,
  encodeEventBatch,
  encodeEventBatchHead,
  encodeMessage,
  ERROR_CODE_NUMBERS,
  RETRY_BYTES,
  encodePublishAck,
  frameLayout,
  shardForKey,
} from '@felix/wire';
import type { EventBatch, EventVariant } from '../streams/event-batch.js';
import type { ErrorCodeName, RetryName } from './refusal.js';

export { InboundFrame };

/**
 * Frames from one client stream, read by @felix/wire's decoder: a frame split across chunks is
 * kept as views of them (no assembly copy), a bad header is refused before its body is held,
 * and the payload bound is raised once the stream authenticates.
 */
export class FrameReader {
  private readonly decoder: FrameDecoder;

  constructor(maxPayloadBytes: number) {
    this.decoder = new FrameDecoder({ maxPayloadBytes });
  }

  push(chunk: Uint8Array): InboundFrame[] {
    return this.decoder.pushPieces(chunk);
  }

  setMax(maxPayloadBytes: number): void {
    this.decoder.setMaxPayloadBytes(maxPayloadBytes);
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
      ? { code: ERROR_CODE_NUMBERS[ack.code!], retry: RETRY_BYTES[ack.retry ?? 'fatal'] }
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
