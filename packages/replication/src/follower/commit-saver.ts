/**
 * A follower's saves of the commit offset its leader carries (kind 26) into the shard's
 * `replica` file. On commit (`sync`) the offset is saved before the follower answers, so what it
 * acked as committed survives a crash; otherwise saves run at most once per interval, in the
 * background, and the file may read back up to one interval stale after a crash (the
 * reference's trade: the fsync on every batch is what periodic streams decline to pay).
 */
import type { ReplicaFile } from '@felix/storage';
import { REPLICA_COMMIT_SAVE_INTERVAL_MS } from '../limits.js';

export class CommitSaver {
  /** The highest offset offered (what the next save writes). */
  private wanted: number;
  private lastSaveMs = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(
    private readonly replica: ReplicaFile,
    private readonly intervalMs = REPLICA_COMMIT_SAVE_INTERVAL_MS,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.wanted = replica.state.commitOffset;
  }

  /** The highest commit offset offered so far (saved or not yet). */
  get offered(): number {
    return this.wanted;
  }

  /** The commit offset saved so far. */
  get saved(): number {
    return this.replica.state.commitOffset;
  }

  /** Takes `offset` (never moving back); with `sync`, resolves once it is saved. */
  async offer(offset: number, sync: boolean): Promise<void> {
    if (offset > this.wanted) this.wanted = offset;
    if (this.wanted <= this.saved || this.closed) return;
    if (sync) {
      this.disarm();
      await this.save();
      return;
    }
    const wait = this.lastSaveMs + this.intervalMs - this.now();
    if (wait <= 0) this.saveInBackground();
    else this.timer ??= setTimeout(() => this.saveInBackground(), wait);
  }

  /** Saves what is wanted and stops the timer (the shard's log is closing). */
  async close(): Promise<void> {
    this.closed = true;
    this.disarm();
    if (this.wanted > this.saved) await this.save();
  }

  private saveInBackground(): void {
    this.timer = undefined;
    this.save().catch(() => {
      // A failed save fails the replica file for good: the next batch's generation check or
      // synced save reports it to the leader as StorageFailed.
    });
  }

  private save(): Promise<void> {
    this.lastSaveMs = this.now();
    return this.replica.advanceCommit(this.wanted);
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
