/**
 * The write path every projection shares, shaped like a stream publish. Claiming offsets and a
 * commit turn is one synchronous step (in JavaScript the synchronous section is the short lock:
 * no other claim can interleave); the durable half (the fsync) is awaited outside any lock so
 * concurrent writers share one flush; the apply half (index/fold update, watcher notification)
 * runs strictly in offset order through the turn. A claimed write is "staged" until its turn
 * applies it: invisible to readers and watchers, and compaction skips its key.
 *
 * Records appended behind the projection (replication writes straight to the log) are applied
 * in offset order: by the next write before its own apply, and by readers whenever nothing of
 * ours is in flight.
 *
 * With a commit gate (a replicated `quorum` cache or counter shard) a durable write also waits
 * for the gate before its turn, so it is applied (readers and watchers see it) and answered only
 * once the commit mark covers it; later writes queue behind it on the turn.
 */
import { assert } from '@felix/common';
import type { Claim, ProjectionLog } from './log-port.js';
import { ProjectionClosedError, ProjectionLogFailedError } from '../errors.js';
import { ShortLock } from './short-lock.js';

export interface Staging {
  keys: string[];
  payloads: Uint8Array[];
}

/**
 * What a durable write waits for before it is applied: undefined when nothing (not a quorum
 * shard), else a promise resolved once the commit mark reaches `next` (rejected when the shard
 * stops being served: the write is then abandoned, neither applied nor acked).
 */
export type CommitGate = (next: number) => Promise<void> | undefined;

export class ProjectionWriter {
  private readonly applyLock = new ShortLock();
  private readonly stagedKeys = new Map<string, number>();
  /** Next offset not yet applied: every offset below it is visible to readers and watchers. */
  frontier: number;
  /** Writes claimed and not yet applied or failed. */
  inFlight = 0;
  /** A reader is applying records appended behind us; writes must queue on the apply lock. */
  private catchingUp = false;
  private idleWaiters: Array<() => void> = [];
  closed = false;

  constructor(
    private readonly log: ProjectionLog,
    private readonly what: string,
    /** Applies records in `[from, to)` from the log, without notifying; answers the offset reached. */
    private readonly replay: (from: number, to: number) => Promise<number>,
    private readonly commitGate?: CommitGate,
  ) {
    this.frontier = log.tailOffset;
  }

  isStaged(key: string): boolean {
    return this.stagedKeys.has(key);
  }

  checkOpen(): void {
    if (this.closed) throw new ProjectionClosedError(this.what);
  }

  /** True when records were appended behind the projection and nothing of ours is in flight. */
  isBehind(): boolean {
    return this.inFlight === 0 && this.log.tailOffset > this.frontier;
  }

  /** Brings the projection up to the log's tail when records were appended behind it. */
  async catchUpIfBehind(): Promise<void> {
    if (!this.isBehind()) return;
    await this.applyLock.run(async () => {
      if (this.inFlight > 0) return;
      const tail = this.log.tailOffset;
      if (tail <= this.frontier) return;
      this.catchingUp = true;
      try {
        this.frontier = await this.replay(this.frontier, tail);
      } finally {
        this.catchingUp = false;
      }
    });
  }

  /**
   * Stages what `prepare` answers (undefined = nothing to write: answers `empty()`); `prepare`
   * and the claim run in one synchronous step. Then waits for durability and the turn, and runs
   * `load` (optional, async, inside the turn) and `apply` in offset order. `apply` is synchronous
   * and the frontier moves in the same step, so a watch registering in between neither misses
   * the change nor sees it twice.
   */
  async commit<T, L = undefined>(
    prepare: () => Staging | undefined,
    apply: (first: number, staging: Staging, loaded: L | undefined) => T,
    empty: () => T,
    load?: () => Promise<L>,
  ): Promise<T> {
    this.checkOpen();
    const staging = prepare();
    if (staging === undefined) return empty();
    let claimed: Promise<Claim>;
    try {
      claimed = this.log.claim(staging.payloads);
    } catch (err) {
      return Promise.reject(err);
    }
    this.inFlight++;
    for (const k of staging.keys) this.stagedKeys.set(k, (this.stagedKeys.get(k) ?? 0) + 1);
    try {
      const claim = await claimed;
      try {
        await claim.durable;
        const committed = this.commitGate?.(claim.next);
        if (committed !== undefined) await committed;
        await claim.turn.wait();
        // Fast path: nothing to catch up, nothing to load, no reader catch-up running.
        if (!this.catchingUp && load === undefined && this.frontier === claim.first) {
          const value = apply(claim.first, staging, undefined);
          this.frontier = claim.next;
          claim.turn.release();
          return value;
        }
        const result = await this.applyLock.run(async () => {
          // Records appended behind us sit below our first offset: apply them first, in order.
          if (this.frontier < claim.first)
            this.frontier = await this.replay(this.frontier, claim.first);
          if (this.frontier !== claim.first)
            throw new ProjectionLogFailedError(this.what, claim.first);
          const loaded = load === undefined ? undefined : await load();
          const value = apply(claim.first, staging, loaded);
          this.frontier = claim.next;
          return value;
        });
        claim.turn.release();
        return result;
      } catch (err) {
        claim.turn.abandon();
        throw err;
      }
    } finally {
      this.inFlight--;
      for (const k of staging.keys) {
        const n = (this.stagedKeys.get(k) ?? 1) - 1;
        if (n === 0) this.stagedKeys.delete(k);
        else this.stagedKeys.set(k, n);
      }
      this.wakeIfIdle();
    }
  }

  /** Refuses new writes and waits for every claimed one to apply or fail. */
  async close(): Promise<void> {
    this.closed = true;
    await this.idle();
  }

  private idle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private wakeIfIdle(): void {
    if (this.inFlight !== 0) return;
    const ws = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of ws) w();
    assert(this.inFlight >= 0, 'the in-flight count never goes negative');
  }
}
