/**
 * CommitSequencer: orders the observable half of writes (apply, fan-out) by offset while the
 * durable half (append, shared flush) stays concurrent. Two writes A < B can finish one
 * group-committed flush in either order; without this, readers could see B before A while the
 * disk says A, B. Turns are reserved in ascending offset order the moment offsets are claimed;
 * a turn's `wait()` resolves once every lower reserved range has resolved (released or
 * abandoned). Resolving the head wakes exactly the one waiter whose turn it now is.
 */
import { assert } from '@felix/common';
import { SupersededError, TurnCancelledError } from './errors.js';

export interface Turn {
  readonly first: number;
  readonly next: number;
  /** Resolves once every lower offset has resolved; rejects `Superseded` after a reset. */
  wait(signal?: AbortSignal): Promise<void>;
  /** The write was applied; later turns may proceed. Idempotent. */
  release(): void;
  /** The write will not be applied; later turns may proceed. Idempotent. */
  abandon(): void;
}

class TurnImpl implements Turn {
  resolved = false;
  waiter: { resolve: () => void; reject: (e: Error) => void } | undefined;
  constructor(
    readonly owner: CommitSequencer,
    readonly generation: number,
    readonly first: number,
    readonly next: number,
  ) {}

  wait(signal?: AbortSignal): Promise<void> {
    return this.owner.waitTurn(this, signal);
  }
  release(): void {
    this.owner.resolveTurn(this);
  }
  abandon(): void {
    this.owner.resolveTurn(this);
  }
}

export class CommitSequencer {
  /** Reserved turns in offset order; `head` indexes the oldest unresolved one. */
  private turns: TurnImpl[] = [];
  private head = 0;
  private generation = 0;
  private reservedNext: number;

  constructor(next = 0) {
    assert(Number.isSafeInteger(next) && next >= 0, 'sequencer start must be a safe offset');
    this.reservedNext = next;
  }

  /** Turns reserved and not yet resolved or superseded (an observability figure). */
  get pending(): number {
    return this.turns.length - this.head;
  }

  /**
   * Claims `[first, next)`. Ranges must ascend; offsets skipped between reservations (records
   * nobody applies, such as generation starts) count as resolved.
   */
  reserve(first: number, next: number): Turn {
    assert(Number.isSafeInteger(first) && Number.isSafeInteger(next), 'turn bounds are offsets');
    assert(first < next, 'a turn covers at least one offset');
    assert(first >= this.reservedNext, 'turns are reserved in ascending offset order');
    this.reservedNext = next;
    const turn = new TurnImpl(this, this.generation, first, next);
    this.turns.push(turn);
    return turn;
  }

  /** Abandons every outstanding turn: their waiters get `Superseded`; reservations restart at `next`. */
  reset(next: number): void {
    assert(Number.isSafeInteger(next) && next >= 0, 'reset needs a safe offset');
    this.generation++;
    const stale = this.turns.slice(this.head);
    this.turns = [];
    this.head = 0;
    this.reservedNext = next;
    for (const turn of stale) {
      const w = turn.waiter;
      turn.waiter = undefined;
      w?.reject(new SupersededError(turn.first, turn.next));
    }
  }

  /** @internal */
  waitTurn(turn: TurnImpl, signal?: AbortSignal): Promise<void> {
    if (turn.generation !== this.generation) {
      return Promise.reject(new SupersededError(turn.first, turn.next));
    }
    assert(!turn.resolved, 'a resolved turn cannot wait');
    assert(turn.waiter === undefined, 'a turn is waited for once');
    if (signal?.aborted) {
      this.resolveTurn(turn);
      return Promise.reject(
        new TurnCancelledError(turn.first, turn.next, { cause: signal.reason }),
      );
    }
    if (this.turns[this.head] === turn) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        if (turn.waiter === undefined) return;
        turn.waiter = undefined;
        this.resolveTurn(turn);
        reject(new TurnCancelledError(turn.first, turn.next, { cause: signal?.reason }));
      };
      turn.waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** @internal */
  resolveTurn(turn: TurnImpl): void {
    if (turn.resolved || turn.generation !== this.generation) return;
    turn.resolved = true;
    if (this.turns[this.head] !== turn) return; // out of order: held until the prefix catches up
    while (this.head < this.turns.length && this.turns[this.head]!.resolved) this.head++;
    if (this.head === this.turns.length) {
      this.turns = [];
      this.head = 0;
      return;
    }
    if (this.head > 1024 && this.head * 2 > this.turns.length) {
      this.turns = this.turns.slice(this.head);
      this.head = 0;
    }
    const nextTurn = this.turns[this.head]!;
    const w = nextTurn.waiter;
    nextTurn.waiter = undefined;
    w?.resolve();
  }
}
