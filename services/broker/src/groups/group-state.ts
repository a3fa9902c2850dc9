/**
 * The in-memory half of one consumer group on one stream shard (reference §5): standing claims
 * with their visibility deadlines, owed records (lapsed or handed back) with their attempt
 * counts, finished offsets above the cursor, and redriven dead letters. Pure bookkeeping: no I/O
 * and no clock of its own. The durable half (cursor, dead letters) is written by the group registry and settles.
 * This state is deliberately not durable: after a restart a group resumes from its committed
 * position and everything above it is delivered again (at-least-once).
 */

import { GROUP_DEADLINE_HEAP_SLACK } from '../limits.js';
import { OffsetMap, OffsetSet } from './offset-map.js';

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
  /** The named consumer (FEATURE_GROUP_CONSUMER) it was handed to; undefined when anonymous. */
  readonly member?: string;
  /** The connection it was handed to (or reserved for by a reclaim); only for named members. */
  readonly conn?: object;
  /**
   * Reserved by a reclaim and not yet handed out again: the delivery `attempts` names is the old
   * connection's, which no longer stands (only an ack, which names none, still finishes it).
   */
  readonly reserved?: boolean;
}

/** Whether `attempts` names the delivery `claim` stands for (a reserved claim stands for none). */
export function standsFor(claim: Claim | undefined, attempts: number): boolean {
  return claim !== undefined && claim.attempts === attempts && claim.reserved !== true;
}

/** Who a poll hands records to: a named consumer on one connection. */
export interface Member {
  readonly name: string;
  readonly conn: object;
}

