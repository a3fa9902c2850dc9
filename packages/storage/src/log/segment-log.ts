/**
 * SegmentLog: the durable log of one shard, made of segment files in the shard directory.
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
import { CommitSequencer, type Turn } from '../commit-sequencer.js';
import {
  AppendQueueFullError,
  CorruptionError,
  EmptyBatchError,
  InvalidLogOptionsError,
  LogClosedError,
  LogPoisonedError,
  RecordTooLargeError,
  WriteFailedError,
  WritesRefusedError,
} from '../errors.js';
import { type Io, type IoFile, writeFully, writeFullyNow } from '../io/io.js';
import { nodeIo } from '../io/node-io.js';
import type { DirLock } from '../lock/dir-lock.js';
import {
  APPEND_QUEUE_BYTES_MAX,
  FLUSH_INTERVAL_MS_DEFAULT,
  FLUSH_INTERVAL_MS_MIN,
  FLUSH_WAIT_QUEUED_BYTES_MAX,
  INDEX_ENTRIES_FLUSH_BATCH,
  INDEX_SPACING_BYTES_DEFAULT,
  OFFSET_FOR_TIME_PROBES_MAX,
  OPEN_SEALED_SEGMENTS_MAX,
  PREALLOCATE_GAP_BYTES,
  READ_BYTES_MAX_DEFAULT,
  READ_RECORDS_MAX_DEFAULT,
  RECORD_PAYLOAD_BYTES_MAX,
  RETENTION_CHECK_INTERVAL_MS_DEFAULT,
  SEGMENT_BYTES_DEFAULT,
  SEGMENT_BYTES_MAX,
  SEGMENT_BYTES_MIN,
  SEGMENT_PREALLOCATE_BYTES_DEFAULT,
  WRITE_COALESCE_BYTES_MAX,
  WRITE_INLINE_BYTES_MAX,
} from '../limits.js';
import {
  RECORD_HEADER_BYTES,
  SEGMENT_HEADER_BYTES,
  encodeRecordInto,
  encodeSegmentHeader,
  viewOf,
} from '../segment/format.js';
import { type LogRecord, readSegment } from '../segment/reader.js';
import { INDEX_HEADER_BYTES, SparseIndex } from '../segment/sparse-index.js';
import { DURABLE_MARK_BYTES, encodeDurableMark } from './durable-mark.js';
import {
  DURABLE_MARK_FILE,
  type ShardId,
  ensureDurableDir,
  indexPath,
  segmentPath,
  shardDirName,
} from './layout.js';
import { applyRecovery, planRecovery, type RecoveryAction } from './recovery.js';
import { type RetentionPolicy, segmentsToRetire } from './retention.js';
import { GroupCommit } from './sync.js';

export type FsyncMode = 'none' | 'periodic' | 'onCommit';

export interface LogOptions {
  /** Store root; the shard directory is `join(root, shardDirName(shard))`. */
  root: string;
  shard: ShardId;
  /** Default `onCommit`. */
  fsync?: FsyncMode;
  /** `periodic` interval, default 250 ms. */
  flushIntervalMs?: number;
  /** Rollover size, default 256 MiB. */
  segmentBytes?: number;
  indexSpacingBytes?: number;
  /** Zeros written ahead of the active segment's data per step; default 4 MiB, 0 = none. */
  preallocateBytes?: number;
  /** Check every record of every sealed segment at open, not only past its last index entry. */
  verifyAllOnOpen?: boolean;
  retention?: { maxBytes?: number; maxAgeMs?: number; checkIntervalMs?: number };
  /** Fault-injection seam; the real file system by default. */
  io?: Io;
}

export type ReadResult =
  | { kind: 'records'; records: LogRecord[]; next: number }
  | { kind: 'trimmed'; requested: number; oldest: number };

export interface ReadBudget {
  maxBytes?: number;
  maxRecords?: number;
}

/** A written batch: its offsets and its turn in the log's CommitSequencer. */
export interface Staged {
  first: number;
  next: number;
  /** Release after applying (or abandon); later turns wait for it. */
  turn: Turn;
}

interface Segment {
  id: number;
  baseOffset: number;
  nextOffset: number;
  /** Written (readable) bytes. */
  bytes: number;
  version: number;
  newestTimestampMicros: number;
  index: SparseIndex;
  file: IoFile | undefined;
  opening: Promise<IoFile> | undefined;
  readers: number;
  deleted: boolean;
}

interface ActiveFiles {
  indexFile: IoFile;
  /** Index entries already written to the index file. */
  indexEntriesWritten: number;
}

type Written = Staged | { first: number; next: number } | number;

interface Pending {
  /** null for a barrier (flush or seal). */
  payloads: Uint8Array[] | null;
  /** A barrier that seals the active segment when it is reached. */
  seal?: boolean;
  /** Reserve a CommitSequencer turn for the batch (stage) or not (append). */
  wantsTurn?: boolean;
  bytes: number;
  timestampMicros: number;
  resolve: (s: Written) => void;
  reject: (err: Error) => void;
}

