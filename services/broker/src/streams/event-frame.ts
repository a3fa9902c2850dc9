/**
 * The frames a subscription's events leave in: JSON for clients that parse no binary layout,
 * otherwise the negotiated binary event batch (the shared form, or the published list behind a
 * small head when nothing per-record is asked for).
 */
import {
  FLAG_EVENT_BATCH_OFFSETS,
  FLAG_EVENT_BATCH_SKIPPED,
  FLAG_EVENT_BATCH_TIMESTAMPS,
  encodeEventBatch,
  encodeEventBatchHead,
  encodeMessage,
} from '@felix/wire';
import type { EventBatch, EventVariant } from './event-batch.js';

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
