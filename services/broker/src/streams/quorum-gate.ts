/**
 * The waiter list of a `quorum` stream shard: batches the leader made durable that a majority of
 * the replica set does not hold yet. One list per shard, in offset order (the shard hands batches
 * over in the order their offsets were assigned), released from its head when the commit mark
 * moves: each released batch is applied (readers see it) and its publisher is acked. So readers
 * never see past the mark, and an ack means a majority holds the record.
 *
 * A publisher waits at most `timeoutMs`: then it is answered (QuorumTimeoutError, whose outcome is
 * unknown: the record may still commit), but its batch stays in the list and is applied when the
 * mark reaches it, so readers see the log in order and without holes. Deadlines grow in push
 * order, so one timer for the oldest unanswered waiter serves the whole list.
 */
import { assert } from '@felix/common';
import { QuorumTimeoutError } from '../errors.js';

/** Released slots kept at the list's head before it is compacted (amortised O(1) release). */
const WAITERS_COMPACT_AT = 1024;

export type QuorumOutcome = 'committed' | 'timeout' | 'abandoned';

interface Held<B> {
  batch: B;
  next: number;
  deadline: number;
  answered: boolean;
  resolve: () => void;
  reject: (err: Error) => void;
}

export interface QuorumGateOptions<B> {
  timeoutMs: number;
  /** Makes a released batch visible (ring, subscribers, groups). */
  apply(batch: B): void;
  /** Each wait's outcome, once (metrics). */
  outcome(o: QuorumOutcome): void;
  now?: () => number;
}

export class QuorumGate<B extends { first: number; count: number }> {
  private list: Held<B>[] = [];
  private head = 0;
  /** Index of the oldest waiter not answered yet (its deadline arms the timer). */
  private unanswered = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private mark: number;

  constructor(
    private readonly opts: QuorumGateOptions<B>,
    start = 0,
  ) {
    this.mark = start;
  }

  /** Batches waiting for the mark (they count in the shard's in-flight publishes). */
  get size(): number {
    return this.list.length - this.head;
  }

  /** The commit mark as this gate last heard it. */
  get commitOffset(): number {
    return this.mark;
  }

  /** Holds `batch` until the mark covers it; resolves then, rejects on the timeout. */
  hold(batch: B): Promise<void> {
    const next = batch.first + batch.count;
    const last = this.list[this.list.length - 1];
    assert(this.size === 0 || last!.next <= batch.first, 'quorum waiters arrive in offset order');
    if (next <= this.mark && this.size === 0) {
      this.opts.apply(batch);
      this.opts.outcome('committed');
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const deadline = this.now() + this.opts.timeoutMs;
      this.list.push({ batch, next, deadline, answered: false, resolve, reject });
      this.arm();
    });
  }

  /** The mark moved to `offset` (it never moves back): releases every batch it covers. */
  advance(offset: number): void {
    if (offset <= this.mark) return;
    this.mark = offset;
    this.release((h) => h.next <= offset);
  }

  /** Releases everything held (the shard stopped needing a majority: consistency or set changed). */
  open(): void {
    this.release(() => true);
  }

  /** The shard is no longer served: unanswered publishers fail with `err`, nothing is applied. */
  abandon(err: Error): void {
    for (let i = this.head; i < this.list.length; i++) {
      const h = this.list[i]!;
      if (h.answered) continue;
      h.answered = true;
      this.opts.outcome('abandoned');
      h.reject(err);
    }
    this.list = [];
    this.head = 0;
    this.unanswered = 0;
    this.disarm();
  }

  private release(covered: (h: Held<B>) => boolean): void {
    while (this.head < this.list.length && covered(this.list[this.head]!)) {
      const h = this.list[this.head]!;
      this.list[this.head] = undefined as unknown as Held<B>;
      this.head++;
      this.opts.apply(h.batch);
      if (!h.answered) {
        h.answered = true;
        this.opts.outcome('committed');
        h.resolve();
      }
    }
    this.unanswered = Math.max(this.unanswered, this.head);
    if (this.head === this.list.length) {
      this.list = [];
      this.head = 0;
      this.unanswered = 0;
    } else if (this.head > WAITERS_COMPACT_AT && this.head * 2 > this.list.length) {
      this.list = this.list.slice(this.head);
      this.unanswered -= this.head;
      this.head = 0;
    }
    this.arm();
  }

  /** Answers every waiter whose deadline passed, then arms the timer for the next one. */
  private expire(): void {
    this.timer = undefined;
    const now = this.now();
    while (this.unanswered < this.list.length) {
      const h = this.list[this.unanswered]!;
      if (h.deadline > now) break;
      this.unanswered++;
      if (h.answered) continue;
      h.answered = true;
      this.opts.outcome('timeout');
      h.reject(new QuorumTimeoutError(h.batch.first, this.mark, this.opts.timeoutMs));
    }
    this.arm();
  }

  private arm(): void {
    this.unanswered = Math.max(this.unanswered, this.head);
    const h = this.list[this.unanswered];
    if (h === undefined) {
      this.disarm();
      return;
    }
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => this.expire(), Math.max(0, h.deadline - this.now()));
    this.timer.unref?.();
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }
}
