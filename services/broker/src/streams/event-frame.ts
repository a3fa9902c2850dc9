/**
 * The frames a subscription's events leave in: JSON for clients that parse no binary layout,
 * otherwise the negotiated binary event batch (the shared form, or the published list behind a
 * small head when nothing per-record is asked for). Contiguous batches queued for a subscriber
 * that fell behind leave as one frame (`runFrame`); an empty batch is a loss notice
 * (`lossFrame`).
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

type Scope = { tenant_id: string; namespace: string; stream: string };

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

/**
 * One frame holding contiguous `batches` (offsets `batches[0].first` on, no hole), for one
 * subscriber. When every batch kept its published list and nothing per-record is asked for, the
 * frame is a new head, the total count, and each list's entries as the views they are (no payload
 * copy); otherwise the records are encoded afresh into one frame.
 */
export function runFrame(
  batches: readonly EventBatch[],
  variant: EventVariant,
  scope: Scope,
): Uint8Array[] {
  const first = batches[0]!.first;
  if (variant === JSON_VARIANT) {
    const payloads: Uint8Array[] = [];
    for (const b of batches) for (const p of b.payloads) payloads.push(p);
    return [encodeMessage({ type: 'event_batch', ...scope, payloads, base_offset: first })];
  }
  const offsets = (variant & FLAG_EVENT_BATCH_OFFSETS) !== 0;
  const timed = (variant & FLAG_EVENT_BATCH_TIMESTAMPS) !== 0;
  if (!timed && batches.every((b) => b.list !== undefined)) {
    let count = 0;
    let listBytes = 4;
    const parts: Uint8Array[] = [];
    for (const b of batches) {
      count += b.count;
      listBytes += b.listBytes - 4;
      entriesOf(b.list!, parts);
    }
    const head = encodeEventBatchHead(offsets ? { baseOffset: first } : {}, listBytes);
    const countBytes = new Uint8Array(4);
    new DataView(countBytes.buffer).setUint32(0, count);
    return [head, countBytes, ...parts];
  }
  const payloads: Uint8Array[] = [];
  const times: number[] = [];
  for (const b of batches) {
    for (const p of b.payloads) payloads.push(p);
    if (timed) for (const t of b.timesMicros()) times.push(t);
  }
  return [
    encodeEventBatch({
      ...(offsets ? { baseOffset: first } : {}),
      ...(timed ? { timestampsMicros: times } : {}),
      payloads,
    }),
  ];
}

/** Appends the views of a published list without its leading `u32 count` (which may straddle
 *  pieces: the list is views of the socket chunks it arrived in). */
function entriesOf(list: readonly Uint8Array[], out: Uint8Array[]): void {
  let skip = 4;
  for (const piece of list) {
    if (skip >= piece.byteLength) {
      skip -= piece.byteLength;
      continue;
    }
    out.push(skip > 0 ? piece.subarray(skip) : piece);
    skip = 0;
  }
}

/**
 * A loss notice: an event batch of no records whose base offset is the offset after the records
 * dropped for this subscriber, so a client's offset check counts them at once. Undefined when the
 * subscriber negotiated no offsets (it cannot be told).
 */
export function lossFrame(
  next: number,
  variant: EventVariant,
  scope: Scope,
): Uint8Array | undefined {
  if (variant === JSON_VARIANT) {
    return encodeMessage({ type: 'event_batch', ...scope, payloads: [], base_offset: next });
  }
  if ((variant & FLAG_EVENT_BATCH_OFFSETS) === 0) return undefined;
  return encodeEventBatch({ baseOffset: next, payloads: [] });
}
