/**
 * The writer of a SegmentLog: the append queue, the single write loop, rollover and the flush
 * step the group commit runs.
 *
 * - Appends queue in call order; one writer loop takes the queue, assigns offsets, encodes
 *   every queued batch (up to a bound) into one buffer and issues one positioned write. A
 *   batch never splits across segments; rollover is decided before the write.
 * - A failed write truncates back to the last good byte and consumes no offsets; the batches
 *   queued behind it, and any queued before the event loop's next turn, fail with it (they
 *   were made after it). If that truncation fails, writes stay refused until reopen. A failed fdatasync (the group commit's,
 *   a seal's or a preallocation step's) poisons the log: the loop then rejects what is queued.
 * - Every staged batch reserves its range in the log's CommitSequencer as it is written.
 * - Sealing syncs the segment's data before its index, and the durable bound advances past
 *   the sealed segment only once its data is synced.
 */
import { assert } from '@felix/common';
import { CommitSequencer, type Turn } from '../commit-sequencer.js';
import {
  AppendQueueFullError,
  EmptyBatchError,
  RecordTooLargeError,
  WriteFailedError,
  WritesRefusedError,
} from '../errors.js';
import { writeFully, writeFullyNow } from '../io/io.js';
import {
  APPEND_QUEUE_BYTES_MAX,
  FLUSH_WAIT_QUEUED_BYTES_MAX,
  INDEX_ENTRIES_FLUSH_BATCH,
  RECORD_PAYLOAD_BYTES_MAX,
  WRITE_COALESCE_BYTES_MAX,
  WRITE_INLINE_BYTES_MAX,
  WRITE_INLINE_UNSYNCED_BYTES_MAX,
} from '../limits.js';
import {
  FLAG_GENERATION_START,
  RECORD_HEADER_BYTES,
  SEGMENT_HEADER_BYTES,
  SEGMENT_VERSION_WRITTEN,
} from '../segment/format.js';
import { type Encoded, GroupEncoder } from './group-encoder.js';
import { type LogConfig, nowMicros } from './log-options.js';
import type { MarkWriter } from './mark-writer.js';
import { Preallocator } from './preallocator.js';
import type { Segment, SegmentFiles } from './segment-files.js';
import type { GroupCommit } from './sync.js';

/** A written batch: its offsets and its turn in the log's CommitSequencer. */
export interface Staged {
  first: number;
  next: number;
  /** Release after applying (or abandon); later turns wait for it. */
  turn: Turn;
}

type Written = Staged | { first: number; next: number } | number;

/** One queued batch, or a barrier (flush or seal). */
export interface Pending {
  /** null for a barrier (flush or seal). */
  payloads: Uint8Array[] | null;
  /** A barrier that seals the active segment when it is reached. */
  seal?: boolean;
  /** Reserve a CommitSequencer turn for the batch (stage) or not (append). */
  wantsTurn?: boolean;
  /** Each record's flag bits (a generation-start mark), when any is set. */
  flags?: readonly number[];
  bytes: number;
  timestampMicros: number;
  resolve: (s: Written) => void;
  reject: (err: Error) => void;
}

export interface WriterParts {
  dir: string;
  cfg: LogConfig;
  files: SegmentFiles;
  marks: MarkWriter;
  commit: GroupCommit;
  /** Append time of the newest batch in the log. */
  newestStampMicros: number;
  /** A group was written (before any of its batches is answered): offsets from `first`. */
  wrote?: (first: number, group: readonly Pending[]) => void;
}

export class LogWriter {
  private readonly dir: string;
  private readonly cfg: LogConfig;
  private readonly files: SegmentFiles;
  private readonly marks: MarkWriter;
  private readonly commit: GroupCommit;
  private readonly sequencer: CommitSequencer;
  private readonly encoder = new GroupEncoder();
  private readonly wrote: WriterParts['wrote'];
  readonly prealloc: Preallocator;

