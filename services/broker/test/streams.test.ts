// Goal: the shard core keeps its promises without any network: the ring is bounded, a full
// subscriber queue drops (never waits), one encoding serves every subscriber, and the
// register-before-read join yields history then live with no gap and no duplicate.
// Method: Shards over an in-memory fake store whose appends resolve out of order.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { EventBatch, Ring, Shard, type ShardStore, SubscriberQueue } from '../src/index.js';
import type { EncodedFrame } from '../src/streams/event-batch.js';

// A full collection on demand, to show what a structure no longer keeps reachable.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
/** Collects once the current job has ended (a WeakRef keeps its target until then). */
async function collectedAfterThisJob(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  collectGarbage();
}

const enc = new TextEncoder();
const hooks = { onDrop: () => undefined, onApply: () => undefined };
/** Queue bounds of `capacity` envelopes and bytes enough for any test here. */
const bounds = (capacity: number) => ({
  capacity,
  bytesMax: 1 << 20,
  runBytesMax: 1 << 16,
  runRecordsMax: 1024,
});

class FakeStore implements ShardStore {
  records: { offset: number; timestampMicros: number; payload: Uint8Array }[] = [];
  baseOffset = 0;
  tailOffset = 0;
  newestTimestampMicros = 0;
  /** Appends wait here until `release()`, so tests control durability order. */
  held: Array<() => void> = [];
  hold = false;
  append(payloads: Uint8Array[], timestampMicros: number) {
    const first = this.tailOffset;
    this.tailOffset += payloads.length;
    for (const [i, payload] of payloads.entries()) {
      this.records.push({ offset: first + i, timestampMicros, payload });
    }
    const r = { first, next: this.tailOffset };
    if (!this.hold) return Promise.resolve(r);
    return new Promise<typeof r>((resolve) => this.held.push(() => resolve(r)));
  }
  async read(from: number, budget: { maxRecords: number }) {
    if (from < this.baseOffset) return { kind: 'trimmed' as const, oldest: this.baseOffset };
    const records = this.records.filter((r) => r.offset >= from).slice(0, budget.maxRecords);
    return { kind: 'records' as const, records, next: from + records.length };
  }
  async offsetForTime(atMicros: number) {
    return this.records.find((r) => r.offset >= this.baseOffset && r.timestampMicros >= atMicros)
      ?.offset;
  }
  async close() {}
}

async function collect(sub: ReturnType<Shard['subscribe']>, until: number): Promise<number[]> {
  if (!sub.ok) throw new Error(sub.reason);
  const seen: number[] = [];
  for await (const b of sub.sub.history())
    for (let i = 0; i < b.payloads.length; i++) seen.push(b.first + i);
  while (seen.length === 0 || seen[seen.length - 1]! < until - 1) {
    const item = await sub.sub.queue.take();
    if (item.kind !== 'batches') break;
    for (const b of item.batches)
      for (let i = 0; i < b.payloads.length; i++) seen.push(b.first + i);
  }
  return seen;
}