interface Normalized {
  fsync: FsyncMode;
  flushIntervalMs: number;
  segmentBytes: number;
  indexSpacingBytes: number;
  preallocateBytes: number;
  retention: RetentionPolicy;
  retentionCheckMs: number;
}

function normalize(opts: LogOptions): Normalized {
  const fsync = opts.fsync ?? 'onCommit';
  if (fsync !== 'none' && fsync !== 'periodic' && fsync !== 'onCommit') {
    throw new InvalidLogOptionsError(`unknown fsync mode ${String(fsync)}`);
  }
  const segmentBytes = opts.segmentBytes ?? SEGMENT_BYTES_DEFAULT;
  if (
    !Number.isSafeInteger(segmentBytes) ||
    segmentBytes < SEGMENT_BYTES_MIN ||
    segmentBytes > SEGMENT_BYTES_MAX
  ) {
    throw new InvalidLogOptionsError(
      `segmentBytes ${segmentBytes} outside [${SEGMENT_BYTES_MIN}, ${SEGMENT_BYTES_MAX}]`,
    );
  }
  const flushIntervalMs = opts.flushIntervalMs ?? FLUSH_INTERVAL_MS_DEFAULT;
  if (!(flushIntervalMs >= FLUSH_INTERVAL_MS_MIN)) {
    throw new InvalidLogOptionsError(
      `flushIntervalMs ${flushIntervalMs} below ${FLUSH_INTERVAL_MS_MIN}`,
    );
  }
  const indexSpacingBytes = opts.indexSpacingBytes ?? INDEX_SPACING_BYTES_DEFAULT;
  if (!Number.isSafeInteger(indexSpacingBytes) || indexSpacingBytes < 1) {
    throw new InvalidLogOptionsError(
      `indexSpacingBytes ${indexSpacingBytes} must be a positive integer`,
    );
  }
  const preallocateBytes = opts.preallocateBytes ?? SEGMENT_PREALLOCATE_BYTES_DEFAULT;
  if (!Number.isSafeInteger(preallocateBytes) || preallocateBytes < 0) {
    throw new InvalidLogOptionsError(
      `preallocateBytes ${preallocateBytes} must be a non-negative integer`,
    );
  }
  const r = opts.retention ?? {};
  for (const [k, v] of Object.entries(r)) {
    if (v !== undefined && !(typeof v === 'number' && v > 0)) {
      throw new InvalidLogOptionsError(`retention.${k} must be positive (zero bounds are refused)`);
    }
  }
  return {
    fsync,
    flushIntervalMs,
    segmentBytes,
    indexSpacingBytes,
    preallocateBytes,
    retention: { maxBytes: r.maxBytes, maxAgeMs: r.maxAgeMs },
    retentionCheckMs: r.checkIntervalMs ?? RETENTION_CHECK_INTERVAL_MS_DEFAULT,
  };
}

const nowMicros = () => Date.now() * 1000;

export class SegmentLog {
  /** The shard directory. */
  readonly dir: string;
  readonly fsync: FsyncMode;
  /** What recovery did when this log was opened. */
  readonly recovered: readonly RecoveryAction[];

  private readonly io: Io;
  private readonly cfg: Normalized;
  private segments: Segment[];
  private activeFiles: ActiveFiles;
  private markFile: IoFile;
  private markChain: Promise<void> = Promise.resolve();
  /** Mark writes queued on the thread pool and not yet done (an inline one waits for none). */
  private marksQueued = 0;
  /** The newest synced extent whose mark write is scheduled (`markSoon`) and not yet started. */
  private markDue: { segmentId: number; syncedBytes: number } | undefined;
  private readonly sequencer: CommitSequencer;
  private readonly commit: GroupCommit;
  private readonly listeners = new Set<(durable: number) => void>();

  private queue: Pending[] = [];
  private queueHead = 0;
  private queuedBytes = 0;
  private writing = false;
  private idleWaiters: Array<() => void> = [];
  private claimed: number;
  private written: number;
  private refusedBy: unknown;
  private closing = false;
  private closed = false;
  private periodicTimer: NodeJS.Timeout | undefined;
  private retentionTimer: NodeJS.Timeout | undefined;
  private retentionRunning: Promise<number> | undefined;
  private headChain: Promise<void> = Promise.resolve();
  private writeBuffer = new Uint8Array(0);
  private writeView = viewOf(this.writeBuffer);
  private readonly openSealed = new Map<Segment, true>();
  /** Active-segment bytes known to be synced zeros or data (writes below it grow nothing). */
  private allocated: number;
  /** Highest byte the active file may hold: past `active.bytes` it is preallocated zeros. */
  private extent: number;
  /** The preallocation step in flight; writes stay below `fillFrom` while it runs. */
  private filling: Promise<void> | undefined;
  /** Where the step in flight starts writing zeros. */
  private fillFrom = 0;
  /** Set when zeros found no space: this segment grows by its writes alone. */
  private preallocateOff = false;
  /** Append time of the newest batch queued: no later batch is stamped below it. */
  private newestStampMicros: number;

