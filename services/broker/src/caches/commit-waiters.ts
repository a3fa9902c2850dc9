/**
 * The commit wait of one log (cache or counters) of a replicated `quorum` cache shard: the same
 * rule as a quorum stream's waiter list (streams/quorum-gate.ts), split in two because a cache
 * write is applied inside its projection (storage's ProjectionWriter) rather than by the shard:
 *
 * - `wait(next)` is the projection's commit gate: a durable write is applied (readers, watches
 *   and hot values see it) only once the commit mark reaches `next`, so no reader sees a value a
 *   failover could lose; a write of a timed-out requester still waits and applies in order.
 * - `answer(write)` is the requester's side: the write's own answer once applied, or
 *   `quorum_timeout` (outcome unknown: the record stays in the log and may commit) after
 *   `timeoutMs`.
 *
 * The mark only moves forward. Once the shard stops being served here, every wait fails (and
 * any later one, until the broker leads the shard again and makes a new list), so nothing is
 * applied or acked without a majority.
 */
import { QuorumAbandonedError } from '../errors.js';
import { QUORUM_WAITING_BATCHES_MAX } from '../limits.js';
import { Refusal } from '../session/refusal.js';

interface Waiter {
  next: number;
  open: () => void;
  fail: (err: Error) => void;
}

/** What a log's leader needs of its commit wait: told where the mark is; `wait` is undefined
 *  once the mark covers `next`. */
export type CommitWait = Pick<CommitWaiters, 'advance' | 'wait'>;

export class CommitWaiters {
  /** Waiters in `next` order (writes claim offsets in order; a rare late one is inserted). */
  private waiting: Waiter[] = [];
  private mark = 0;
  private failed: Error | null = null;

  constructor(
    private readonly shard: string,
    public timeoutMs: number,
    /** Each requester's outcome, once (metrics). */
    private readonly outcome: (o: 'committed' | 'timeout' | 'abandoned') => void = () => {},
  ) {}

  /** Writes waiting for the mark. */
  get size(): number {
    return this.waiting.length;
  }

  /** The commit mark as last heard. */
  get commitOffset(): number {
    return this.mark;
  }

  /** Whether the shard stopped being served (every wait fails). */
  get abandoned(): boolean {
    return this.failed !== null;
  }

  /** The projection's gate: undefined when the mark already covers `next`. */
  wait(next: number): Promise<void> | undefined {
    if (this.failed !== null) return Promise.reject(this.failed);
    if (next <= this.mark) return undefined;
    return new Promise<void>((open, fail) => {
      const w: Waiter = { next, open, fail };
      let at = this.waiting.length;
      while (at > 0 && this.waiting[at - 1]!.next > next) at--;
      this.waiting.splice(at, 0, w);
    });
  }

  /** The mark moved to `offset` (never back): opens every wait it covers. */
  advance(offset: number): void {
    if (offset <= this.mark || this.failed !== null) return;
    this.mark = offset;
    let n = 0;
    while (n < this.waiting.length && this.waiting[n]!.next <= offset) n++;
    if (n === 0) return;
    const opened = this.waiting.splice(0, n);
    for (const w of opened) w.open();
  }

  /** The shard no longer needs a majority (its consistency became `leader`): opens every wait. */
  open(): void {
    const all = this.waiting;
    this.waiting = [];
    for (const w of all) w.open();
  }

  /** The shard is no longer served here: every wait fails, now and later. */
  abandon(): void {
    this.failed ??= new QuorumAbandonedError(this.shard);
    const all = this.waiting;
    this.waiting = [];
    for (const w of all) w.fail(this.failed);
  }

  /**
   * Starts `write` and answers its result once its projection applied it (the mark covered it),
   * or a `quorum_timeout` refusal after `timeoutMs`; past QUORUM_WAITING_BATCHES_MAX waiting
   * writes it is refused `overloaded` before anything is appended.
   */
  answer<T>(write: () => Promise<T>): Promise<T> {
    if (this.waiting.length >= QUORUM_WAITING_BATCHES_MAX)
      return Promise.reject(
        new Refusal('overloaded', 'too many writes wait for a majority', 'quorum_waiting'),
      );
    return new Promise<T>((resolve, reject) => {
      let answered = false;
      const timer = setTimeout(() => {
        answered = true;
        this.outcome('timeout');
        const message =
          `${this.shard}: the write was not held by a majority within ${this.timeoutMs} ms ` +
          `(commit offset ${this.mark}); the outcome is unknown`;
        reject(new Refusal('quorum_timeout', message, 'quorum_timeout'));
      }, this.timeoutMs);
      timer.unref?.();
      write().then(
        (value) => {
          clearTimeout(timer);
          if (answered) return;
          answered = true;
          this.outcome('committed');
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          if (answered) return;
          answered = true;
          const abandoned = err instanceof QuorumAbandonedError;
          if (abandoned) this.outcome('abandoned');
          reject(
            abandoned
              ? new Refusal('leadership_lost', err.message, 'quorum_abandoned', { cause: err })
              : err,
          );
        },
      );
    });
  }
}
