// Goal: a subscriber's queue is bounded by the bytes it holds (not its batch count), merges the
// contiguous batches queued behind one another into one envelope that leaves as one decodable
// frame (no payload copy for published lists), and tells a subscriber of records it dropped once
// it drains, without waiting for a later publish.
// Method: SubscriberQueue and the frame builders driven directly; frames decoded with the wire
// codec the client uses.
import {
  FLAG_BINARY_EVENT_BATCH_SHARED,
  FLAG_EVENT_BATCH_OFFSETS,
  FLAG_EVENT_BATCH_TIMESTAMPS,
  type PayloadList,
  decodeEventBatch,
  decodeFrame,
  decodeMessage,
} from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { EventBatch, SubscriberQueue } from '../src/index.js';
import { JSON_VARIANT, lossFrame, runFrame } from '../src/streams/event-frame.js';
import { queuedBytesOf } from '../src/streams/subscriber.js';

const KIB = 1024;
const scope = { tenant_id: 't1', namespace: 'default', stream: 's' };
const OFFSETS = FLAG_BINARY_EVENT_BATCH_SHARED | FLAG_EVENT_BATCH_OFFSETS;

function queue(over: Partial<ConstructorParameters<typeof SubscriberQueue>[0]> = {}) {
  const dropped = { records: 0 };
  const q = new SubscriberQueue<EventBatch>(
    { capacity: 1024, bytesMax: 64 * KIB, runBytesMax: 16 * KIB, runRecordsMax: 1024, ...over },
    false,
    (n) => {
      dropped.records += n;
    },
  );
  return { q, dropped };
}

/** A batch of `count` records of `size` bytes at `first`, as payload views. */
function batch(first: number, count = 1, size = KIB): EventBatch {
  return new EventBatch(
    first,
    Array.from({ length: count }, (_, i) => new Uint8Array(size).fill((first + i) % 251)),
    1000 + first,
  );
}

/** A batch that arrived as a published list, split into pieces at awkward places (the count
 *  itself straddles two pieces), as socket chunks split it. */
function listBatch(first: number, payloads: Uint8Array[]): EventBatch {
  let listBytes = 4;
  for (const p of payloads) listBytes += 4 + p.length;
  const whole = new Uint8Array(listBytes);
  const view = new DataView(whole.buffer);
  view.setUint32(0, payloads.length);
  let at = 4;
  for (const p of payloads) {
    view.setUint32(at, p.length);
    whole.set(p, at + 4);
    at += 4 + p.length;
  }
  const list = [whole.subarray(0, 2), whole.subarray(2, 7), whole.subarray(7)];
  const wire: PayloadList = {
    list,
    listBytes,
    count: payloads.length,
    bytes: listBytes - 4 - 4 * payloads.length,
  };
  return new EventBatch(first, wire, 1000 + first);
}