  private constructor(
    dir: string,
    io: Io,
    cfg: Normalized,
    segments: Segment[],
    activeFiles: ActiveFiles,
    markFile: IoFile,
    recovered: RecoveryAction[],
    private readonly lock: DirLock,
  ) {
    this.dir = dir;
    this.io = io;
    this.cfg = cfg;
    this.fsync = cfg.fsync;
    this.segments = segments;
    this.activeFiles = activeFiles;
    this.markFile = markFile;
    this.recovered = recovered;
    const tail = segments[segments.length - 1]!.nextOffset;
    this.allocated = segments[segments.length - 1]!.bytes;
    this.extent = this.allocated;
    this.claimed = tail;
    this.written = tail;
    this.newestStampMicros = 0;
    for (const seg of segments)
      if (seg.newestTimestampMicros > this.newestStampMicros)
        this.newestStampMicros = seg.newestTimestampMicros;
    this.sequencer = new CommitSequencer(tail);
    this.commit = new GroupCommit(tail, {
      flush: () => this.flushActive(),
      poisonError: (cause) => new LogPoisonedError(this.dir, { cause }),
      advanced: (d) => {
        for (const l of this.listeners) {
          try {
            l(d);
          } catch (err) {
            // A listener's bug must not stop durability: surface it outside the flush loop.
            queueMicrotask(() => {
              throw err;
            });
          }
        }
      },
    });
  }

  /** Opens (recovering) or creates the log of a shard. */
  static async open(opts: LogOptions): Promise<SegmentLog> {
    const cfg = normalize(opts);
    const io = opts.io ?? nodeIo;
    const dir = join(opts.root, shardDirName(opts.shard));
    await ensureDurableDir(io, dir);
    // One writer per shard directory, across processes and within this one.
    const lock = await io.lockDir(dir);
    try {
      return await SegmentLog.openLocked(opts, cfg, io, dir, lock);
    } catch (err) {
      await lock.release().catch(() => undefined);
      throw err;
    }
  }

  private static async openLocked(
    opts: LogOptions,
    cfg: Normalized,
    io: Io,
    dir: string,
    lock: DirLock,
  ): Promise<SegmentLog> {
    const plan = await planRecovery(io, dir, {
      indexSpacingBytes: cfg.indexSpacingBytes,
      verifyAll: opts.verifyAllOnOpen === true,
    });
    await applyRecovery(io, plan);
    const segments: Segment[] = plan.segments.map((s) => ({
      id: s.id,
      baseOffset: s.baseOffset,
      nextOffset: s.nextOffset,
      bytes: s.bytes,
      version: s.version,
      newestTimestampMicros: s.newestTimestampMicros,
      index: s.index,
      file: undefined,
      opening: undefined,
      readers: 0,
      deleted: false,
    }));
    let activeFiles: ActiveFiles;
    if (segments.length === 0) {
      const created = await createSegment(io, dir, 0, 0, cfg.indexSpacingBytes);
      segments.push(created.segment);
      activeFiles = created.files;
    } else {
      const active = segments[segments.length - 1]!;
      active.file = await io.open(segmentPath(dir, active.id), 'write');
      // Whatever an earlier process left in the page cache is made durable before the mark says so.
      await active.file.datasync();
      const indexFile = await io.open(indexPath(dir, active.id), 'write');
      activeFiles = { indexFile, indexEntriesWritten: active.index.length };
    }
    const markPath = join(dir, DURABLE_MARK_FILE);
    const markExisted = await io.exists(markPath);
    const markFile = await io.open(markPath, markExisted ? 'write' : 'create');
    const active = segments[segments.length - 1]!;
    const mark = encodeDurableMark({ segmentId: active.id, syncedBytes: active.bytes });
    await writeFully(markFile, mark, 0, DURABLE_MARK_BYTES, 0);
    await markFile.datasync();
    if (!markExisted) await io.syncDir(dir);
    const log = new SegmentLog(dir, io, cfg, segments, activeFiles, markFile, plan.actions, lock);
    log.startRetentionTimer();
    return log;
  }

  /** Oldest retained offset. */
  get baseOffset(): number {
    return this.segments[0]!.baseOffset;
  }

  /** Next offset to be assigned (includes a write in flight). */
  get tailOffset(): number {
    return this.claimed;
  }

  /** Every offset below this is written (in the page cache at least). */
  get writtenOffset(): number {
    return this.written;
  }

  /** Every offset below this is on disk. */
  get durableOffset(): number {
    return this.commit.durable;
  }

  /** Append time (µs) of the newest batch appended, 0 for an empty log; never decreases. */
  get newestTimestampMicros(): number {
    return this.newestStampMicros;
  }

  /** Readers see offsets below this: the durable bound under `onCommit` or once poisoned. */
  get readableOffset(): number {
    if (this.commit.poisoned !== undefined || this.cfg.fsync === 'onCommit')
      return this.commit.durable;
    return this.written;
  }

