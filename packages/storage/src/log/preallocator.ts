/**
 * Preallocation of the active segment: once it takes writes, zeros are written and synced
 * ahead of its data, off the write path, so a group write overwrites bytes the file already
 * has and its fdatasync commits no size change. A write never reaches into a range being
 * preallocated (the writer asks `blocks` first); rollover and close cut the zeros off
 * (`cut`), recovery cuts what a crash left.
 */
import { PREALLOCATE_GAP_BYTES } from '../limits.js';
import { SEGMENT_HEADER_BYTES } from '../segment/format.js';
import type { Segment } from './segment-files.js';

export class Preallocator {
  /** Active-segment bytes known to be synced zeros or data (writes below it grow nothing). */
  private allocated: number;
  /** Highest byte the active file may hold: past `active.bytes` it is preallocated zeros. */
  private extent: number;
  /** The preallocation step in flight; writes stay below `fillFrom` while it runs. */
  private filling: Promise<void> | undefined;
  /** Where the step in flight starts writing zeros. */
  private fillFrom = 0;
  /** Set while the step in flight syncs its zeros. */
  private syncingZeros = false;
  /** Set when zeros found no space: this segment grows by its writes alone. */
  private off = false;

  constructor(
    private readonly stepBytes: number,
    private readonly segmentBytes: number,
    activeBytes: number,
    /** A step whose fdatasync failed: the log treats it as a failed flush. */
    private readonly syncFailed: (err: unknown) => void,
  ) {
    this.allocated = activeBytes;
    this.extent = activeBytes;
  }

  /** The step in flight, if any (awaiting it waits for it to settle; it never rejects). */
  get inFlight(): Promise<void> | undefined {
    return this.filling;
  }

  /**
   * The step in flight once its fdatasync has started (it settles after a failure was passed
   * to `syncFailed`; it never rejects). A flush's sync that ends beside it may have had its
   * write-back error taken by this one: the flush counts only once this one has succeeded.
   */
  get syncing(): Promise<void> | undefined {
    return this.syncingZeros ? this.filling : undefined;
  }

  /** Whether data ending at `end` would reach into the range the step in flight is zeroing. */
  blocks(end: number): boolean {
    return this.filling !== undefined && end > this.fillFrom;
  }

  /** Data now reaches `end` (a write may go past the zeros, growing the file). */
  wrote(end: number): void {
    if (end > this.extent) this.extent = end;
  }

  /**
   * Starts the next preallocation step when less than half a step of zeros is left ahead of
   * the active segment's data. Never past the rollover size; an idle log never starts one.
   */
  ahead(seg: Segment): void {
    const step = this.stepBytes;
    if (step === 0 || this.filling !== undefined || this.off) return;
    if (this.allocated - seg.bytes >= step / 2) return;
    // Behind the data, start past a gap the writes can keep using while the step runs (a
    // quarter of what is left of a small segment at most).
    const gap = Math.min(PREALLOCATE_GAP_BYTES, Math.floor((this.segmentBytes - seg.bytes) / 4));
    const from = this.allocated >= seg.bytes ? this.allocated : seg.bytes + gap;
    const to = Math.min(from + step, this.segmentBytes);
    if (to <= from) return;
    this.fillFrom = from;
    this.filling = this.fill(seg, from, to);
  }

  private async fill(seg: Segment, from: number, to: number): Promise<void> {
    if (to > this.extent) this.extent = to;
    try {
      if (!(await seg.file!.preallocate(from, to - from))) {
        this.off = true;
        return;
      }
      this.syncingZeros = true;
      await seg.file!.datasync();
      this.allocated = to;
    } catch (err) {
      // Its fdatasync may have consumed a write-back error of our data, which the next flush
      // would then not report: treat it as a failed flush.
      this.syncFailed(err);
    } finally {
      this.syncingZeros = false;
      this.filling = undefined;
    }
  }

  /** Waits for a preallocation step, then cuts any zeros past the active segment's data. */
  async cut(seg: Segment): Promise<void> {
    await this.filling;
    if (this.extent > seg.bytes) {
      await seg.file!.truncate(seg.bytes);
      this.extent = seg.bytes;
      this.allocated = seg.bytes;
    }
  }

  /**
   * A write at `position` failed: once no step is in flight, cut the file back to it (which
   * throws when the truncation fails; the writer then refuses writes until reopen).
   */
  async truncateTo(seg: Segment, position: number): Promise<void> {
    await this.filling;
    await seg.file!.truncate(position);
    this.allocated = Math.min(this.allocated, position);
    this.extent = position;
  }

  /** A new active segment: nothing past its header, and preallocation may run again. */
  reset(): void {
    this.allocated = SEGMENT_HEADER_BYTES;
    this.extent = SEGMENT_HEADER_BYTES;
    this.off = false;
  }
}