const join = (parts: readonly Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

describe('subscriber queue bytes', () => {
  it('a_subscriber_queue_is_bounded_by_the_bytes_it_holds_not_its_batch_count', () => {
    const { q, dropped } = queue({ runBytesMax: 0 }); // no merging: one envelope per batch
    let offered = 0;
    for (let i = 0; i < 1000; i++) {
      q.offer(batch(i * 4, 4));
      offered += 4;
      expect(q.bytes).toBeLessThanOrEqual(64 * KIB);
    }
    const held = Math.floor((64 * KIB) / queuedBytesOf({ bytes: 4 * KIB, count: 4 }));
    expect(q.depth).toBe(held);
    expect(dropped.records).toBe(offered - held * 4);
  });

  it('the_queued_bytes_are_given_back_as_the_writer_takes_them', async () => {
    const { q } = queue({ runBytesMax: 0 });
    for (let i = 0; i < 10; i++) q.offer(batch(i * 2));
    expect(q.bytes).toBe(10 * (KIB + 4));
    await q.take();
    expect(q.bytes).toBe(9 * (KIB + 4));
    while (q.poll() !== undefined);
    expect(q.bytes).toBe(0);
  });

  it('a_batch_larger_than_the_budget_still_reaches_an_idle_subscriber', async () => {
    const { q, dropped } = queue();
    q.offer(batch(0, 1, 256 * KIB));
    q.offer(batch(1, 1, 256 * KIB));
    expect(q.depth).toBe(1);
    expect(dropped.records).toBe(1);
    const item = await q.take();
    expect(item.kind === 'batches' && item.batches[0]!.first).toBe(0);
  });

  it('a_client_queue_capacity_still_bounds_the_envelopes', () => {
    const { q, dropped } = queue({ capacity: 2 });
    for (let i = 0; i < 5; i++) q.offer(batch(i * 2)); // no two contiguous
    expect(q.depth).toBe(2);
    expect(dropped.records).toBe(3);
  });
});

describe('subscriber queue coalescing', () => {
  it('contiguous_batches_queued_behind_one_another_leave_as_one_envelope', async () => {
    const { q } = queue({ runBytesMax: 16 * KIB });
    for (let i = 0; i < 40; i++) q.offer(batch(i)); // 40 single-record 1 KiB batches
    expect(q.depth).toBe(3); // 16 + 16 + 8 records
    const item = await q.take();
    expect(item.kind === 'batches' && item.batches.map((b) => b.first)).toEqual(
      Array.from({ length: 16 }, (_, i) => i),
    );
  });

  it('a_gap_in_offsets_starts_a_new_envelope', () => {
    const { q } = queue();
    q.offer(batch(0));
    q.offer(batch(1));
    q.offer(batch(5));
    q.offer(batch(6));
    expect(q.poll()?.map((b) => b.first)).toEqual([0, 1]);
    expect(q.poll()?.map((b) => b.first)).toEqual([5, 6]);
  });

  it('merged_published_lists_decode_as_one_batch_without_copying_a_payload', () => {
    const a = [new Uint8Array([1, 2, 3]), new Uint8Array([4])];
    const b = [new Uint8Array([5, 6]), new Uint8Array(0), new Uint8Array([7])];
    const batches = [listBatch(10, a), listBatch(12, b)];
    const parts = runFrame(batches, OFFSETS, scope);
    const frame = decodeFrame(join(parts));
    expect(frame.flags).toBe(OFFSETS);
    const decoded = decodeEventBatch(frame.flags, frame.payload);
    expect(decoded.baseOffset).toBe(10);
    expect(decoded.payloads.map((p) => [...p])).toEqual([...a, ...b].map((p) => [...p]));
    // The parts after the head and the count are the published lists' own bytes.
    const published = new Set(batches.flatMap((x) => x.list!.map((p) => p.buffer)));
    expect(parts.slice(2).every((p) => published.has(p.buffer))).toBe(true);
  });

  it('merged_batches_keep_each_record_time_and_offset_in_every_variant', () => {
    const batches = [batch(3, 2, 8), batch(5, 1, 8)];
    const timed = decodeFrame(
      join(runFrame(batches, OFFSETS | FLAG_EVENT_BATCH_TIMESTAMPS, scope)),
    );
    const t = decodeEventBatch(timed.flags, timed.payload);
    expect(t.baseOffset).toBe(3);
    expect(t.timestampsMicros).toEqual([1003, 1003, 1005]);
    expect(t.payloads.length).toBe(3);
    const json = decodeMessage(decodeFrame(join(runFrame(batches, JSON_VARIANT, scope))).payload);
    expect(json.type === 'event_batch' && [json.base_offset, json.payloads.length]).toEqual([3, 3]);
  });
});

describe('subscriber queue loss notices', () => {
  it('a_queue_that_dropped_records_names_the_offset_after_them_once_it_drains', async () => {
    const { q } = queue({ bytesMax: 4 * KIB, runBytesMax: 0 });
    for (let i = 0; i < 10; i++) q.offer(batch(i));
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      const item = await q.take();
      if (item.kind === 'batches') seen.push(...item.batches.map((b) => b.first));
    }
    expect(seen).toEqual([0, 1, 2]); // three of 1 KiB + 4 each fit in 4 KiB
    expect(await q.take()).toEqual({ kind: 'loss', next: 10, records: 7 });
  });

  it('a_batch_queued_after_a_drop_reports_the_loss_by_its_own_offset', async () => {
    const { q } = queue({ bytesMax: 2 * KIB, runBytesMax: 0 });
    q.offer(batch(0));
    q.offer(batch(1, 1, 2 * KIB)); // dropped: over the budget behind batch 0
    const first = await q.take();
    expect(first.kind).toBe('batches');
    q.offer(batch(2));
    const next = await q.take();
    expect(next.kind === 'batches' && next.batches[0]!.first).toBe(2);
    q.end();
    expect(await q.take()).toEqual({ kind: 'end' }); // no notice: offset 2 told of offset 1
  });

  it('a_loss_notice_is_an_empty_event_batch_at_the_offset_after_the_loss', () => {
    const binary = decodeFrame(lossFrame(42, OFFSETS, scope)!);
    expect(decodeEventBatch(binary.flags, binary.payload)).toMatchObject({
      baseOffset: 42,
      payloads: [],
    });
    const json = decodeMessage(decodeFrame(lossFrame(42, JSON_VARIANT, scope)!).payload);
    expect(json).toMatchObject({ type: 'event_batch', base_offset: 42, payloads: [] });
    // Without offsets a client cannot place a loss: nothing is sent.
    expect(lossFrame(42, FLAG_BINARY_EVENT_BATCH_SHARED, scope)).toBeUndefined();
  });
});