  get poisoned(): boolean {
    return this.commit.poisoned !== undefined;
  }

  /** Segment files currently in the log, and their total bytes. */
  get segmentCount(): number {
    return this.segments.length;
  }

  get sizeBytes(): number {
    let total = 0;
    for (const s of this.segments) total += s.bytes;
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

  /**
   * Appends one batch; resolves with its offsets once it is durable under the fsync mode
   * (`onCommit`: on disk; `periodic`/`none`: written). Offsets are assigned in call order.
   */
  append(
    payloads: Uint8Array[],
    opts?: { timestampMicros?: number },
  ): Promise<{ first: number; next: number }> {
    // Plain appends take no CommitSequencer turn: nothing applies them, and offsets nobody
    // reserved count as resolved for the turns around them. The writer resolves them once
    // durable under the fsync mode, with no promise in between.
    return this.enqueue(payloads, opts, false) as Promise<{ first: number; next: number }>;
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
    opts: { timestampMicros?: number } | undefined,
    wantsTurn: boolean,
  ): Promise<Staged | { first: number; next: number }> {
    try {
      this.checkWritable();
    } catch (err) {
      return Promise.reject(err);
    }
    if (payloads.length === 0) return Promise.reject(new EmptyBatchError());
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
    if (this.queuedBytes + bytes > APPEND_QUEUE_BYTES_MAX) {
      return Promise.reject(new AppendQueueFullError(this.queuedBytes, APPEND_QUEUE_BYTES_MAX));
    }
    // Times never go backwards within a log (a clock stepped back stamps the newest time again),
    // so offsetForTime can binary-search them.
    const ts = Math.max(opts?.timestampMicros ?? nowMicros(), this.newestStampMicros);
    this.newestStampMicros = ts;
    return new Promise<Staged | { first: number; next: number }>((resolve, reject) => {
      this.queue.push({
        payloads,
        wantsTurn,
        bytes,
        timestampMicros: ts,
        resolve: resolve as (s: Written) => void,
        reject,
      });
      this.queuedBytes += bytes;
      this.kickWriter();
    });
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
      this.checkWritable();
    } catch (err) {
      return Promise.reject(err);
    }
    return this.barrier(true);
  }

  /**
   * Deletes whole sealed segments that end at or below `cut`, oldest first with a directory
   * sync after each (compaction's head trim). Resolves with how many were deleted.
   */
  trimBelow(cut: number): Promise<number> {
    if (this.closed || this.closing) return Promise.reject(new LogClosedError(this.dir));
    return this.withHeadLock(async () => {
      let n = 0;
      while (n < this.segments.length - 1 && this.segments[n]!.nextOffset <= cut) n++;
      await this.deleteHead(n);
      return n;
    });
  }

  /** Makes everything appended before this call durable, whatever the fsync mode. */
  async flush(): Promise<void> {
    this.checkOpen();
    const poison = this.commit.poisoned;
    if (poison !== undefined) throw poison;
    const bound = await this.barrier();
    await this.commit.waitFor(bound);
  }

  /**
   * Reads from `from`: at least one record when one is readable, then up to the budgets.
   * Generation-start records are skipped (they still consume an offset). Below the base the
   * answer is `trimmed`, distinct from an empty range at the tail.
   */
  async read(from: number, budget: ReadBudget = {}): Promise<ReadResult> {
    this.checkOpen();
    assert(
      Number.isSafeInteger(from) && from >= 0,
      'read offset must be a safe non-negative integer',
    );
    const maxBytes = budget.maxBytes ?? READ_BYTES_MAX_DEFAULT;
    const maxRecords = budget.maxRecords ?? READ_RECORDS_MAX_DEFAULT;
    if (from < this.baseOffset)
      return { kind: 'trimmed', requested: from, oldest: this.baseOffset };
    const limit = this.readableOffset;
    const records: LogRecord[] = [];
    let collectedBytes = 0;
    let next = from;
    while (next < limit) {
      // Looked up by offset each time: retention may drop head segments while we await.
      if (next < this.baseOffset) {
        if (records.length > 0) break;
        return { kind: 'trimmed', requested: from, oldest: this.baseOffset };
      }
      const seg = this.segments[this.segmentIndexFor(next)]!;
      let file: IoFile;
      try {
        file = await this.acquire(seg);
      } catch (err) {
        if (seg.deleted && records.length === 0) {
          return { kind: 'trimmed', requested: from, oldest: this.baseOffset };
        }
        if (seg.deleted) break;
        throw err;
      }
      try {
        let start = seg.index.lookup(next);
        for (;;) {
          const endPosition = seg.bytes;
          const res = await readSegment({
            file,
            version: seg.version,
            startPosition: start.position,
            startOffset: start.offset,
            endPosition,
            from: next,
            limitOffset: limit,
            maxBytes,
            maxRecords,
            collectedBytes,
            collected: records,
            includeGenerationStarts: false,
          });
          if (res.damage !== undefined) {
            if (res.damage.atStart && start.position !== SEGMENT_HEADER_BYTES) {
              // An index entry that does not point at its record: scan from the header instead.
              start = { offset: seg.baseOffset, position: SEGMENT_HEADER_BYTES };
              continue;
            }
            throw new CorruptionError(
              res.damage.kind,
              { shardDir: this.dir, segmentId: seg.id, position: res.damage.position },
              res.damage.detail,
            );
          }
          collectedBytes = res.collectedBytes;
          next = res.next;
          if (res.full) return { kind: 'records', records, next };
          break;
        }
      } finally {
        this.release(seg);
      }
      if (next < seg.nextOffset || seg === this.active) break;
    }
    return { kind: 'records', records, next };
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
    const limit = this.readableOffset;
    let first = 0;
    let end = this.segments.length;
    while (first < end) {
      const mid = (first + end) >>> 1;
      if (this.segments[mid]!.newestTimestampMicros >= atMicros) end = mid;
      else first = mid + 1;
    }
    const seg = this.segments[first];
    if (seg === undefined) return undefined;
    let lo = Math.max(seg.baseOffset, this.baseOffset);
    let hi = Math.min(seg.nextOffset, limit);
    let found: number | undefined;
    let probes = 0;
    while (lo < hi) {
      probes++;
      assert(probes <= OFFSET_FOR_TIME_PROBES_MAX, 'offsetForTime probes stay bounded');
      const mid = lo + Math.floor((hi - lo) / 2);
      const r = await this.read(mid, { maxRecords: 1 });
      if (r.kind === 'trimmed') {
        lo = Math.max(mid + 1, r.oldest);
        continue;
      }
      const rec = r.records[0];
      if (rec === undefined || rec.offset >= hi) hi = mid;
      else if (rec.timestampMicros >= atMicros) {
        found = rec.offset;
        hi = mid;
      } else lo = rec.offset + 1;
    }
    return found;
  }