  private queue: Pending[] = [];
  private queueHead = 0;
  private queuedBytes = 0;
  private writing = false;
  private idleWaiters: Array<() => void> = [];
  private claimed: number;
  private writtenBound: number;
  private refusedBy: unknown;
  /** The active segment once a roll sealed it and its successor is not created yet. */
  private sealedFor: Segment | undefined;
  /** A write failed in this turn of the event loop: batches queued now fail with it. */
  private recentFailure: WriteFailedError | undefined;
  private closing = false;
  private periodicTimer: NodeJS.Timeout | undefined;
  /** Append time of the newest batch queued: no later batch is stamped below it. */
  private newestStamp: number;
  /** Bytes written since open, and how many of them a completed sync covered: their
   *  difference is the dirty data a `periodic` log may still add to on the calling thread. */
  private writtenBytes = 0;
  private syncedBytes = 0;
  /** Where the active segment's data is known to be on disk: the last sync that succeeded (at
   *  open, a flush, a roll). A failed sync cuts the file back here (`dropUnsynced`). */
  private syncedAt: { seg: Segment; bytes: number };
  /** The cut a poison started; close waits for it. */
  private dropping: Promise<void> | undefined;
  /** The flush's and the roll's syncs of the active file, one at a time (oneSyncAtATime). */
  private syncTail: Promise<unknown> = Promise.resolve();

  constructor(parts: WriterParts) {
    this.dir = parts.dir;
    this.cfg = parts.cfg;
    this.files = parts.files;
    this.marks = parts.marks;
    this.commit = parts.commit;
    this.newestStamp = parts.newestStampMicros;
    this.wrote = parts.wrote;
    const active = parts.files.active;
    // The open synced the active segment (segment-files.ts), or created it synced.
    this.syncedAt = { seg: active, bytes: active.bytes };
    this.claimed = active.nextOffset;
    this.writtenBound = active.nextOffset;
    this.sequencer = new CommitSequencer(active.nextOffset);
    this.prealloc = new Preallocator(
      this.cfg.preallocateBytes,
      this.cfg.segmentBytes,
      active.bytes,
      (err) => this.commit.fail(err),
    );
  }

  /** Next offset to be assigned (includes a write in flight). */
  get tail(): number {
    return this.claimed;
  }

  /** Every offset below this is written (in the page cache at least). */
  get written(): number {
    return this.writtenBound;
  }

  get newestStampMicros(): number {
    return this.newestStamp;
  }

  /** Throws when no batch may be queued: poisoned, or writes refused after a failed repair. */
  checkWritable(): void {
    const poison = this.commit.poisoned;
    if (poison !== undefined) throw poison;
    if (this.refusedBy !== undefined)
      throw new WritesRefusedError(this.dir, { cause: this.refusedBy });
  }

  /** Queues one batch; resolves as `append` or `stage` promise (see SegmentLog). */
  enqueue(
    payloads: Uint8Array[],
    timestampMicros: number | undefined,
    wantsTurn: boolean,
    flags?: readonly number[],
  ): Promise<Staged | { first: number; next: number }> {
    if (payloads.length === 0) return Promise.reject(new EmptyBatchError());
    assert(flags === undefined || flags.length === payloads.length, 'one flag word per record');
    let bytes = 0;
    for (const p of payloads) {
      if (p.length > RECORD_PAYLOAD_BYTES_MAX) {
        return Promise.reject(new RecordTooLargeError(p.length, RECORD_PAYLOAD_BYTES_MAX));
      }
      bytes += RECORD_HEADER_BYTES + p.length;
    }
    if (bytes > APPEND_QUEUE_BYTES_MAX) {
      return Promise.reject(new RecordTooLargeError(bytes, APPEND_QUEUE_BYTES_MAX));
    }
    if (this.recentFailure !== undefined) return Promise.reject(this.recentFailure);
    if (this.queuedBytes + bytes > APPEND_QUEUE_BYTES_MAX) {
      return Promise.reject(new AppendQueueFullError(this.queuedBytes, APPEND_QUEUE_BYTES_MAX));
    }
    // Times never go backwards within a log (a clock stepped back stamps the newest time again),
    // so offsetForTime can binary-search them.
    const ts = Math.max(timestampMicros ?? nowMicros(), this.newestStamp);
    this.newestStamp = ts;
    return new Promise<Staged | { first: number; next: number }>((resolve, reject) => {
      this.queue.push({
        payloads,
        wantsTurn,
        ...(flags === undefined ? {} : { flags }),
        bytes,
        timestampMicros: ts,
        resolve: resolve as (s: Written) => void,
        reject,
      });
      this.queuedBytes += bytes;
      this.kickWriter();
    });
  }

