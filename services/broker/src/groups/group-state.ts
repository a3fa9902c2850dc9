/**
 * The in-memory half of one consumer group on one stream shard (reference §5): standing claims
 * with their visibility deadlines, owed records (lapsed or handed back) with their attempt
 * counts, finished offsets above the cursor, and redriven dead letters. Pure bookkeeping: no I/O
 * and no clock of its own. The durable half (cursor, dead letters) is written by GroupService.
 * This state is deliberately not durable: after a restart a group resumes from its committed
 * position and everything above it is delivered again (at-least-once).
 */

import { GROUP_DEADLINE_HEAP_SLACK } from '../limits.js';

/**
 * One standing claim. It is also its own deadline-heap entry: its deadline never changes (a
 * reschedule replaces the claim), so an entry is live exactly while `claims` maps its offset
 * to it, and one object per record in flight is all the bookkeeping a claim costs.
 */
export interface Claim {
  readonly offset: number;
  /** Deliveries of this record including the one this claim is for. */
  readonly attempts: number;
  /** Unix ms at which the claim lapses (or a delayed nack becomes owed). */
  readonly deadline: number;
  /** A nack with a delay: still counted in flight, but it cannot be extended. */
  readonly delayed: boolean;
}

export class GroupState {
  /** Every offset below it is finished; the durable cursor trails or equals it. */
  position: number;
  /** Last position written durably; undefined when the group never committed. */
  committed: number | undefined;
  /** Next offset never handed out by this state. */
  next: number;
  /**
   * The shard tail when this state was created: a settle for an offset below it that this
   * state never handed out is accepted (it was handed out before a restart or eviction).
   */
  freshFloor: number;
  readonly claims = new Map<number, Claim>();
  /** Owed offset -> deliveries so far. Handed out, lowest first, before new records. */
  readonly owed = new Map<number, number>();
  /** Finished offsets at or above `position`, waiting for the gap below them to close. */
  readonly done = new Set<number>();
  /** Offsets redriven from the dead letters and not yet finished. */
  readonly redriven = new Set<number>();
  /** Serialises polls of this group: one hand-out decision at a time. */
  pollChain: Promise<unknown> = Promise.resolve();
  lastUsedMs: number;
  /** The cursor write in flight, if any (settles behind it wait and then write once). */
  commitRun: Promise<void> | undefined;
  /**
   * Claims by deadline as a binary min-heap. An entry is live while it is still the claim
   * standing for its offset; others are dropped when they surface, and the heap is rebuilt when
   * dead entries would outnumber claims (GROUP_DEADLINE_HEAP_SLACK).
   */
  private readonly deadlines: Claim[] = [];

  constructor(position: number, committed: number | undefined, tail: number, nowMs: number) {
    this.position = position;
    this.committed = committed;
    this.next = position;
    this.freshFloor = tail;
    this.lastUsedMs = nowMs;
  }

  /**
   * Moves lapsed claims (and delayed nacks that came due) to the owed set; answers how many
   * lapsed. Only the claims that came due are visited (the deadline heap), so a poll costs the
   * same with ten or ten thousand records in flight.
   */
  expire(nowMs: number): number {
    let lapsed = 0;
    const heap = this.deadlines;
    while (heap.length > 0 && heap[0]!.deadline <= nowMs) {
      const c = popHeap(heap);
      if (this.claims.get(c.offset) !== c) continue; // settled or rescheduled since
      this.claims.delete(c.offset);
      this.owed.set(c.offset, c.attempts);
      if (!c.delayed) lapsed++;
    }
    return lapsed;
  }

  /** Earliest claim deadline, or undefined with nothing in flight. */
  earliestDeadline(): number | undefined {
    const heap = this.deadlines;
    while (heap.length > 0) {
      const c = heap[0]!;
      if (this.claims.get(c.offset) === c) return c.deadline;
      popHeap(heap); // a settled or rescheduled claim's old entry
    }
    return undefined;
  }