  /** Deletes whole sealed segments from the head as the retention bounds say; returns how many. */
  enforceRetention(now = nowMicros()): Promise<number> {
    if (this.closed || this.closing) return Promise.reject(new LogClosedError(this.dir));
    if (this.retentionRunning !== undefined) return this.retentionRunning;
    const run = this.withHeadLock(async () => {
      const n = segmentsToRetire(this.segments, this.cfg.retention, now);
      await this.deleteHead(n);
      return n;
    }).finally(() => {
      this.retentionRunning = undefined;
    });
    this.retentionRunning = run;
    return run;
  }

  /**
   * Waits for queued appends, flushes, records the durable mark and closes every file. On a
   * poisoned log the files are still closed, and the call fails.
   */
  async close(): Promise<void> {
    if (this.closed || this.closing) throw new LogClosedError(this.dir);
    this.closing = true;
    clearTimeout(this.periodicTimer);
    clearInterval(this.retentionTimer);
    await this.headChain;
    await this.idle();
    let failure: unknown = this.commit.poisoned;
    if (failure === undefined) {
      // Also after refused writes: what was written before them is still synced and marked;
      // partial bytes past the mark are cut by the next open.
      try {
        // Cut the preallocated zeros first, so the final sync (when there is one) covers it.
        // A cut that fails, or that a power loss undoes, leaves a zero tail the next open
        // cuts. After refused writes the file is left as it is, for recovery to repair.
        if (this.refusedBy === undefined) await this.cutPreallocated().catch(() => undefined);
        await this.commit.waitFor(this.written);
        const active = this.active;
        await this.writeIndexEntries(active);
        await this.writeMark(active.id, active.bytes);
        await this.markFile.datasync();
      } catch (err) {
        failure = this.commit.poisoned ?? err;
      }
    }
    await this.filling;
    this.closed = true;
    await this.closeFiles();
    try {
      await this.lock.release();
    } catch (err) {
      failure ??= err;
    }
    if (failure !== undefined) {
      throw failure instanceof Error ? failure : new LogPoisonedError(this.dir, { cause: failure });
    }
  }

  // ---- writer -------------------------------------------------------------------------

