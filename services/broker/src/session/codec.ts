/**
 * The broker's use of @felix/wire in one place: frame reading with the pre-auth bound, JSON
 * messages, publish batches, acks and event batches.
 */
import {
  FLAG_BINARY_PUBLISH_ACK_CODE,
  FLAG_BINARY_PUBLISH_ACK_OFFSET,
  FLAG_EVENT_BATCH_OFFSETS,
  FLAG_EVENT_BATCH_SKIPPED,
  FrameDecoder,
  type Message,
  decodeMessage,
  decodePublishBatch,
  encodeEventBatch,
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

export interface InboundFrame {
  flags: number;
  payload: Uint8Array;
}

/** Frames from one client stream; the payload bound is raised once the stream authenticates. */
export class FrameReader {
  private readonly decoder: FrameDecoder;
  constructor(maxPayloadBytes: number) {
    this.decoder = new FrameDecoder({ maxPayloadBytes });
  }
  push(chunk: Uint8Array): InboundFrame[] {
    return this.decoder.push(chunk);
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
  payloads: Uint8Array[];
  requestId: number | undefined;
}

export function readPublish(flags: number, payload: Uint8Array): PublishIn {
  const b = decodePublishBatch(flags, payload);
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

export function eventsFrame(
  batch: EventBatch,
  variant: EventVariant,
  scope: { tenant_id: string; namespace: string; stream: string },
): Uint8Array {
  if (variant === JSON_VARIANT) {
    return encodeMessage({
      type: 'event_batch',
      ...scope,
      payloads: [...batch.payloads],
      base_offset: batch.first,
    });
  }
  // The shared form (0x0004): no subscription id, so one encoding serves every subscriber.
  return encodeEventBatch({
    ...(variant & FLAG_EVENT_BATCH_OFFSETS ? { baseOffset: batch.first } : {}),
    ...(variant & FLAG_EVENT_BATCH_SKIPPED ? { skippedBefore: batch.skippedBefore } : {}),
    payloads: batch.payloads as Uint8Array[],
  });
}

export function routeKey(key: Uint8Array, shards: number, routing: 'modulo' | 'jump_hash'): number {
  return shardForKey(key, shards, routing);
}