export class GroupState {
  /** Every offset below it is finished; the durable cursor trails or equals it. */
  position: number;
  /** Last position written durably; undefined when the group never committed. */
  committed: number | undefined;
  /** Next offset never handed out by this state. */
  next: number;
  /**
   * The shard tail when this state was loaded from a cursor: a settle for an offset below it
   * that this state never handed out is accepted (it was handed out before a restart or
   * eviction). A group with no cursor handed nothing out yet, so it is the position there.
   */
  freshFloor: number;
  /** Offset tables, not Map/Set: every record handed out passes through them (offset-map.ts). */
  readonly claims = new OffsetMap<Claim>();
  /** Owed offset -> deliveries so far. Handed out, lowest first, before new records. */
  readonly owed = new OffsetMap<number>();
  /** Finished offsets at or above `position`, waiting for the gap below them to close. */
  readonly done = new OffsetSet();
  /** Offsets redriven from the dead letters and not yet finished. */
  readonly redriven = new Set<number>();
  /**
   * Records skipped because retention removed them before the group reached them, not yet
   * reported: the next new record handed out carries the count as `skipped_before`.
   */
  skippedPending = 0;
  /**
   * Offsets (ascending) a reclaim reserved for a connection: still claimed, handed to that
   * connection's next polls before anything else. Weakly held: a connection that goes away
   * takes its list with it, and the claims lapse as any other would.
   */
  readonly reserved = new WeakMap<object, number[]>();
  /** Members each connection has reclaimed for: a reclaim happens once per connection. */
  private readonly reclaimedBy = new WeakMap<object, Set<string>>();
  /** Serialises polls of this group: one hand-out decision at a time. */
  pollChain: Promise<unknown> = Promise.resolve();
  /** Hand-outs chained on `pollChain` and not yet settled: a poll answered in its turn needs 0. */
  handingOut = 0;
  /** Long polls waiting on this state: it is in use, never evicted idle (a poll woken on an
   *  evicted state would hand out what a state loaded again hands out too). */
  parked = 0;
  lastUsedMs: number;
  /** Set when the group was deleted: a poll parked on this state answers empty, claiming
   *  nothing from a state no settle can reach any more. */
  detached = false;
  /** The cursor write in flight, if any (settles behind it wait and then write once); a
   *  seek's write too, so settles of the new position wait for it. */
  commitRun: Promise<void> | undefined;
  /** Seeks so far: a cursor write begun before a seek neither waits on nor records its
   *  position past it (the seek set the cursor itself). */
  seeks = 0;
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
    return this.owed.keys().sort((a, b) => a - b);
  }

  /**
   * Moves a standing claim's deadline (extend; a delayed nack with `delayed`): the claim is
   * replaced, so the old one's heap entry is dead from here on. Answers the new claim.
   */
  reschedule(claim: Claim, deadline: number, delayed = claim.delayed): Claim {
    const next: Claim = { ...claim, deadline, delayed };
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

  claim(offset: number, attempts: number, deadline: number, member?: Member): void {
    if (this.owed.size > 0) this.owed.delete(offset);
    const claim: Claim =
      member === undefined
        ? { offset, attempts, deadline, delayed: false }
        : { offset, attempts, deadline, delayed: false, member: member.name, conn: member.conn };
    this.claims.set(offset, claim);
    this.schedule(claim);
  }

  /**
   * A named consumer's reclaim (reference §5): the first time `member.conn` asks, every claim
   * standing for `member.name` on another connection is reserved for this one, lowest offset
   * first. The claims keep their deadlines (a reservation nobody picks up lapses as usual).
   * Answers how many were reserved; 0 on every later ask from the same connection.
   */
  reclaim(member: Member): number {
    let names = this.reclaimedBy.get(member.conn);
    if (names === undefined) {
      names = new Set();
      this.reclaimedBy.set(member.conn, names);
    }
    if (names.has(member.name)) return 0;
    names.add(member.name);
    const taken: Claim[] = [];
    for (const c of this.claims.values()) {
      if (c.member === member.name && c.conn !== member.conn && !c.delayed) taken.push(c);
    }
    if (taken.length === 0) return 0;
    taken.sort((a, b) => a.offset - b.offset);
    const list = this.reserved.get(member.conn) ?? [];
    for (const c of taken) {
      const next: Claim = { ...c, conn: member.conn, reserved: true };
      this.claims.set(c.offset, next);
      this.schedule(next);
      list.push(c.offset);
    }
    list.sort((a, b) => a - b);
    this.reserved.set(member.conn, list);
    return taken.length;
  }

  /**
   * Takes the next offset reserved for `conn` whose claim still stands for it (settled or lapsed
   * ones are dropped on the way); undefined when none is left.
   */
  nextReserved(conn: object): Claim | undefined {
    const list = this.reserved.get(conn);
    if (list === undefined) return undefined;
    while (list.length > 0) {
      const c = this.claims.get(list.shift()!);
      if (c !== undefined && c.conn === conn && !c.delayed) return c;
    }
    this.reserved.delete(conn);
    return undefined;
  }

  /** Puts an offset taken by `nextReserved` back at the front (the answer was full). */
  unreserve(conn: object, offset: number): void {
    const list = this.reserved.get(conn);
    if (list === undefined) this.reserved.set(conn, [offset]);
    else list.unshift(offset);
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

  /**
   * A seek: every standing claim is void, the position is `offset`; redriven records stay owed,
   * a claimed one too (its voided delivery counted), or it would be neither owed nor listed.
   */
  reset(offset: number): void {
    this.seeks++;
    for (const o of this.redriven) {
      const claim = this.claims.get(o);
      if (claim !== undefined) this.owed.set(o, claim.attempts);
    }
    this.claims.clear();
    this.deadlines.length = 0;
    for (const o of this.owed.keys()) if (!this.redriven.has(o)) this.owed.delete(o);
    this.done.clear();
    this.position = offset;
    this.next = offset;
    this.freshFloor = offset;
    this.skippedPending = 0;
  }

  /**
   * Skips what retention removed: nothing below `oldest` can be handed out any more. The records
   * never handed out are counted for the next record's `skipped_before`; answers that count.
   */
  skipTo(oldest: number): number {
    let skipped = 0;
    if (this.next < oldest) {
      skipped = oldest - this.next;
      this.skippedPending += skipped;
      this.next = oldest;
    }
    if (this.position < oldest) {
      for (const o of this.done) if (o < oldest) this.done.delete(o);
      this.position = oldest;
      while (this.done.delete(this.position)) this.position++;
    }
    return skipped;
  }

  /**
   * Whether this state holds what a load from the durable cursor and dead letters would not
   * rebuild: an owed record's attempt count (one owed at 0 is handed out at 1 either way, and a
   * redriven one is owed at 0 again by the load), an offset finished above the position (an ack
   * above a gap; a dead letter there is rebuilt, but the two are not told apart), or a retention
   * skip not yet reported. The registry never evicts such a state idle.
   */
  holdsUnrebuildable(): boolean {
    if (this.done.size > 0 || this.skippedPending > 0) return true;
    return this.owed.size > 0 && this.owed.values().some((attempts) => attempts > 0);
  }

  /** The skip count the next new record reports (and clears). */
  takeSkipped(): number {
    const n = this.skippedPending;
    this.skippedPending = 0;
    return n;
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
