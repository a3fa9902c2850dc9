// Goal: a shard's record times never go backwards, an in-memory shard answers offsetForTime from
// its ring, and the timestamped event variant carries each record's own time (also for a history
// batch that spans published batches), encoded once per batch.
// Method: in-memory shards and EventBatches, frames decoded with the wire codec.
import {
  FLAG_BINARY_EVENT_BATCH_SHARED,
  FLAG_EVENT_BATCH_OFFSETS,
  FLAG_EVENT_BATCH_TIMESTAMPS,
  decodeEventBatch,
  decodeFrame,
} from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { EventBatch, Shard } from '../src/index.js';
import { eventsFrame } from '../src/streams/event-frame.js';

const enc = new TextEncoder();
const hooks = { onDrop: () => undefined, onApply: () => undefined };
const scope = { tenant_id: 't1', namespace: 'default', stream: 's' };
const TIMED =
  FLAG_BINARY_EVENT_BATCH_SHARED | FLAG_EVENT_BATCH_OFFSETS | FLAG_EVENT_BATCH_TIMESTAMPS;

function join(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

describe('record times in the shard', () => {
  it('a_shard_stamps_a_batch_published_after_the_clock_stepped_back_with_the_newest_time', async () => {
    const shard = new Shard('t', null, { records: 1000, bytes: 1 << 20 }, hooks);
    await shard.publish([enc.encode('a')], 200);
    await shard.publish([enc.encode('b'), enc.encode('c')], 150); // the clock stepped back
    await shard.publish([enc.encode('d')], 300);
    expect(shard.ring.range(0, 4).map((b) => b.timestampMicros)).toEqual([200, 200, 300]);
    expect(await shard.offsetForTime(0)).toBe(0);
    expect(await shard.offsetForTime(200)).toBe(0);
    expect(await shard.offsetForTime(201)).toBe(3);
    expect(await shard.offsetForTime(301)).toBeUndefined();
  });

  it('the_timestamped_variant_carries_each_records_time_and_is_encoded_once_per_batch', () => {
    // A history batch read from the log spanning two published batches: times differ per record.
    const history = new EventBatch(
      5,
      [enc.encode('x'), enc.encode('y'), enc.encode('z')],
      10,
      0,
      [10, 10, 20],
    );
    const decoded = (batch: EventBatch) => {
      const { flags, payload } = decodeFrame(join(eventsFrame(batch, TIMED, scope)));
      return decodeEventBatch(flags, payload);
    };
    expect(decoded(history).timestampsMicros).toEqual([10, 10, 20]);
    expect(decoded(history.sliceFrom(7)).timestampsMicros).toEqual([20]);
    expect(decoded(history.sliceFrom(7)).baseOffset).toBe(7);
    // A live batch: one time for every record; its timestamped encoding is shared.
    const live = new EventBatch(8, [enc.encode('p'), enc.encode('q')], 30);
    expect(decoded(live).timestampsMicros).toEqual([30, 30]);
    let encodings = 0;
    const encode = (b: EventBatch, v: number) => eventsFrame(b, v, scope);
    const first = live.encoded(TIMED, encode, () => encodings++);
    const second = live.encoded(TIMED, encode, () => encodings++);
    expect(second).toBe(first);
    expect(encodings).toBe(1);
  });
});
