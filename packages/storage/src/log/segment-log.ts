/**
 * SegmentLog: the durable log of one shard, made of segment files in the shard directory. This
 * file is the facade: opening (lock, recovery, files), the public calls and close; each concern
 * lives in its own file:
 * - log-options.ts: the options and their checks.
 * - writer.ts (with group-encoder.ts): the append queue and the one write loop, rollover, and
 *   the flush step of the group commit (sync.ts).
 * - preallocator.ts: zeros written and synced ahead of the active segment's data.
 * - mark-writer.ts: `durable.mark`.
 * - segment-files.ts: the segment list, the active segment's files, open sealed files (LRU).
 * - log-reader.ts: reads and offsetForTime. head-trimmer.ts: trims, retention and its timer.
 *
 * Where the waiting happens:
 * - Appends queue in call order; one writer loop takes the queue, assigns offsets, encodes
 *   every queued batch (up to a bound) into one buffer and issues one positioned write. A
 *   batch never splits across segments; rollover is decided before the write.
 * - Durability is group-committed (sync.ts): under `onCommit` every appender waits for the
 *   shared flush loop, so concurrent appenders share one fdatasync; `periodic` flushes on a
 *   timer armed only by a write (an idle log never flushes); `none` flushes at seal and close.
 * - A failed fdatasync poisons the log: every later append, flush and close fails, and
 *   readers stop at the last durable offset. A failed write truncates back to the last good
 *   byte and consumes no offsets; if that truncation fails, writes stay refused until reopen.
 * - Every written batch reserves its range in the log's CommitSequencer, so projections can
 *   apply in offset order (see `stage`).
 * - Once the active segment takes writes, zeros are written and synced ahead of its data
 *   (preallocation, off the write path): a group write then overwrites bytes the file already
 *   has, and its fdatasync commits no size change. A write never reaches into a range being
 *   preallocated; rollover and close cut the zeros off, recovery cuts what a crash left.
 */
import { join } from 'node:path';
import { assert } from '@felix/common';
import { CorruptionError, LogClosedError, LogPoisonedError } from '../errors.js';
import { READ_BYTES_MAX_DEFAULT, READ_RECORDS_MAX_DEFAULT } from '../limits.js';
import type { Io } from '../io/io.js';
import { nodeIo } from '../io/node-io.js';
import { type DirLock, lockDir } from '../lock/dir-lock.js';
import { HeadTrimmer } from './head-trimmer.js';
import { ensureDurableDir, shardDirName } from './layout.js';
import { type ReadBudget, type ReadResult, LogReader } from './log-reader.js';
import {
  type FsyncMode,
  type LogConfig,
  type LogOptions,
  normalizeLogOptions,
  normalizeRetention,
  nowMicros,
} from './log-options.js';
import { MarkWriter } from './mark-writer.js';
import { RecentRecords } from './recent-records.js';
import { applyRecovery, planRecovery, type RecoveryAction } from './recovery.js';
import { FLAG_GENERATION_START, encodeGenerationStartBody } from '../segment/format.js';
import { SegmentFiles } from './segment-files.js';
import { GroupCommit } from './sync.js';
import { LogWriter, type Pending, type Staged } from './writer.js';

export type { FsyncMode, LogOptions } from './log-options.js';
export type { ReadBudget, ReadResult } from './log-reader.js';
export type { Staged } from './writer.js';

/** What an open log is made of, handed from `open` to the constructor. */
interface Parts {
  dir: string;
  io: Io;
  cfg: LogConfig;
  files: SegmentFiles;
  marks: MarkWriter;
  recovered: RecoveryAction[];
  lock: DirLock;
}

export class SegmentLog {
  /** The shard directory. */
  readonly dir: string;
  readonly fsync: FsyncMode;
  /** What recovery did when this log was opened. */
  readonly recovered: readonly RecoveryAction[];

  private readonly cfg: LogConfig;
  private readonly files: SegmentFiles;
  private readonly marks: MarkWriter;
  private readonly commit: GroupCommit;
  private readonly writer: LogWriter;
  private readonly reader: LogReader;
  private readonly head: HeadTrimmer;
  private readonly lock: DirLock;
  private readonly listeners = new Set<(durable: number) => void>();
  private readonly writtenListeners = new Set<(written: number) => void>();
  private readonly recent = new RecentRecords();
  private closing = false;