describe('shard core', () => {
  it('the_ring_evicts_whole_batches_oldest_first', () => {
    const ring = new Ring(10, 1 << 20, 0);
    for (let i = 0; i < 6; i++)
      ring.push(new EventBatch(i * 3, [enc.encode('a'), enc.encode('b'), enc.encode('c')], 0));
    expect(ring.base).toBe(9); // 18 records pushed, at most 10 kept, whole batches
    expect(ring.range(10, 18).map((b) => b.first)).toEqual([10, 12, 15]);
  });

  it('a_batch_the_ring_evicted_is_no_longer_reachable_from_it', async () => {
    // Before the fix, evicted slots stayed filled until 1,024 of them piled up: with batches
    // of 512 KiB that pinned half a gigabyte of socket chunks and made every major GC walk it.
    const ring = new Ring(4, 1 << 20, 0);
    const payloads = ((): WeakRef<Uint8Array>[] => {
      const refs: WeakRef<Uint8Array>[] = [];
      for (let i = 0; i < 8; i++) {
        const p = new Uint8Array(1024);
        refs.push(new WeakRef(p));
        ring.push(new EventBatch(i * 2, [p, new Uint8Array(1)], 0));
      }
      return refs;
    })();
    await collectedAfterThisJob();
    expect(ring.base).toBe(12); // 16 records pushed in batches of 2, at most 4 kept
    const held = payloads.map((r) => r.deref() !== undefined);
    expect(held).toEqual([false, false, false, false, false, false, true, true]);
    expect(ring.range(12, 16).map((b) => b.first)).toEqual([12, 14]);
  });

  it('a_full_subscriber_queue_drops_new_batches_and_never_waits', async () => {
    let dropped = 0;
    const q = new SubscriberQueue<EventBatch>(bounds(2), false, (n) => {
      dropped += n;
    });
    // Offsets 0, 2, 4, 6, 8: no two contiguous, so each is an envelope of its own.
    for (let i = 0; i < 5; i++) q.offer(new EventBatch(i * 2, [enc.encode('x')], 0));
    expect(q.depth).toBe(2);
    expect(dropped).toBe(3);
    expect(q.firstDropped).toBe(4);
    const a = await q.take();
    expect(a.kind === 'batches' && a.batches[0]!.first).toBe(0);
  });

  it('a_lagging_durable_subscriber_is_ended_naming_the_first_dropped_offset', async () => {
    const q = new SubscriberQueue<EventBatch>({ ...bounds(1), bytesMax: 5 }, true, () => undefined);
    q.offer(new EventBatch(0, [enc.encode('x')], 0));
    q.offer(new EventBatch(1, [enc.encode('y')], 0));
    q.offer(new EventBatch(2, [enc.encode('z')], 0));
    expect((await q.take()).kind).toBe('batches');
    expect(await q.take()).toEqual({ kind: 'lagged', resumeFrom: 1 });
  });

  it('a_subscriber_that_registers_on_a_retired_shard_is_ended_at_once', async () => {
    const shard = new Shard('t', null, { records: 1000, bytes: 1 << 20 }, hooks);
    const before = shard.subscribe({ kind: 'latest' }, 100, false);
    shard.retire();
    // A session that passed the leadership check just before the release subscribes now.
    const after = shard.subscribe({ kind: 'latest' }, 100, false);
    for (const s of [before, after]) {
      if (!s.ok) throw new Error('subscribe failed');
      expect(await s.sub.queue.take()).toEqual({ kind: 'end' });
    }
  });

  it('one_encoding_serves_every_subscriber', async () => {
    const shard = new Shard('t', null, { records: 1000, bytes: 1 << 20 }, hooks);
    const subs = Array.from({ length: 10 }, () => shard.subscribe({ kind: 'latest' }, 100, false));
    await shard.publish([enc.encode('one'), enc.encode('two')], 0);
    let encodings = 0;
    const frames = new Set<EncodedFrame>();
    for (const s of subs) {
      if (!s.ok) throw new Error('subscribe failed');
      const item = await s.sub.queue.take();
      if (item.kind !== 'batches') throw new Error('expected a batch');
      frames.add(
        item.batches[0]!.encoded(
          4,
          () => [new Uint8Array(8)],
          () => encodings++,
        ),
      );
    }
    expect(encodings).toBe(1);
    expect(frames.size).toBe(1);
  });

  it('the_join_delivers_history_then_live_without_gap_or_duplicate', async () => {
    const store = new FakeStore();
    // A small ring forces history through the store.
    const shard = new Shard('t', store, { records: 4, bytes: 1 << 20 }, hooks);
    for (let i = 0; i < 50; i++) await shard.publish([enc.encode(`r${i}`)], 0);
    store.hold = true;
    const inflight = [shard.publish([enc.encode('a')], 0), shard.publish([enc.encode('b')], 0)];
    // Appends 50 and 51 are written but not yet durable: invisible to a new subscriber.
    const sub = shard.subscribe({ kind: 'earliest' }, 1000, false);
    expect(sub.ok && sub.sub.liveOffset).toBe(50);
    // Make them durable out of order; the shard still applies them in offset order.
    store.held[1]!();
    store.held[0]!();
    await Promise.all(inflight);
    store.hold = false;
    for (let i = 0; i < 10; i++) await shard.publish([enc.encode(`s${i}`)], 0);
    const seen = await collect(sub, 62);
    expect(seen).toEqual(Array.from({ length: 62 }, (_, i) => i));
  });

  it('cursor_errors_name_the_available_offset', async () => {
    const store = new FakeStore();
    const shard = new Shard('t', store, { records: 4, bytes: 1 << 20 }, hooks);
    for (let i = 0; i < 10; i++) await shard.publish([enc.encode('x')], 0);
    store.baseOffset = 5;
    expect(shard.subscribe({ kind: 'offset', offset: 2 }, 10, false)).toMatchObject({
      ok: false,
      reason: 'too_old',
      available: 5,
    });
    expect(shard.subscribe({ kind: 'offset', offset: 11 }, 10, false)).toMatchObject({
      ok: false,
      reason: 'in_future',
      available: 10,
    });
    expect(shard.subscribe({ kind: 'offset', offset: 10 }, 10, false).ok).toBe(true);
  });
});
