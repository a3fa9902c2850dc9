/**
 * The in-memory half of one consumer group on one stream shard (reference §5): standing claims
 * with their visibility deadlines, owed records (lapsed or handed back) with their attempt
 * counts, finished offsets above the cursor, and redriven dead letters. Pure bookkeeping: no I/O
 * and no clock of its own. The durable half (cursor, dead letters) is written by GroupService.
 * This state is deliberately not durable: after a restart a group resumes from its committed
 * position and everything above it is delivered again (at-least-once).
 */

export interface Claim {
  /** Deliveries of this record including the one this claim is for. */
  attempts: number;
  /** Unix ms at which the claim lapses (or a delayed nack becomes owed). */
  deadline: number;
  /** A nack with a delay: still counted in flight, but it cannot be extended. */
  delayed: boolean;
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

  constructor(position: number, committed: number | undefined, tail: number, nowMs: number) {
    this.position = position;
    this.committed = committed;
    this.next = position;
    this.freshFloor = tail;
    this.lastUsedMs = nowMs;
  }

  /** Moves lapsed claims (and delayed nacks that came due) to the owed set; answers how many lapsed. */
  expire(nowMs: number): number {
    let lapsed = 0;
    for (const [offset, c] of this.claims) {
      if (c.deadline > nowMs) continue;
      this.claims.delete(offset);
      this.owed.set(offset, c.attempts);
      if (!c.delayed) lapsed++;
    }
    return lapsed;
  }

  /** Earliest claim deadline, or undefined with nothing in flight. */
  earliestDeadline(): number | undefined {
    let min: number | undefined;
    for (const c of this.claims.values())
      if (min === undefined || c.deadline < min) min = c.deadline;
    return min;
  }

  /** Owed offsets, lowest first. */
  owedInOrder(): number[] {
    return [...this.owed.keys()].sort((a, b) => a - b);
  }

  claim(offset: number, attempts: number, deadline: number): void {
    this.owed.delete(offset);
    this.claims.set(offset, { attempts, deadline, delayed: false });
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
    this.done.add(offset);
    const before = this.position;
    while (this.done.delete(this.position)) this.position++;
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
