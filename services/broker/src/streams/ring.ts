/**
 * The in-memory ring of one shard: the most recent published batches, bounded in records and in
 * bytes, evicting whole batches oldest first. For an in-memory stream it is the stream; for a
 * durable one it is the replay window that lets a near-tail subscriber skip the disk.
 */
import { assert } from '@felix/common';
import { RING_COMPACT_SLOTS_MIN } from '../limits.js';
import type { EventBatch } from './event-batch.js';

export class Ring {
  /** Slots below `head` are cleared as they are evicted: an evicted batch must not stay
   *  reachable (its payloads pin whole socket chunks) until the array is next compacted. */
  private batches: Array<EventBatch | undefined> = [];
  private head = 0; // index of the oldest live batch in `batches`
  private records = 0;
  private bytes = 0;
  /** Offset of the oldest record held, or the tail when empty. */
  base: number;

  constructor(
    private readonly recordsMax: number,
    private readonly bytesMax: number,
    start: number,
  ) {
    this.base = start;
  }

  get size(): number {
    return this.batches.length - this.head;
  }

  push(batch: EventBatch): void {
    const last = this.batches[this.batches.length - 1];
    if (this.size > 0 && last!.next !== batch.first) {
      // Offsets that hold no event (a log's generation start) break the run: start afresh so
      // `range()` never spans a hole.
      assert(batch.first > last!.next, 'ring batches must move forward');
      this.batches = [];
      this.head = 0;
      this.records = 0;
      this.bytes = 0;
    }
    if (this.size === 0) this.base = batch.first;
    this.batches.push(batch);
    this.records += batch.count;
    this.bytes += batch.bytes;
    while (this.size > 1 && (this.records > this.recordsMax || this.bytes > this.bytesMax)) {
      const old = this.batches[this.head]!;
      this.batches[this.head] = undefined;
      this.head++;
      this.records -= old.count;
      this.bytes -= old.bytes;
      this.base = this.batches[this.head]!.first;
    }
    if (this.head >= RING_COMPACT_SLOTS_MIN && this.head * 2 > this.batches.length) {
      this.batches = this.batches.slice(this.head);
      this.head = 0;
    }
  }

  /** Index of the first batch whose `next` is past `from` (binary search over the live ones). */
  private firstCovering(from: number): number {
    let lo = this.head;
    let hi = this.batches.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.batches[mid]!.next <= from) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * First offset of the oldest batch appended at or after `atMicros` (binary search: batch times
   * never decrease within a shard), or undefined when every batch held is older.
   */
  firstAtOrAfter(atMicros: number): number | undefined {
    let lo = this.head;
    let hi = this.batches.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.batches[mid]!.timestampMicros >= atMicros) hi = mid;
      else lo = mid + 1;
    }
    return this.batches[lo]?.first;
  }

  /**
   * Visits the payloads of [from, until) in offset order without copying any batch (a consumer
   * group reads a few records out of batches that may hold thousands). Needs from >= base.
   */
  visit(
    from: number,
    until: number,
    fn: (offset: number, payload: Uint8Array, timestampMicros: number) => void,
  ): void {
    assert(from >= this.base || this.size === 0, 'visit below the ring base');
    for (let i = this.firstCovering(from); i < this.batches.length; i++) {
      const b = this.batches[i]!;
      if (b.first >= until) break;
      const end = Math.min(b.next, until);
      for (let o = Math.max(b.first, from); o < end; o++)
        fn(o, b.payloads[o - b.first]!, b.timeAt(o - b.first));
    }
  }

  /** Batches covering [from, until), the first sliced to start at `from`. Needs from >= base. */
  range(from: number, until: number): EventBatch[] {
    assert(from >= this.base || this.size === 0, 'range below the ring base');
    const out: EventBatch[] = [];
    for (let i = this.firstCovering(from); i < this.batches.length; i++) {
      const b = this.batches[i]!;
      if (b.first >= until) break;
      out.push(b.sliceFrom(from));
    }
    return out;
  }
}