  /** Resolves with the written tail once every batch queued before it is written. */
  barrier(seal = false): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.queue.push({
        payloads: null,
        seal,
        bytes: 0,
        timestampMicros: 0,
        resolve: resolve as (s: Written) => void,
        reject,
      });
      this.kickWriter();
    });
  }

  /** The start of close: no preallocation step starts from now on; the periodic flush stops. */
  beginClose(): void {
    this.closing = true;
    clearTimeout(this.periodicTimer);
  }

  /** Resolves once the queue is drained and no write is in flight. */
  idle(): Promise<void> {
    if (!this.writing && this.queueHead === this.queue.length) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * The end of close, once the queue is drained: cuts the preallocated zeros, makes everything
   * written durable, writes the index entries and the durable mark and syncs the mark. Resolves
   * with what failed (the poison first), or undefined; no step is in flight once it resolves.
   */
  async finishForClose(): Promise<unknown> {
    await this.dropping;
    let failure: unknown = this.commit.poisoned;
    if (failure === undefined) {
      // Also after refused writes: what was written before them is still synced and marked;
      // partial bytes past the mark are cut by the next open.
      try {
        // Cut the preallocated zeros first, so the final sync (when there is one) covers it.
        // A cut that fails, or that a power loss undoes, leaves a zero tail the next open
        // cuts. After refused writes the file is left as it is, for recovery to repair.
        if (this.refusedBy === undefined) {
          // A failed cut leaves zeros the next open cuts (see above).
          await this.prealloc.cut(this.files.active).catch(() => undefined);
        }
        await this.commit.waitFor(this.writtenBound);
        const active = this.files.active;
        await this.files.writeIndexEntries(active);
        await this.marks.write(active.id, active.bytes);
        await this.marks.sync();
      } catch (err) {
        failure = this.commit.poisoned ?? err;
      }
    }
    await this.prealloc.inFlight;
    return failure;
  }

  private kickWriter(): void {
    if (this.writing) return;
    this.writing = true;
    // Start once this turn's callbacks and promise reactions have run: appends made in this
    // turn (say, every writer woken by one flush) then go out in one write instead of one
    // alone and the rest after. Not a later phase of the event loop (setImmediate): that waits
    // behind whatever else the loop has to do before the write and its sync can start.
    process.nextTick(this.startWriteLoop);
  }

  private readonly startWriteLoop = (): void => void this.writeLoop();

  private async writeLoop(): Promise<void> {
    try {
      while (this.queueHead < this.queue.length) {
        const failure = this.commit.poisoned ?? this.refusedError();
        if (failure !== undefined) {
          this.rejectQueued(failure);
          break;
        }
        const head = this.queue[this.queueHead]!;
        if (head.payloads === null) {
          this.queueHead++;
          await this.passBarrier(head);
          continue;
        }
        const active = this.files.active;
        const needed = versionFor(head);
        if (needed > active.version) {
          // Its segment's version may not hold this record kind: a newer segment takes it.
          try {
            if (active.bytes > SEGMENT_HEADER_BYTES) await this.roll(needed);
            else {
              await this.prealloc.inFlight;
              await this.files.raiseEmptyActive(needed);
            }
            this.prealloc.reset();
          } catch (err) {
            this.rollFailed(err);
          }
          continue;
        }
        // A segment a failed roll already sealed takes nothing more (its index is closed and
        // the next roll does not sync it again): the next segment is created first.
        if (
          this.sealedFor === active ||
          (active.bytes > SEGMENT_HEADER_BYTES && active.bytes + head.bytes > this.cfg.segmentBytes)
        ) {
          try {
            await this.roll();
          } catch (err) {
            this.rollFailed(err);
          }
          continue;
        }
        if (this.prealloc.blocks(active.bytes + head.bytes)) {
          // The step in flight is writing zeros where this batch would go: let it finish.
          await this.prealloc.inFlight;
          continue;
        }
        await this.writeGroup(active);
      }
    } finally {
      this.compactQueue();
      this.writing = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** A barrier reached the head of the queue: seal if it asks to, then resolve it. */
  private async passBarrier(head: Pending): Promise<void> {
    if (head.seal === true && this.files.active.bytes > SEGMENT_HEADER_BYTES) {
      try {
        await this.roll();
      } catch (err) {
        if (err instanceof WriteFailedError && this.commit.poisoned === undefined) {
          head.reject(err);
          return;
        }
        this.refusedBy ??= err;
        head.reject(this.commit.poisoned ?? this.refusedError()!);
        return;
      }
    }
    head.resolve(this.writtenBound);
  }

  /** A roll that failed: a segment creation undone (WriteFailedError) fails the batch at the head
   *  and those behind it, as a failed write does; anything else refuses appends until reopen. */
  private rollFailed(err: unknown): void {
    if (!(err instanceof WriteFailedError) || this.commit.poisoned !== undefined) {
      this.refusedBy ??= err;
      return;
    }
    this.failBatchesBehind(err);
  }

  private refusedError(): Error | undefined {
    return this.refusedBy === undefined
      ? undefined
      : new WritesRefusedError(this.dir, { cause: this.refusedBy });
  }

  private rejectQueued(err: Error): void {
    while (this.queueHead < this.queue.length) {
      const p = this.queue[this.queueHead++]!;
      this.queuedBytes -= p.bytes;
      p.reject(err);
    }
  }

  /**
   * A failed write fails every batch queued behind it, and every batch queued before the event
   * loop's next turn: they were made after it, and a layer above may count on it landing first
   * (a counter's overflow check and checkpoint count its staged deltas, and unstage a failed
   * one only in the promise reactions its rejection starts). Barriers stay, in order.
   */
  private failBatchesBehind(failure: WriteFailedError): void {
    const kept: Pending[] = [];
    for (let i = this.queueHead; i < this.queue.length; i++) {
      const p = this.queue[i]!;
      if (p.payloads === null) kept.push(p);
      else {
        this.queuedBytes -= p.bytes;
        p.reject(failure);
      }
    }
    this.queue = kept;
    this.queueHead = 0;
    this.recentFailure = failure;
    setImmediate(() => {
      if (this.recentFailure === failure) this.recentFailure = undefined;
    });
  }

  private compactQueue(): void {
    if (this.queueHead === this.queue.length) {
      this.queue = [];
      this.queueHead = 0;
    } else if (this.queueHead > 1024) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
  }

  /** Takes queued batches that fit one write and this segment, encodes them, writes once. */
  private async writeGroup(active: Segment): Promise<void> {
    const { group, total } = this.takeGroup(active);
    const first = this.claimed;
    const basePos = active.bytes;
    const encoded = this.encoder.encode(group, total, {
      segment: active,
      first,
      indexSpacingBytes: this.cfg.indexSpacingBytes,
    });
    this.claimed = encoded.next;
    if (!(await this.writeEncoded(active, group, encoded, first, basePos))) return;
    this.publish(active, group, encoded, first, basePos);
    if (this.files.indexEntriesPending >= INDEX_ENTRIES_FLUSH_BATCH) {
      await this.files.writeIndexEntries(active);
    }
    if (this.cfg.fsync === 'periodic') this.armPeriodicFlush();
    if (!this.closing && this.commit.poisoned === undefined && this.refusedBy === undefined) {
      this.prealloc.ahead(active);
    }
  }

  /** Dequeues the batches of one write: up to the coalescing bound, this segment's room, and
   * the range a preallocation step in flight leaves free (the first batch always). */
  private takeGroup(active: Segment): { group: Pending[]; total: number } {
    const startIdx = this.queueHead;
    let endIdx = startIdx;
    let total = 0;
    while (endIdx < this.queue.length) {
      const p = this.queue[endIdx]!;
      if (p.payloads === null) break;
      const fitsWrite = total + p.bytes <= WRITE_COALESCE_BYTES_MAX;
      const fitsSegment = active.bytes + total + p.bytes <= this.cfg.segmentBytes;
      // Never into the range a preallocation step in flight is zeroing.
      const clearOfFill = !this.prealloc.blocks(active.bytes + total + p.bytes);
      const fitsVersion = versionFor(p) <= active.version;
      if (endIdx > startIdx && (!fitsWrite || !fitsSegment || !clearOfFill || !fitsVersion)) break;
      total += p.bytes;
      endIdx++;
    }
    const group = this.queue.slice(startIdx, endIdx);
    this.queueHead = endIdx;
    this.queuedBytes -= total;
    return { group, total };
  }

  /**
   * Writes the encoded group at `basePos`; false (every batch rejected, offsets from `first`
   * unclaimed) when the write failed, after cutting the file back to `basePos` (or refusing
   * writes when that cut failed too).
   */
  private async writeEncoded(
    active: Segment,
    group: Pending[],
    encoded: Encoded,
    first: number,
    basePos: number,
  ): Promise<boolean> {
    const { buffer, bytes } = encoded;
    try {
      const file = active.file!;
      if (this.writesInline(bytes) && file.writeNow !== undefined) {
        writeFullyNow(file, buffer, 0, bytes, basePos);
      } else {
        await writeFully(file, buffer, 0, bytes, basePos);
      }
      this.writtenBytes += bytes;
      return true;
    } catch (err) {
      this.claimed = first;
      try {
        await this.prealloc.truncateTo(active, basePos);
      } catch (truncateErr) {
        this.refusedBy = truncateErr;
      }
      const failure = new WriteFailedError(this.dir, { cause: err });
      for (const p of group) p.reject(failure);
      this.failBatchesBehind(failure);
      return false;
    }
  }

  /**
   * Whether a group write of `bytes` goes to the page cache on the calling thread. `onCommit`:
   * its fdatasync follows at once. `periodic`: while what no sync covers yet stays under a
   * bound, so the kernel has no pile of dirty pages to throttle the write on; past it (a sync
   * fell behind the writes), the pool takes the writes until a sync catches up. `none` keeps the
   * pool: nothing bounds its dirty pages.
   */
  private writesInline(bytes: number): boolean {
    if (bytes > WRITE_INLINE_BYTES_MAX) return false;
    if (this.cfg.fsync === 'onCommit') return true;
    return (
      this.cfg.fsync === 'periodic' &&
      this.writtenBytes - this.syncedBytes + bytes <= WRITE_INLINE_UNSYNCED_BYTES_MAX
    );
  }

  /** The group is written: the segment grows, and each batch is answered as its mode says. */
  private publish(
    active: Segment,
    group: Pending[],
    encoded: Encoded,
    first: number,
    basePos: number,
  ): void {
    active.bytes = basePos + encoded.bytes;
    this.prealloc.wrote(active.bytes);
    active.nextOffset = encoded.next;
    active.newestTimestampMicros = encoded.newestMicros;
    for (let k = 0; k < encoded.indexOffsets.length; k++)
      active.index.offer(encoded.indexOffsets[k]!, encoded.indexPositions[k]!);
    this.writtenBound = encoded.next;
    this.wrote?.(first, group);
    let at = first;
    for (const p of group) {
      const n = p.payloads!.length;
      if (p.wantsTurn === true) {
        p.resolve({ first: at, next: at + n, turn: this.sequencer.reserve(at, at + n) });
      } else if (this.cfg.fsync === 'onCommit') {
        const written = { first: at, next: at + n };
        this.commit.notify(at + n, () => p.resolve(written), p.reject);
      } else {
        p.resolve({ first: at, next: at + n });
      }
      at += n;
    }
  }

  private armPeriodicFlush(): void {
    if (this.periodicTimer !== undefined) return;
    this.periodicTimer = setTimeout(() => {
      this.periodicTimer = undefined;
      // A failed flush poisons the log, and every later call reports it: nothing waits here.
      this.commit.waitFor(this.writtenBound).catch(() => undefined);
    }, this.cfg.flushIntervalMs);
    this.periodicTimer.unref();
  }

  /** Flush-loop step: sync the active segment; the bound is what was written before the sync. */
  async flushActive(): Promise<number> {
    // Small batches already queued or being written land within microseconds of a sync that
    // takes a millisecond or more: let the writer reach them first, so this one sync covers
    // them too. Only what is queued now is waited for, so a busy writer cannot starve the flush;
    // a large queue is instead encoded while this sync runs.
    if (this.writing && this.queuedBytes <= FLUSH_WAIT_QUEUED_BYTES_MAX) {
      // A barrier fails only when the log is poisoned or refusing writes; the sync below
      // still covers whatever was written.
      await this.barrier().catch(() => undefined);
    }
    const seg = this.files.active;
    const bound = this.writtenBound;
    const bytes = seg.bytes;
    if (bound <= this.commit.durable) return bound;
    const covered = this.writtenBytes;
    await this.oneSyncAtATime(() => seg.file!.datasync());
    // Linux reports a write-back error to one sync of the file only: the preallocator's, beside
    // this one, may have taken it, so what this one covered counts once that one succeeded.
    const beside = this.prealloc.syncing;
    if (beside !== undefined) await beside;
    const poison = this.commit.poisoned;
    if (poison !== undefined) throw poison;
    this.syncedBytes = Math.max(this.syncedBytes, covered);
    // Not past a roll made while this sync ran: the new segment's header is its synced mark.
    const newer = this.syncedAt.seg !== seg || this.syncedAt.bytes < bytes;
    if (seg === this.files.active && newer) this.syncedAt = { seg, bytes };
    this.marks.soon(seg.id, bytes);
    return bound;
  }

  /** Runs `sync` once the flush's or roll's sync started before it has ended (either way). */
  private oneSyncAtATime<T>(sync: () => Promise<T>): Promise<T> {
    const run = this.syncTail.then(sync, sync);
    // The chain only orders the syncs: each caller gets its own sync's failure from `run`.
    this.syncTail = run.catch(() => undefined);
    return run;
  }

  /**
   * After a failed sync (the log is poisoned): once no write is in flight, cuts the active
   * segment's file back to its last synced byte. Linux may keep the unwritten pages readable in
   * the page cache, marked clean, after a failed fdatasync, so a reopen in the same boot would
   * read those records as sound and its own sync would have nothing left to write: they would
   * count as durable and vanish at the next power loss. Cut, they are gone at once, as they
   * would be from the disk. A cut that fails leaves them (the disk is failing; nothing is left
   * to do from here).
   */
  dropUnsynced(): void {
    this.dropping ??= (async () => {
      await this.idle();
      await this.prealloc.inFlight;
      const { seg, bytes } = this.syncedAt;
      if (seg !== this.files.active || seg.file === undefined || seg.bytes <= bytes) return;
      await seg.file.truncate(bytes);
      // A failed cut leaves the records: the disk is failing, and the log stays poisoned.
    })().catch(() => undefined);
  }

  /** Seals the active segment (data and index synced) and starts the next one (at `version`). */
  private async roll(version?: number): Promise<void> {
    const old = this.files.active;
    if (this.sealedFor !== old) {
      // A sealed segment holds its data only: the zeros are cut before the sync that seals it.
      await this.prealloc.cut(old);
      // Nothing is written while the loop rolls, so this sync covers every byte written so far.
      const covered = this.writtenBytes;
      try {
        // After a flush's sync of this file, never beside it: of two concurrent syncs Linux
        // reports a write-back error to one, and this one's success would then seal records
        // the failed flush left unsynced.
        await this.oneSyncAtATime(() => old.file!.datasync());
      } catch (err) {
        throw this.commit.fail(err);
      }
      const poison = this.commit.poisoned;
      if (poison !== undefined) throw poison;
      this.syncedBytes = Math.max(this.syncedBytes, covered);
      this.syncedAt = { seg: old, bytes: old.bytes };
      await this.files.sealActiveIndex();
      this.commit.advance(old.nextOffset);
      // Sealed once: a next segment whose creation failed is created by the next roll alone.
      this.sealedFor = old;
    }
    const created = await this.files.startNext(version);
    // Its header was synced by its creation.
    this.syncedAt = { seg: created, bytes: created.bytes };
    this.prealloc.reset();
    // Advisory: a lost mark only leaves recovery checking the new segment from its header.
    void this.marks.write(created.id, SEGMENT_HEADER_BYTES).catch(() => undefined);
  }
}

/** The segment version a queued batch needs: 4 once it holds a generation-start record. */
function versionFor(p: Pending): number {
  if (p.flags === undefined) return SEGMENT_VERSION_WRITTEN;
  for (const f of p.flags) if (f & FLAG_GENERATION_START) return 4;
  return SEGMENT_VERSION_WRITTEN;
}
