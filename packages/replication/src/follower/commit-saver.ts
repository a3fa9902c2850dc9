/**
 * A follower's saves of the commit offset its leader carries (kind 26) into the shard's
 * `replica` file, always off the answer path: at most once per interval, in the background
 * (REPLICA_COMMIT_SAVE_ON_COMMIT_INTERVAL_MS when the stream fsyncs on commit,
 * REPLICA_COMMIT_SAVE_INTERVAL_MS otherwise), and on close. The offset on disk only bounds from
 * below where this replica may truncate and what a new leader's fence hears was committed, so a
 * crash that leaves it one interval stale loses nothing: the records themselves were held (synced
 * under `onCommit`, written under `periodic`) before the answer, and any leader of a newer generation holds every committed record
 * (docs/replication.md, "The follower's commit offset"). The generation is not saved here: a
 * raised generation is saved before the batch carrying it is stored.
 */
import type { ReplicaFile } from '@felix/storage';
import {
  REPLICA_COMMIT_SAVE_INTERVAL_MS,
  REPLICA_COMMIT_SAVE_ON_COMMIT_INTERVAL_MS,
} from '../limits.js';

export interface CommitSaverOptions {
  /** Between saves of a stream that fsyncs on commit. */
  onCommitIntervalMs?: number;
  /** Between saves otherwise. */
  intervalMs?: number;
  now?: () => number;
}

export class CommitSaver {
  /** The highest offset offered (what the next save writes). */
  private wanted: number;
  private lastSaveMs = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer fires (ms, `now`'s clock). */
  private timerAt = Number.POSITIVE_INFINITY;
  private closed = false;
  /** A background save that failed: the file is then unknown, and the next offer says so. */
  private failure: unknown;
  private readonly onCommitIntervalMs: number;
  private readonly intervalMs: number;
  private readonly now: () => number;

  constructor(
    private readonly replica: ReplicaFile,
    opts: CommitSaverOptions = {},
  ) {
    this.wanted = replica.state.commitOffset;
    this.onCommitIntervalMs = opts.onCommitIntervalMs ?? REPLICA_COMMIT_SAVE_ON_COMMIT_INTERVAL_MS;
    this.intervalMs = opts.intervalMs ?? REPLICA_COMMIT_SAVE_INTERVAL_MS;
    this.now = opts.now ?? (() => Date.now());
  }

  /** The highest commit offset offered so far (saved or not yet). */
  get offered(): number {
    return this.wanted;
  }

  /** The commit offset saved so far. */
  get saved(): number {
    return this.replica.state.commitOffset;
  }

  /**
   * Takes `offset` (never moving back) and schedules its save; never waits for it. `onCommit`:
   * the stream fsyncs on commit (the shorter interval). Throws when an earlier save failed.
   */
  offer(offset: number, onCommit: boolean): void {
    if (this.failure !== undefined) throw this.failure;
    if (offset > this.wanted) this.wanted = offset;
    if (this.wanted <= this.saved || this.closed) return;
    const interval = onCommit ? this.onCommitIntervalMs : this.intervalMs;
    const wait = this.lastSaveMs + interval - this.now();
    if (wait <= 0) {
      this.disarm();
      this.saveInBackground();
      return;
    }
    // An armed timer due later (the other interval) is brought forward.
    if (this.timer !== undefined && this.timerAt <= this.now() + wait) return;
    this.disarm();
    this.timerAt = this.now() + wait;
    this.timer = setTimeout(() => this.saveInBackground(), wait);
  }

  /** Saves what is wanted and stops the timer (the shard's log is closing). */
  async close(): Promise<void> {
    this.closed = true;
    this.disarm();
    if (this.wanted > this.saved) await this.save();
  }

  private saveInBackground(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    this.save().catch((err: unknown) => {
      // Reported by the next offer: the follower answers StorageFailed and reopens the shard.
      this.failure = err;
    });
  }

  private save(): Promise<void> {
    this.lastSaveMs = this.now();
    return this.replica.advanceCommit(this.wanted);
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }
}
