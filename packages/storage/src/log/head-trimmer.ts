/**
 * Deletions at the head of a SegmentLog: compaction's trims and retention, run one at a time,
 * and the retention timer. A segment is dropped from the log before its files are unlinked
 * (no new read starts in it), oldest first with a directory sync after each, so a power loss
 * leaves a longer log, never a gap. A segment whose unlink fails goes back to the head and the
 * pass stops there (the next retries it first): a failed unlink never leaves a gap either. The
 * active segment is never deleted.
 *
 * A floor holds a trim back without forgetting it: the highest cut asked is kept, and raising
 * (or removing) the floor deletes what it held of that cut, with no new compaction pass. That is
 * safe because a cut is asked only once everything below it is superseded further up the log,
 * and later writes never make an older record current again.
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
  /** Offsets at or above this are never deleted; none: no floor. */
  private floorAt: number | undefined;
  /** The highest cut `trimBelow` was asked for (undefined: none since the log opened). */
  private cut: number | undefined;
  /** A re-run of the held cut is queued and has not started: further raises join it. */
  private reapplyQueued = false;

  constructor(
    private readonly io: Io,
    private readonly dir: string,
    private readonly cfg: LogConfig,
    private readonly files: SegmentFiles,
  ) {}

  /** Deletes whole sealed segments that end at or below `cut`; resolves with how many. */
  trimBelow(cut: number): Promise<number> {
    this.cut = Math.max(this.cut ?? cut, cut);
    return this.serialized(() => this.deleteBelow(cut));
  }

  /**
   * Sets the floor. When it rises (or goes) while segments below the highest cut asked wait on
   * it, they are deleted now; resolves with how many (0 when nothing was held).
   */
  setFloor(offset: number | undefined): Promise<number> {
    const old = this.floorAt;
    this.floorAt = offset;
    const raised = old !== undefined && (offset === undefined || offset > old);
    if (!raised || !this.trimWaiting || this.reapplyQueued) return Promise.resolve(0);
    this.reapplyQueued = true;
    return this.serialized(() => {
      // From here a raise must queue its own run: this one has read the floor.
      this.reapplyQueued = false;
      return this.deleteBelow(this.cut!);
    });
  }

  /** True while the log holds a sealed segment ending at or below the highest cut asked: a trim
   *  the floor held back (or one in progress). */
  get trimWaiting(): boolean {
    const list = this.files.list;
    return this.cut !== undefined && list.length > 1 && list[0]!.nextOffset <= this.cut;
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

  /** Replaces the retention bounds of an open log and restarts the timer by them. */
  setRetention(
    next: Pick<LogConfig, 'retention' | 'retentionCheckMs'>,
    enforce: () => Promise<number>,
  ): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.cfg.retention = next.retention;
    this.cfg.retentionCheckMs = next.retentionCheckMs;
    this.startTimer(enforce);
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

  /** Deletes the sealed segments ending at or below `cut` that the floor lets go; returns how
   *  many ended below the cut (deleted or held). */
  private async deleteBelow(cut: number): Promise<number> {
    const list = this.files.list;
    let n = 0;
    while (n < list.length - 1 && list[n]!.nextOffset <= cut) n++;
    await this.deleteHead(this.belowFloor(n));
    return n;
  }

  /** Of the `n` oldest segments, how many end at or below the floor (only those may go). */
  private belowFloor(n: number): number {
    const floor = this.floorAt;
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
      try {
        await this.unlinkSegment(seg.id);
      } catch (err) {
        // The file is still there: it stays the log's head, so the files on disk remain one
        // contiguous run, and the next pass retries it before anything newer goes.
        this.files.restoreHead(seg);
        throw err;
      }
      // An index without its segment is never read (recovery lists segments): a leftover is harmless.
      await this.io.unlink(indexPath(this.dir, seg.id)).catch(() => undefined);
      await this.io.syncDir(this.dir);
      this.files.closeIfUnread(seg);
    }
  }

  /** Unlinks a segment's file; a failed unlink that removed it anyway counts as done. */
  private async unlinkSegment(id: number): Promise<void> {
    const path = segmentPath(this.dir, id);
    try {
      await this.io.unlink(path);
    } catch (err) {
      // Not knowing whether it is gone, assume it is not: a kept head is safe, a gap is not.
      if (await this.io.exists(path).catch(() => true)) throw err;
    }
  }
}
