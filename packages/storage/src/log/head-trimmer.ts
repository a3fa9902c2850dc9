/**
 * Deletions at the head of a SegmentLog: compaction's trims and retention, run one at a time,
 * and the retention timer. A segment is dropped from the log before its files are unlinked
 * (no new read starts in it), oldest first with a directory sync after each, so a power loss
 * leaves a longer log, never a gap. The active segment is never deleted.
 */
import { assert } from '@felix/common';
import type { Io } from '../io/io.js';
import { indexPath, segmentPath } from './layout.js';
import type { LogConfig } from './log-options.js';
import { segmentsToRetire } from './retention.js';
import type { SegmentFiles } from './segment-files.js';

export class HeadTrimmer {
  private chain: Promise<void> = Promise.resolve();
  private retentionRunning: Promise<number> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Offsets at or above this are never deleted (a quorum shard's commit offset); none: no floor. */
  floor: number | undefined;

  constructor(
    private readonly io: Io,
    private readonly dir: string,
    private readonly cfg: LogConfig,
    private readonly files: SegmentFiles,
  ) {}

  /** Deletes whole sealed segments that end at or below `cut`; resolves with how many. */
  trimBelow(cut: number): Promise<number> {
    return this.serialized(async () => {
      const list = this.files.list;
      let n = 0;
      while (n < list.length - 1 && list[n]!.nextOffset <= cut) n++;
      await this.deleteHead(this.belowFloor(n));
      return n;
    });
  }

  /** Deletes what the retention bounds say, at `nowMicros`; a run in progress is joined. */
  enforceRetention(nowMicros: number): Promise<number> {
    if (this.retentionRunning !== undefined) return this.retentionRunning;
    const run = this.serialized(async () => {
      const n = this.belowFloor(segmentsToRetire(this.files.list, this.cfg.retention, nowMicros));
      await this.deleteHead(n);
      return n;
    }).finally(() => {
      this.retentionRunning = undefined;
    });
    this.retentionRunning = run;
    return run;
  }

  /** Runs `enforce` every check interval while the log is open, if any bound is set. */
  startTimer(enforce: () => Promise<number>): void {
    const r = this.cfg.retention;
    if (r.maxBytes === undefined && r.maxAgeMs === undefined) return;
    this.timer = setInterval(() => {
      // A failed pass is retried at the next tick; a closed log stops the timer.
      enforce().catch(() => undefined);
    }, this.cfg.retentionCheckMs);
    this.timer.unref();
  }

  /** Stops the timer and waits for the deletion in progress, if any. */
  stop(): Promise<void> {
    clearInterval(this.timer);
    return this.chain;
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn);
    // The chain only orders deletions; each caller sees its own run's failure.
    this.chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Of the `n` oldest segments, how many end at or below the floor (only those may go). */
  private belowFloor(n: number): number {
    const floor = this.floor;
    if (floor === undefined) return n;
    const list = this.files.list;
    let k = 0;
    while (k < n && list[k]!.nextOffset <= floor) k++;
    return k;
  }

  private async deleteHead(n: number): Promise<void> {
    for (let k = 0; k < n; k++) {
      assert(this.files.list.length > 1, 'retention never deletes the active segment');
      // Drop it from the log first so no new read starts in it, then unlink oldest-first
      // with a directory sync after each, so a power loss leaves a longer log, never a gap.
      const seg = this.files.dropHead();
      await this.io.unlink(segmentPath(this.dir, seg.id));
      // An index without its segment is never read (recovery lists segments): a leftover is harmless.
      await this.io.unlink(indexPath(this.dir, seg.id)).catch(() => undefined);
      await this.io.syncDir(this.dir);
      this.files.closeIfUnread(seg);
    }
  }
}
