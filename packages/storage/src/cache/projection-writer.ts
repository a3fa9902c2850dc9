/**
 * The write path every projection shares, shaped like a stream publish: a short lock claims the
 * offsets and a CommitSequencer turn; the durable half (the fsync) runs outside any lock so
 * concurrent writers share one flush; the apply half (index/fold update, watcher notification)
 * runs strictly in offset order. A claimed write is "staged" until its turn applies it: it is
 * invisible to readers and watchers, and compaction skips its key.
 *
 * Records appended behind the projection (replication writes straight to the log) are caught up
 * in offset order before the next claim, and by readers whenever nothing of ours is in flight.
 */
import { CommitSequencer, type Turn } from '../commit-sequencer.js';
import type { Claim, ProjectionLog } from './log-port.js';
import { ProjectionClosedError } from './projection-errors.js';
import { ShortLock } from './short-lock.js';

export interface Staging {
  keys: string[];
  payloads: Uint8Array[];
}

export class ProjectionWriter {
  private readonly lock = new ShortLock();
  private readonly sequencer: CommitSequencer;
  private readonly stagedKeys = new Map<string, number>();
  /** Next offset no claim of ours (nor caught-up record) covers. */
  private claimedNext: number;
  /** Next offset not yet applied: every offset below it is visible to readers and watchers. */
  frontier: number;
  /** Writes claimed and not yet applied or abandoned. */
  inFlight = 0;
  closed = false;

  constructor(
    private readonly log: ProjectionLog,
    private readonly what: string,
    /** Applies records in `[from, to)` read from the log (no notification: nobody wrote them here). */
    private readonly replay: (from: number, to: number) => Promise<void>,
  ) {
    this.claimedNext = log.tailOffset;
    this.frontier = log.tailOffset;
    this.sequencer = new CommitSequencer(log.tailOffset);
  }

  isStaged(key: string): boolean {
    return this.stagedKeys.has(key);
  }

  checkOpen(): void {
    if (this.closed) throw new ProjectionClosedError(this.what);
  }

  /** Brings the projection up to the log's tail when records were appended behind it. */
  async catchUpIfBehind(): Promise<void> {
    if (this.inFlight === 0 && this.log.tailOffset > this.claimedNext) {
      await this.lock.run(() => this.catchUpLocked());
    }
  }

  /** Runs `fn` under the short lock (nothing slow may run inside). */
  underLock<T>(fn: () => Promise<T> | T): Promise<T> {
    return this.lock.run(fn);
  }

  /**
   * Stages what `prepare` answers (evaluated under the lock; undefined = nothing to write, answer
   * `empty()`), waits for durability and for its turn, then runs `load` (optional, async, inside
   * the turn) and `apply` in offset order. `apply` is synchronous and the frontier moves in the
   * same step, so a watch registering in between cannot see the change twice or miss it.
   */
  async commit<T, L = undefined>(
    prepare: () => Staging | undefined,
    apply: (first: number, staging: Staging, loaded: L | undefined) => T,
    empty: () => T,
    load?: () => Promise<L>,
  ): Promise<T> {
    let claim: Claim | undefined;
    let turn: Turn | undefined;
    let staging: Staging | undefined;
    await this.lock.run(async () => {
      this.checkOpen();
      await this.catchUpLocked();
      staging = prepare();
      if (staging === undefined) return;
      claim = await this.log.claim(staging.payloads);
      turn = this.sequencer.reserve(claim.first, claim.next);
      this.claimedNext = claim.next;
      this.inFlight++;
      for (const k of staging.keys) this.stagedKeys.set(k, (this.stagedKeys.get(k) ?? 0) + 1);
    });
    if (claim === undefined || turn === undefined || staging === undefined) return empty();
    try {
      await claim.durable;
      await turn.wait();
      const loaded = load === undefined ? undefined : await load();
      const result = apply(claim.first, staging, loaded);
      this.frontier = claim.next;
      turn.release();
      return result;
    } catch (err) {
      turn.abandon();
      throw err;
    } finally {
      this.inFlight--;
      for (const k of staging.keys) {
        const n = (this.stagedKeys.get(k) ?? 1) - 1;
        if (n === 0) this.stagedKeys.delete(k);
        else this.stagedKeys.set(k, n);
      }
    }
  }

  private async catchUpLocked(): Promise<void> {
    const tail = this.log.tailOffset;
    if (tail <= this.claimedNext) return;
    const from = this.claimedNext;
    const turn = this.sequencer.reserve(from, tail);
    this.claimedNext = tail;
    try {
      await turn.wait();
      await this.replay(from, tail);
      this.frontier = tail;
      turn.release();
    } catch (err) {
      turn.abandon();
      throw err;
    }
  }

  /** Waits for every claimed write to apply or fail, then refuses new ones. */
  async close(): Promise<void> {
    await this.lock.run(() => {
      this.closed = true;
    });
  }
}