  private constructor(p: Parts) {
    this.dir = p.dir;
    this.cfg = p.cfg;
    this.fsync = p.cfg.fsync;
    this.recovered = p.recovered;
    this.files = p.files;
    this.marks = p.marks;
    this.lock = p.lock;
    this.commit = new GroupCommit(p.files.active.nextOffset, {
      flush: () => this.writer.flushActive(),
      poisonError: (cause) => {
        // What the failed sync did not make durable is cut from the file (fsyncgate).
        this.writer.dropUnsynced();
        return new LogPoisonedError(this.dir, { cause });
      },
      advanced: (d) => this.announceDurable(d),
    });
    let newest = 0;
    for (const seg of p.files.list)
      if (seg.newestTimestampMicros > newest) newest = seg.newestTimestampMicros;
    this.writer = new LogWriter({
      dir: p.dir,
      cfg: p.cfg,
      files: p.files,
      marks: p.marks,
      commit: this.commit,
      newestStampMicros: newest,
      wrote: (first, group) => this.groupWritten(first, group),
    });
    this.reader = new LogReader(
      p.dir,
      p.files,
      () => this.readableOffset,
      () => this.checkOpen(),
    );
    this.head = new HeadTrimmer(p.io, p.dir, p.cfg, p.files);
  }

  /** Opens (recovering) or creates the log of a shard. */
  static async open(opts: LogOptions): Promise<SegmentLog> {
    const cfg = normalizeLogOptions(opts);
    const io = opts.io ?? nodeIo;
    const dir = join(opts.root, shardDirName(opts.shard));
    await ensureDurableDir(io, dir);
    // One writer per shard directory, across processes and within this one.
    const lock = await lockDir(dir, { io });
    try {
      return await SegmentLog.openLocked(opts, cfg, io, dir, lock);
    } catch (err) {
      // The open's own failure is what the caller needs; a lock left behind is stale once
      // this process exits, and a later open in this process reports it.
      await lock.release().catch(() => undefined);
      throw err;
    }
  }

  private static async openLocked(
    opts: LogOptions,
    cfg: LogConfig,
    io: Io,
    dir: string,
    lock: DirLock,
  ): Promise<SegmentLog> {
    const plan = await planRecovery(io, dir, {
      indexSpacingBytes: cfg.indexSpacingBytes,
      verifyAll: opts.verifyAllOnOpen === true,
    });
    await applyRecovery(io, plan);
    // The active segment's data is synced here before the mark below records its extent.
    const files = await SegmentFiles.open(io, dir, plan, cfg.indexSpacingBytes);
    const marks = await MarkWriter.open(io, dir, files.active).catch(async (err: unknown) => {
      // The mark's failure is what the caller needs; the segments' handles go with the open.
      await files.closeAll();
      throw err;
    });
    const log = new SegmentLog({ dir, io, cfg, files, marks, recovered: plan.actions, lock });
    log.head.startTimer(log.timedRetention);
    return log;
  }

  private readonly timedRetention = (): Promise<number> =>
    this.closing ? Promise.resolve(0) : this.enforceRetention();

  /**
   * Changes the retention bounds of the open log (a stream's retention changed in its catalog):
   * checked as at open (InvalidLogOptionsError), the timer restarted by them, and a pass run at
   * once; resolves with the segments it deleted (0 when the bounds did not change).
   */
  async setRetention(opts: LogOptions['retention']): Promise<number> {
    if (this.closing) throw new LogClosedError(this.dir);
    const next = normalizeRetention(opts ?? {});
    const was = this.cfg;
    if (
      next.retention.maxBytes === was.retention.maxBytes &&
      next.retention.maxAgeMs === was.retention.maxAgeMs &&
      next.retentionCheckMs === was.retentionCheckMs
    )
      return 0;
    this.head.setRetention(next, this.timedRetention);
    // A pass already running counted by the old bounds (it is joined): one more by the new.
    const joined = await this.enforceRetention();
    return joined + (await this.enforceRetention());
  }

  /** Oldest retained offset. */
  get baseOffset(): number {
    return this.files.baseOffset;
  }

  /** Next offset to be assigned (includes a write in flight). */
  get tailOffset(): number {
    return this.writer.tail;
  }

