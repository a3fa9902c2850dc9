/**
 * Group commit. Waiters ask for "durable up to offset N"; one flush loop runs at a time, and
 * each flush takes its bound (the written tail) just before its fdatasync, so every waiter
 * whose records were written by then is covered by that one call and woken together. A flush
 * failure poisons: the durable bound freezes and every waiter, present and future, fails.
 */
import { assert } from '@felix/common';

interface Waiter {
  target: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

export interface FlushTarget {
  /** Syncs everything written so far; returns the offset bound the sync covered. */
  flush(): Promise<number>;
  /** The poison error to hand out once a flush failed. */
  poisonError(cause: unknown): Error;
  /** Called whenever the durable bound advances. */
  advanced(durable: number): void;
}

export class GroupCommit {
  private waiters: Waiter[] = [];
  private running = false;
  private poison: Error | undefined;
  /** Completed flushes (observability; tests compare it with fdatasync counts). */
  flushes = 0;

  constructor(
    private durableBound: number,
    private readonly target: FlushTarget,
  ) {}

  get durable(): number {
    return this.durableBound;
  }

  get poisoned(): Error | undefined {
    return this.poison;
  }

  /** Resolves once every offset below `offset` is on disk, flushing as needed. */
  waitFor(offset: number): Promise<void> {
    return new Promise<void>((resolve, reject) => this.notify(offset, resolve, reject));
  }

  /** `waitFor` without a promise of its own: the hot append path hands in its callbacks. */
  notify(offset: number, resolve: () => void, reject: (err: Error) => void): void {
    if (this.poison !== undefined) {
      reject(this.poison);
      return;
    }
    if (offset <= this.durableBound) {
      resolve();
      return;
    }
    this.waiters.push({ target: offset, resolve, reject });
    this.kick();
  }

  /** Raises the durable bound after a sync done elsewhere (sealing a segment). */
  advance(offset: number): void {
    if (this.poison !== undefined || offset <= this.durableBound) return;
    this.durableBound = offset;
    this.target.advanced(offset);
    this.wake();
  }

  /** Freezes the bound and fails every waiter. */
  fail(cause: unknown): Error {
    if (this.poison === undefined) this.poison = this.target.poisonError(cause);
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(this.poison);
    return this.poison;
  }

  private kick(): void {
    if (this.running) return;
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      while (this.poison === undefined && this.waiters.some((w) => w.target > this.durableBound)) {
        let bound: number;
        try {
          bound = await this.target.flush();
        } catch (err) {
          this.fail(err);
          return;
        }
        this.flushes++;
        if (bound <= this.durableBound) {
          // Nothing new was written: the remaining waiters asked past the written tail, which
          // the log never does; stop rather than spin.
          assert(
            this.waiters.every((w) => w.target <= this.durableBound),
            'waiter past the written tail',
          );
          break;
        }
        this.advance(bound);
      }
    } finally {
      this.running = false;
    }
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const keep: Waiter[] = [];
    const ready: Waiter[] = [];
    for (const w of this.waiters) (w.target <= this.durableBound ? ready : keep).push(w);
    this.waiters = keep;
    ready.sort((a, b) => a.target - b.target);
    for (const w of ready) w.resolve();
  }
}