  /** Owed offsets, lowest first. */
  owedInOrder(): number[] {
    if (this.owed.size === 0) return [];
    return [...this.owed.keys()].sort((a, b) => a - b);
  }

  /**
   * Moves a standing claim's deadline (extend; a delayed nack with `delayed`): the claim is
   * replaced, so the old one's heap entry is dead from here on. Answers the new claim.
   */
  reschedule(claim: Claim, deadline: number, delayed = claim.delayed): Claim {
    const next: Claim = { offset: claim.offset, attempts: claim.attempts, deadline, delayed };
    this.claims.set(claim.offset, next);
    this.schedule(next);
    return next;
  }

  private schedule(claim: Claim): void {
    const heap = this.deadlines;
    // Entries of settled claims stay until they surface; rebuild before they outnumber claims.
    if (heap.length >= 2 * this.claims.size + GROUP_DEADLINE_HEAP_SLACK) {
      heap.length = 0;
      for (const c of this.claims.values()) if (c !== claim) pushHeap(heap, c);
    }
    pushHeap(heap, claim);
  }

  claim(offset: number, attempts: number, deadline: number): void {
    if (this.owed.size > 0) this.owed.delete(offset);
    const claim: Claim = { offset, attempts, deadline, delayed: false };
    this.claims.set(offset, claim);
    this.schedule(claim);
  }

  /** Stops tracking an offset being given up on (its dead letter is being written). */
  release(offset: number): void {
    this.claims.delete(offset);
    this.owed.delete(offset);
  }

  /**
   * Marks an offset finished and advances the position over the contiguous run of finished
   * offsets. Answers whether the position moved.
   */
  finish(offset: number): boolean {
    this.release(offset);
    if (offset < this.position) return false;
    const before = this.position;
    // In-order acks (the common case) move the position without touching the done set.
    if (offset === this.position) this.position++;
    else this.done.add(offset);
    while (this.done.size > 0 && this.done.delete(this.position)) this.position++;
    if (this.next < this.position) this.next = this.position;
    return this.position !== before;
  }

  /** True when a settle for `offset` names nothing this state knows of (a stale claim). */
  isUnknown(offset: number): boolean {
    if (this.claims.has(offset) || this.owed.has(offset)) return false;
    if (offset < this.position || this.done.has(offset)) return false;
    return !(offset >= this.next && offset < this.freshFloor);
  }

  /** A seek: every standing claim is void, the position is `offset`; redriven records stay owed. */
  reset(offset: number): void {
    this.claims.clear();
    this.deadlines.length = 0;
    for (const o of [...this.owed.keys()]) if (!this.redriven.has(o)) this.owed.delete(o);
    this.done.clear();
    this.position = offset;
    this.next = offset;
    this.freshFloor = offset;
  }

  /** Skips what retention removed: nothing below `oldest` can be handed out any more. */
  skipTo(oldest: number): void {
    if (this.next < oldest) this.next = oldest;
    if (this.position < oldest) {
      for (const o of this.done) if (o < oldest) this.done.delete(o);
      this.position = oldest;
      while (this.done.delete(this.position)) this.position++;
    }
  }
}

function pushHeap(heap: Claim[], e: Claim): void {
  let i = heap.length;
  heap.push(e);
  while (i > 0) {
    const up = (i - 1) >> 1;
    if (heap[up]!.deadline <= e.deadline) break;
    heap[i] = heap[up]!;
    i = up;
  }
  heap[i] = e;
}

function popHeap(heap: Claim[]): Claim {
  const top = heap[0]!;
  const last = heap.pop()!;
  if (heap.length > 0) {
    let i = 0;
    const n = heap.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && heap[r]!.deadline < heap[l]!.deadline ? r : l;
      if (heap[c]!.deadline >= last.deadline) break;
      heap[i] = heap[c]!;
      i = c;
    }
    heap[i] = last;
  }
  return top;
}