  /** Every offset below this is written (in the page cache at least). */
  get writtenOffset(): number {
    return this.writer.written;
  }

  /** Every offset below this is on disk. */
  get durableOffset(): number {
    return this.commit.durable;
  }

  /** Append time (µs) of the newest batch appended, 0 for an empty log; never decreases. */
  get newestTimestampMicros(): number {
    return this.writer.newestStampMicros;
  }

  /** Readers see offsets below this: the durable bound under `onCommit` or once poisoned. */
  get readableOffset(): number {
    if (this.commit.poisoned !== undefined || this.cfg.fsync === 'onCommit')
      return this.commit.durable;
    return this.writer.written;
  }

  get poisoned(): boolean {
    return this.commit.poisoned !== undefined;
  }

  /** The LogPoisonedError every write fails with once a flush failed; undefined until then. */
  get poisonError(): Error | undefined {
    return this.commit.poisoned;
  }

  /** Segment files currently in the log, and their total bytes. */
  get segmentCount(): number {
    return this.files.list.length;
  }

  get sizeBytes(): number {
    let total = 0;
    for (const s of this.files.list) total += s.bytes;
    return total;
  }

  /** Completed group-commit flushes since open. */
  get flushCount(): number {
    return this.commit.flushes;
  }

  onDurable(listener: (durableOffset: number) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Called whenever `readableOffset` may have moved: after each sync under `onCommit`, after
   *  each write otherwise (a sync after a poison moves nothing, and no write lands then). */
  onReadable(listener: () => void): () => void {
    return this.cfg.fsync === 'onCommit' ? this.onDurable(listener) : this.onWritten(listener);
  }

  /** Called with the written offset after each write, before the write is durable. */
  onWritten(listener: (writtenOffset: number) => void): () => void {
    this.writtenListeners.add(listener);
    return () => {
      this.writtenListeners.delete(listener);
    };
  }

  /**
   * Keeps the newest written records' payloads in memory, up to `maxBytes` (0: stops), for
   * `readWritten` at the tail. For one tail reader at a time (a leader's shipper).
   */
  keepRecent(maxBytes: number): void {
    this.recent.keep(maxBytes);
  }

  /**
   * As `read`, but up to the written offset, past the durable bound under `onCommit` (the
   * durable bound once poisoned): what a leader ships while its own fsync runs. The newest
   * records come from memory when `keepRecent` holds them, else from the segment files (the
   * page cache).
   */
  async readWritten(from: number, budget: ReadBudget = {}): Promise<ReadResult> {
    this.checkOpen();
    const limit = this.commit.poisoned === undefined ? this.writer.written : this.durableOffset;
    const kept = this.recent.read(
      from,
      limit,
      budget.maxRecords ?? READ_RECORDS_MAX_DEFAULT,
      budget.maxBytes ?? READ_BYTES_MAX_DEFAULT,
    );
    if (kept !== null && from >= this.files.baseOffset) {
      // As the file's reader does: a start record only for a reader that asked for them.
      const records = budget.includeGenerationStarts
        ? kept
        : kept.filter((r) => (r.flags & FLAG_GENERATION_START) === 0);
      return { kind: 'records', records, next: from + kept.length };
    }
    return this.poisonOverCut(this.reader.read(from, budget, limit));
  }

  /**
   * Appends one batch; resolves with its offsets once it is durable under the fsync mode
   * (`onCommit`: on disk; `periodic`/`none`: written). Offsets are assigned in call order.
   */
  append(
    payloads: Uint8Array[],
    opts?: { timestampMicros?: number; flags?: readonly number[] },
  ): Promise<{ first: number; next: number }> {
    // Plain appends take no CommitSequencer turn: nothing applies them, and offsets nobody
    // reserved count as resolved for the turns around them. The writer resolves them once
    // durable under the fsync mode, with no promise in between.
    assertAppendFlags(opts?.flags);
    return this.enqueue(payloads, opts, false) as Promise<{ first: number; next: number }>;
  }

  /**
   * As `append`, but resolves once the batch is written, before `onCommit` has synced it
   * (`waitDurable(next)` says when it has). A follower writes its next batch while the sync of
   * the one before runs, so one fdatasync covers both.
   */
  async appendWritten(
    payloads: Uint8Array[],
    opts?: { timestampMicros?: number; flags?: readonly number[] },
  ): Promise<{ first: number; next: number }> {
    assertAppendFlags(opts?.flags);
    // A turn nobody applies under: released at once, so later turns never wait on it.
    const staged = (await this.enqueue(payloads, opts, true)) as Staged;
    staged.turn.release();
    return { first: staged.first, next: staged.next };
  }

  /**
   * Appends the generation-start record of `generation` (docs/storage-format.md: flag bit 29,
   * body the u64 big-endian generation): a new leader's first record, which readers skip and
   * replication ships. The first one in a version 3 segment rolls to a version 4 segment.
   */
  appendGenerationStart(generation: number): Promise<{ first: number; next: number }> {
    assert(Number.isSafeInteger(generation) && generation > 0, 'a generation is positive');
    return this.append([encodeGenerationStartBody(generation)], {
      flags: [FLAG_GENERATION_START],
    });
  }

  /**
   * The lower half of `append`: resolves once the batch is written, with its offsets and its
   * CommitSequencer turn. The caller then awaits `waitDurable(next)`, then `turn.wait()`,
   * applies, and releases the turn (or abandons it on failure), so applies happen in offset
   * order while writes and the shared flush stay concurrent. Payload bytes are copied when
   * the batch is written, so the arrays must not change until this resolves.
   */
  stage(payloads: Uint8Array[], opts?: { timestampMicros?: number }): Promise<Staged> {
    return this.enqueue(payloads, opts, true) as Promise<Staged>;
  }

  private enqueue(
    payloads: Uint8Array[],
    opts: { timestampMicros?: number; flags?: readonly number[] } | undefined,
    wantsTurn: boolean,
  ): Promise<Staged | { first: number; next: number }> {
    try {
      this.checkOpen();
      this.writer.checkWritable();
    } catch (err) {
      return Promise.reject(err);
    }
    return this.writer.enqueue(payloads, opts?.timestampMicros, wantsTurn, opts?.flags);
  }

  /**
   * Resolves once `[.., next)` is durable as the fsync mode acknowledges it: under `onCommit`
   * it joins (or starts) the shared flush; otherwise the records are already acknowledged.
   */
  waitDurable(next: number): Promise<void> {
    const poison = this.commit.poisoned;
    if (poison !== undefined) return Promise.reject(poison);
    if (this.cfg.fsync !== 'onCommit') return Promise.resolve();
    return this.commit.waitFor(next);
  }

  /**
   * Seals the active segment once everything appended before this call is written (data and
   * index synced) and starts a new one. Resolves with the cut: every record below it is in a
   * sealed segment. An empty active segment is not sealed.
   */
  seal(): Promise<number> {
    try {
      this.checkOpen();
      this.writer.checkWritable();
    } catch (err) {
      return Promise.reject(err);
    }
    return this.writer.barrier(true);
  }

  /**
   * Deletes whole sealed segments that end at or below `cut`, oldest first with a directory
   * sync after each (compaction's head trim). Resolves with how many were deleted.
   */
  trimBelow(cut: number): Promise<number> {
    if (this.closing) return Promise.reject(new LogClosedError(this.dir));
    return this.head.trimBelow(cut);
  }

  /** Makes everything appended before this call durable, whatever the fsync mode. */
  async flush(): Promise<void> {
    this.checkOpen();
    const poison = this.commit.poisoned;
    if (poison !== undefined) throw poison;
    const bound = await this.writer.barrier();
    await this.commit.waitFor(bound);
  }

  /** A read that met the end of a file a poison cut under it (its bound was taken before)
   *  fails with the poison, not as corruption: what it covered was not durable. */
  private async poisonOverCut(read: Promise<ReadResult>): Promise<ReadResult> {
    try {
      return await read;
    } catch (err) {
      const poison = this.commit.poisoned;
      if (poison !== undefined && err instanceof CorruptionError) throw poison;
      throw err;
    }
  }

  /**
   * Reads from `from`: at least one record when one is readable, then up to the budgets.
   * Generation-start records are skipped (they still consume an offset) unless the budget's
   * `includeGenerationStarts` asks for them (replication, which ships them like any record).
   * Below the base the answer is `trimmed`, distinct from an empty range at the tail.
   */
  async read(from: number, budget: ReadBudget = {}): Promise<ReadResult> {
    this.checkOpen();
    assert(
      Number.isSafeInteger(from) && from >= 0,
      'read offset must be a safe non-negative integer',
    );
    return this.poisonOverCut(this.reader.read(from, budget));
  }

  /**
   * The first readable offset whose record was appended at or after `atMicros`; undefined when
   * none is (the time is past every readable record). Append times never decrease within a log
   * (`append` stamps a batch whose time is below the newest with the newest), so this is a
   * binary search: over the segments by their newest time (no I/O), then over the offsets of one
   * segment, one record read per probe, at most OFFSET_FOR_TIME_PROBES_MAX reads. Over a log
   * written before times were kept non-decreasing, it answers a record at or after `atMicros`
   * whose predecessor is older than `atMicros`. Below the retained base nothing is searched: the
   * oldest retained record is the earliest answer.
   */
  async offsetForTime(atMicros: number): Promise<number | undefined> {
    this.checkOpen();
    assert(
      Number.isSafeInteger(atMicros) && atMicros >= 0,
      'a time must be a safe non-negative integer',
    );
    return this.reader.offsetForTime(atMicros);
  }

  /**
   * Retention and compaction never delete offsets at or above `offset` (a quorum shard's commit
   * offset: what a majority may not hold yet stays; a riding log's lowest offset its in-sync
   * followers confirmed); undefined removes the floor. A compaction trim the floor held back is
   * not forgotten: raising or removing the floor deletes what it held of the highest cut asked
   * (`trimBelow`), at once, without another pass (`trimWaiting` says whether any is held).
   */
  setRetentionFloor(offset: number | undefined): void {
    if (this.closing) return;
    // A failed deletion is reported by nobody here: the segments stay, still waiting, and the
    // next raise of the floor (or the next pass) tries them again.
    this.head.setFloor(offset).catch(() => undefined);
  }

  /**
   * True while the log holds sealed segments below the highest cut `trimBelow` was asked for,
   * held back by the retention floor: the trim is pending, and another compaction pass would
   * only restate the same entries again.
   */
  get trimWaiting(): boolean {
    return this.head.trimWaiting;
  }

  /** Deletes whole sealed segments from the head as the retention bounds say; returns how many. */
  enforceRetention(now = nowMicros()): Promise<number> {
    if (this.closing) return Promise.reject(new LogClosedError(this.dir));
    return this.head.enforceRetention(now);
  }

  /**
   * Waits for queued appends, flushes, records the durable mark and closes every file. On a
   * poisoned log the files are still closed, and the call fails.
   */
  async close(): Promise<void> {
    if (this.closing) throw new LogClosedError(this.dir);
    this.closing = true;
    this.writer.beginClose();
    await this.head.stop();
    await this.writer.idle();
    let failure = await this.writer.finishForClose();
    await this.marks.close();
    await this.files.closeAll();
    try {
      await this.lock.release();
    } catch (err) {
      failure ??= err;
    }
    if (failure !== undefined) {
      throw failure instanceof Error ? failure : new LogPoisonedError(this.dir, { cause: failure });
    }
  }

  private checkOpen(): void {
    if (this.closing) throw new LogClosedError(this.dir);
  }

  private groupWritten(first: number, group: readonly Pending[]): void {
    let at = first;
    for (const p of group) {
      const payloads = p.payloads ?? [];
      this.recent.add(at, payloads, p.timestampMicros, p.flags);
      at += payloads.length;
    }
    if (this.writtenListeners.size > 0) this.announce(this.writtenListeners, at);
  }

  private announceDurable(durable: number): void {
    this.announce(this.listeners, durable);
  }

  private announce(listeners: ReadonlySet<(offset: number) => void>, offset: number): void {
    for (const l of listeners) {
      try {
        l(offset);
      } catch (err) {
        // A listener's bug must not stop durability: surface it outside the flush loop.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}

/** Only generation-start records are appended with flags (a programmer error otherwise). */
function assertAppendFlags(flags: readonly number[] | undefined): void {
  const bad = flags?.find((f) => f !== 0 && f !== FLAG_GENERATION_START);
  assert(bad === undefined, 'only generation-start records are appended with flags');
}