  private get active(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  private checkOpen(): void {
    if (this.closed || this.closing) throw new LogClosedError(this.dir);
  }

  private checkWritable(): void {
    this.checkOpen();
    const poison = this.commit.poisoned;
    if (poison !== undefined) throw poison;
    if (this.refusedBy !== undefined)
      throw new WritesRefusedError(this.dir, { cause: this.refusedBy });
  }

  /** Resolves with the written tail once every batch queued before it is written. */
  private barrier(seal = false): Promise<number> {
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

  private idle(): Promise<void> {
    if (!this.writing && this.queueHead === this.queue.length) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
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
          if (head.seal === true && this.active.bytes > SEGMENT_HEADER_BYTES) {
            try {
              await this.roll();
            } catch (err) {
              this.refusedBy ??= err;
              head.reject(this.commit.poisoned ?? this.refusedError()!);
              continue;
            }
          }
          head.resolve(this.written);
          continue;
        }
        const active = this.active;
        if (
          active.bytes > SEGMENT_HEADER_BYTES &&
          active.bytes + head.bytes > this.cfg.segmentBytes
        ) {
          try {
            await this.roll();
          } catch (err) {
            this.refusedBy ??= err;
          }
          continue;
        }
        if (this.filling !== undefined && active.bytes + head.bytes > this.fillFrom) {
          // The step in flight is writing zeros where this batch would go: let it finish.
          await this.filling;
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
    const startIdx = this.queueHead;
    let endIdx = startIdx;
    let total = 0;
    while (endIdx < this.queue.length) {
      const p = this.queue[endIdx]!;
      if (p.payloads === null) break;
      const fitsWrite = total + p.bytes <= WRITE_COALESCE_BYTES_MAX;
      const fitsSegment = active.bytes + total + p.bytes <= this.cfg.segmentBytes;
      // Never into the range a preallocation step in flight is zeroing.
      const clearOfFill =
        this.filling === undefined || active.bytes + total + p.bytes <= this.fillFrom;
      if (endIdx > startIdx && (!fitsWrite || !fitsSegment || !clearOfFill)) break;
      total += p.bytes;
      endIdx++;
    }
    const group = this.queue.slice(startIdx, endIdx);
    this.queueHead = endIdx;
    this.queuedBytes -= total;

    // One write is in flight at a time, so its buffer is reused: no allocation (and no
    // garbage) per write unless a batch outgrows the coalescing bound.
    let buf = this.writeBuffer;
    let view = this.writeView;
    if (buf.length < total) {
      buf = new Uint8Array(Math.max(total, Math.min(WRITE_COALESCE_BYTES_MAX, buf.length * 2)));
      view = viewOf(buf);
      if (buf.length <= WRITE_COALESCE_BYTES_MAX) {
        this.writeBuffer = buf;
        this.writeView = view;
      }
    }
    const first = this.claimed;
    const basePos = active.bytes;
    const indexOffsets: number[] = [];
    const indexPositions: number[] = [];
    const lastEntry = active.index.last();
    let nextIndexAt =
      lastEntry === undefined
        ? SEGMENT_HEADER_BYTES
        : lastEntry.position + this.cfg.indexSpacingBytes;
    let offset = first;
    let pos = 0;
    let newest = active.newestTimestampMicros;
    for (const p of group) {
      const ts = p.timestampMicros;
      if (ts > newest) newest = ts;
      for (const payload of p.payloads!) {
        if (basePos + pos >= nextIndexAt) {
          indexOffsets.push(offset);
          indexPositions.push(basePos + pos);
          nextIndexAt = basePos + pos + this.cfg.indexSpacingBytes;
        }
        pos = encodeRecordInto(buf, view, pos, offset, ts, payload);
        offset++;
      }
    }
    assert(pos === total, 'encoded size matches the planned size');
    this.claimed = offset;
    try {
      const file = active.file!;
      if (
        this.cfg.fsync === 'onCommit' &&
        total <= WRITE_INLINE_BYTES_MAX &&
        file.writeNow !== undefined
      ) {
        writeFullyNow(file, buf, 0, total, basePos);
      } else {
        await writeFully(file, buf, 0, total, basePos);
      }
    } catch (err) {
      this.claimed = first;
      try {
        await this.filling;
        await active.file!.truncate(basePos);
        this.allocated = Math.min(this.allocated, basePos);
        this.extent = basePos;
      } catch (truncateErr) {
        this.refusedBy = truncateErr;
      }
      const failure = new WriteFailedError(this.dir, { cause: err });
      for (const p of group) p.reject(failure);
      return;
    }
    active.bytes = basePos + total;
    if (active.bytes > this.extent) this.extent = active.bytes;
    active.nextOffset = offset;
    active.newestTimestampMicros = newest;
    for (let k = 0; k < indexOffsets.length; k++)
      active.index.offer(indexOffsets[k]!, indexPositions[k]!);
    this.written = offset;
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
    if (active.index.length - this.activeFiles.indexEntriesWritten >= INDEX_ENTRIES_FLUSH_BATCH) {
      await this.writeIndexEntries(active);
    }
    if (this.cfg.fsync === 'periodic') this.armPeriodicFlush();
    this.preallocateAhead();
  }

  /**
   * Starts the next preallocation step when less than half a step of zeros is left ahead of
   * the active segment's data. Never past the rollover size; an idle log never starts one.
   */
  private preallocateAhead(): void {
    const step = this.cfg.preallocateBytes;
    if (step === 0 || this.filling !== undefined || this.preallocateOff) return;
    if (this.closing || this.commit.poisoned !== undefined || this.refusedBy !== undefined) return;
    const seg = this.active;
    if (this.allocated - seg.bytes >= step / 2) return;
    // Behind the data, start past a gap the writes can keep using while the step runs (a
    // quarter of what is left of a small segment at most).
    const gap = Math.min(
      PREALLOCATE_GAP_BYTES,
      Math.floor((this.cfg.segmentBytes - seg.bytes) / 4),
    );
    const from = this.allocated >= seg.bytes ? this.allocated : seg.bytes + gap;
    const to = Math.min(from + step, this.cfg.segmentBytes);
    if (to <= from) return;
    this.fillFrom = from;
    this.filling = this.fill(seg, from, to);
  }

  private async fill(seg: Segment, from: number, to: number): Promise<void> {
    if (to > this.extent) this.extent = to;
    try {
      if (await seg.file!.preallocate(from, to - from)) this.allocated = to;
      else this.preallocateOff = true;
    } catch (err) {
      // Its fdatasync may have consumed a write-back error of our data, which the next flush
      // would then not report: treat it as a failed flush.
      this.commit.fail(err);
    } finally {
      this.filling = undefined;
    }
  }

  /** Waits for a preallocation step, then cuts any zeros past the active segment's data. */
  private async cutPreallocated(): Promise<void> {
    await this.filling;
    const seg = this.active;
    if (this.extent > seg.bytes) {
      await seg.file!.truncate(seg.bytes);
      this.extent = seg.bytes;
      this.allocated = seg.bytes;
    }
  }

  private armPeriodicFlush(): void {
    if (this.periodicTimer !== undefined) return;
    this.periodicTimer = setTimeout(() => {
      this.periodicTimer = undefined;
      this.commit.waitFor(this.written).catch(() => undefined);
    }, this.cfg.flushIntervalMs);
    this.periodicTimer.unref();
  }

  /** Appends not-yet-written index entries to the index file (not synced; indexes are derived). */
  private async writeIndexEntries(seg: Segment): Promise<void> {
    const files = this.activeFiles;
    const from = files.indexEntriesWritten;
    const to = seg.index.length;
    if (to === from) return;
    const bytes = seg.index.encodeRange(from, to);
    try {
      await writeFully(files.indexFile, bytes, 0, bytes.length, INDEX_HEADER_BYTES + from * 16);
      files.indexEntriesWritten = to;
    } catch {
      // A failed index write loses nothing: the index is rebuilt from the segment when needed.
    }
  }

  /** Flush-loop step: sync the active segment; the bound is what was written before the sync. */
  private async flushActive(): Promise<number> {
    // Small batches already queued or being written land within microseconds of a sync that
    // takes a millisecond or more: let the writer reach them first, so this one sync covers
    // them too. Only what is queued now is waited for, so a busy writer cannot starve the flush;
    // a large queue is instead encoded while this sync runs.
    if (this.writing && this.queuedBytes <= FLUSH_WAIT_QUEUED_BYTES_MAX) {
      await this.barrier().catch(() => undefined);
    }
    const seg = this.active;
    const bound = this.written;
    const bytes = seg.bytes;
    if (bound <= this.commit.durable) return bound;
    await seg.file!.datasync();
    this.markSoon(seg.id, bytes);
    return bound;
  }

  /**
   * Records a synced extent in the durable mark once this turn is over: the mark is advisory
   * (recovery checks what lies past it), and starting its write before the woken appenders'
   * answers go out would put a thread-pool submission ahead of them.
   */
  private markSoon(segmentId: number, syncedBytes: number): void {
    const scheduled = this.markDue !== undefined;
    this.markDue = { segmentId, syncedBytes };
    if (!scheduled) setImmediate(this.writeDueMark);
  }

  private readonly writeDueMark = (): void => {
    const due = this.markDue;
    if (due === undefined || this.closed) return;
    void this.writeMark(due.segmentId, due.syncedBytes).catch(() => undefined);
  };

  private writeMark(segmentId: number, syncedBytes: number): Promise<void> {
    // Every mark written now is at least as new as one still due, which must not follow it.
    this.markDue = undefined;
    const bytes = encodeDurableMark({ segmentId, syncedBytes });
    const file = this.markFile;
    if (file.writeNow !== undefined && this.marksQueued === 0) {
      // A few bytes into the page cache (the mark is not synced here): on the calling thread,
      // not a thread-pool round trip whose two wakeups cost more than the write. Only with no
      // queued write ahead of it, so marks land in the order they were made.
      try {
        writeFullyNow(file, bytes, 0, DURABLE_MARK_BYTES, 0);
        return Promise.resolve();
      } catch (err) {
        return Promise.reject(err);
      }
    }
    this.marksQueued++;
    const next = this.markChain
      .then(() => writeFully(file, bytes, 0, DURABLE_MARK_BYTES, 0))
      .finally(() => {
        this.marksQueued--;
      });
    this.markChain = next.catch(() => undefined);
    return next;
  }

  /** Seals the active segment (data and index synced) and starts the next one. */
  private async roll(): Promise<void> {
    const old = this.active;
    // A sealed segment holds its data only: the zeros are cut before the sync that seals it.
    await this.cutPreallocated();
    try {
      await old.file!.datasync();
    } catch (err) {
      throw this.commit.fail(err);
    }
    await this.writeIndexEntries(old);
    await this.activeFiles.indexFile.datasync().catch(() => undefined);
    await this.activeFiles.indexFile.close();
    this.commit.advance(old.nextOffset);
    const created = await createSegment(
      this.io,
      this.dir,
      old.id + 1,
      old.nextOffset,
      this.cfg.indexSpacingBytes,
    );
    this.segments.push(created.segment);
    this.activeFiles = created.files;
    this.allocated = SEGMENT_HEADER_BYTES;
    this.extent = SEGMENT_HEADER_BYTES;
    this.preallocateOff = false;
    this.openSealed.set(old, true);
    this.evictSealed();
    void this.writeMark(created.segment.id, SEGMENT_HEADER_BYTES).catch(() => undefined);
  }

  // ---- readers and retention -----------------------------------------------------------

  /** Index of the segment holding `offset` (the last one whose base is at or below it). */
  private segmentIndexFor(offset: number): number {
    let lo = 0;
    let hi = this.segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.segments[mid]!.baseOffset <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private async acquire(seg: Segment): Promise<IoFile> {
    seg.readers++;
    try {
      if (seg.file !== undefined) {
        if (this.openSealed.has(seg)) {
          this.openSealed.delete(seg);
          this.openSealed.set(seg, true);
        }
        return seg.file;
      }
      seg.opening ??= this.io.open(segmentPath(this.dir, seg.id), 'read');
      const file = await seg.opening;
      seg.opening = undefined;
      seg.file = file;
      this.openSealed.set(seg, true);
      this.evictSealed();
      return file;
    } catch (err) {
      seg.opening = undefined;
      seg.readers--;
      throw err;
    }
  }

  private release(seg: Segment): void {
    seg.readers--;
    if (seg.deleted && seg.readers === 0) this.closeSegmentFile(seg);
  }

  private evictSealed(): void {
    if (this.openSealed.size <= OPEN_SEALED_SEGMENTS_MAX) return;
    for (const seg of this.openSealed.keys()) {
      if (this.openSealed.size <= OPEN_SEALED_SEGMENTS_MAX) break;
      if (seg.readers > 0) continue;
      this.closeSegmentFile(seg);
    }
  }

  private closeSegmentFile(seg: Segment): void {
    this.openSealed.delete(seg);
    const f = seg.file;
    seg.file = undefined;
    void f?.close().catch(() => undefined);
  }

  private startRetentionTimer(): void {
    const r = this.cfg.retention;
    if (r.maxBytes === undefined && r.maxAgeMs === undefined) return;
    this.retentionTimer = setInterval(() => {
      if (this.closing || this.closed) return;
      this.enforceRetention().catch(() => undefined);
    }, this.cfg.retentionCheckMs);
    this.retentionTimer.unref();
  }

  /** Runs head deletions (retention, trims) one at a time. */
  private withHeadLock<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.headChain.then(fn);
    this.headChain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async deleteHead(n: number): Promise<void> {
    for (let k = 0; k < n; k++) {
      const seg = this.segments[0]!;
      assert(seg !== this.active, 'retention never deletes the active segment');
      // Drop it from the log first so no new read starts in it, then unlink oldest-first
      // with a directory sync after each, so a power loss leaves a longer log, never a gap.
      this.segments.shift();
      seg.deleted = true;
      await this.io.unlink(segmentPath(this.dir, seg.id));
      await this.io.unlink(indexPath(this.dir, seg.id)).catch(() => undefined);
      await this.io.syncDir(this.dir);
      if (seg.readers === 0) this.closeSegmentFile(seg);
    }
  }

  private async closeFiles(): Promise<void> {
    await this.markChain;
    const files: Array<IoFile | undefined> = [this.activeFiles.indexFile, this.markFile];
    for (const seg of this.segments) {
      files.push(seg.file);
      seg.file = undefined;
    }
    this.openSealed.clear();
    await Promise.all(files.map((f) => f?.close().catch(() => undefined)));
  }
}

async function createSegment(
  io: Io,
  dir: string,
  id: number,
  baseOffset: number,
  spacing: number,
): Promise<{ segment: Segment; files: ActiveFiles }> {
  const file = await io.open(segmentPath(dir, id), 'create');
  const header = encodeSegmentHeader({ baseOffset, createdAtMicros: nowMicros() });
  await writeFully(file, header, 0, header.length, 0);
  await file.datasync();
  const index = new SparseIndex(baseOffset, spacing);
  const indexFile = await io.open(indexPath(dir, id), 'replace');
  const indexHeader = index.encode();
  await writeFully(indexFile, indexHeader, 0, indexHeader.length, 0);
  await io.syncDir(dir);
  return {
    segment: {
      id,
      baseOffset,
      nextOffset: baseOffset,
      bytes: SEGMENT_HEADER_BYTES,
      version: 3,
      newestTimestampMicros: -1,
      index,
      file,
      opening: undefined,
      readers: 0,
      deleted: false,
    },
    files: { indexFile, indexEntriesWritten: 0 },
  };
}
