/**
 * Every operating error @felix/storage raises. One subclass per failure, each with a stable
 * `code`; corruption carries the site (shard directory, segment id, byte position) and kind.
 */
import { FelixError, type FelixErrorOptions } from '@felix/common';

export abstract class StorageError extends FelixError {}

/** The verdicts a scan can reach about bytes on disk (reference §3.8, plus our own gap name). */
export type CorruptionKind =
  | 'SegmentMagic'
  | 'SegmentVersion'
  | 'SegmentFlags'
  | 'SegmentHeaderChecksum'
  | 'IndexMagic'
  | 'IndexVersion'
  | 'Truncated'
  | 'RecordHeaderChecksum'
  | 'RecordChecksum'
  | 'RecordFlags'
  | 'RecordTooLarge'
  | 'OffsetOutOfOrder'
  | 'OffsetTooLarge'
  | 'RecordPublisher'
  | 'SegmentName';

export interface CorruptionSite {
  /** Shard directory (full path) the damage is in. */
  shardDir: string;
  segmentId: number;
  /** Byte position inside the segment file. */
  position: number;
}

/** Bytes on disk that recovery may not repair: open refuses rather than drop data. */
export class CorruptionError extends StorageError {
  readonly code = 'FELIX_STORAGE_CORRUPTION';
  readonly kind: CorruptionKind;
  readonly site: CorruptionSite;
  readonly detail: string;
  constructor(
    kind: CorruptionKind,
    site: CorruptionSite,
    detail: string,
    options?: FelixErrorOptions,
  ) {
    super(
      `corrupt segment log: ${kind} in ${site.shardDir} segment ${site.segmentId} at byte ${site.position}: ${detail}`,
      options,
    );
    this.kind = kind;
    this.site = site;
    this.detail = detail;
  }
}

/** A flush failed: nothing written since the last good flush can be trusted to be on disk. */
export class LogPoisonedError extends StorageError {
  readonly code = 'FELIX_STORAGE_POISONED';
  constructor(shardDir: string, options?: FelixErrorOptions) {
    super(`log ${shardDir} is poisoned by a failed flush; reopen it to continue`, {
      retry: 'never',
      ...options,
    });
  }
}

/** A write failed (ENOSPC, EIO); the log truncated back, so the batch consumed no offsets. */
export class WriteFailedError extends StorageError {
  readonly code = 'FELIX_STORAGE_WRITE_FAILED';
  constructor(shardDir: string, options?: FelixErrorOptions) {
    super(`write to log ${shardDir} failed; no offsets were consumed`, {
      retry: 'retry_after_backoff',
      ...options,
    });
  }
}

/** A failed write could not be undone: appends stay refused until the log is reopened. */
export class WritesRefusedError extends StorageError {
  readonly code = 'FELIX_STORAGE_WRITES_REFUSED';
  constructor(shardDir: string, options?: FelixErrorOptions) {
    super(`log ${shardDir} refuses writes: a failed write could not be truncated away`, options);
  }
}

/** The log was closed; a new handle is needed. */
export class LogClosedError extends StorageError {
  readonly code = 'FELIX_STORAGE_CLOSED';
  constructor(shardDir: string) {
    super(`log ${shardDir} is closed`, { retry: 'retry' });
  }
}

/** A record or batch is larger than the format or a configured bound allows. */
export class RecordTooLargeError extends StorageError {
  readonly code = 'FELIX_STORAGE_RECORD_TOO_LARGE';
  constructor(bytes: number, limit: number) {
    super(`record or batch of ${bytes} bytes exceeds the limit of ${limit} bytes`);
  }
}

/** An append carried no records: there is nothing to assign an offset to. */
export class EmptyBatchError extends StorageError {
  readonly code = 'FELIX_STORAGE_EMPTY_BATCH';
  constructor() {
    super('an append needs at least one record');
  }
}

/** Too many appends are queued behind the writer; the caller should back off. */
export class AppendQueueFullError extends StorageError {
  readonly code = 'FELIX_STORAGE_APPEND_QUEUE_FULL';
  constructor(queuedBytes: number, limit: number) {
    super(`append queue holds ${queuedBytes} bytes, limit ${limit}`, {
      retry: 'retry_after_backoff',
    });
  }
}

/** A CommitSequencer was reset while this turn waited: its write must not be applied. */
export class SupersededError extends StorageError {
  readonly code = 'FELIX_STORAGE_SUPERSEDED';
  constructor(first: number, next: number) {
    super(`commit turn [${first}, ${next}) was superseded by a reset`);
  }
}

/** A turn's wait was cancelled through its AbortSignal; the turn was abandoned. */
export class TurnCancelledError extends StorageError {
  readonly code = 'FELIX_STORAGE_TURN_CANCELLED';
  constructor(first: number, next: number, options?: FelixErrorOptions) {
    super(`commit turn [${first}, ${next}) was cancelled`, options);
  }
}

/** Who holds a directory lock, as its lock file records it. */
export interface LockHolderInfo {
  pid: number;
  /** The holder is this very process (a second open of the same directory). */
  self: boolean;
}

/**
 * A directory (a broker's data directory or a shard's log directory) is locked by a live
 * process, possibly this one: two writers would interleave appends and corrupt the log.
 */
export class DataDirLockedError extends StorageError {
  readonly code = 'FELIX_STORAGE_DATA_DIR_LOCKED';
  constructor(
    readonly dir: string,
    readonly holder: LockHolderInfo,
  ) {
    super(
      `${dir} is locked by ${holder.self ? `this process (pid ${holder.pid}); it is already open here` : `pid ${holder.pid}, a running process`}; refusing a second writer`,
    );
  }
}

/** The lock file kept changing under a take-over (other processes racing); try again. */
export class DataDirLockBusyError extends StorageError {
  readonly code = 'FELIX_STORAGE_DATA_DIR_LOCK_BUSY';
  constructor(
    readonly dir: string,
    attempts: number,
  ) {
    super(`${dir}: the lock could not be settled in ${attempts} attempts`, {
      retry: 'retry_after_backoff',
    });
  }
}

/** Options passed to open are invalid (bad segment size, zero retention bound, ...). */
export class InvalidLogOptionsError extends StorageError {
  readonly code = 'FELIX_STORAGE_INVALID_OPTIONS';
}

// ---- projections (cache, counters, group state) ----

/** A cache record payload that does not decode: unknown version/op, bad lengths, bad UTF-8. */
export class CacheRecordCorruptError extends StorageError {
  readonly code = 'FELIX_STORAGE_CACHE_RECORD_CORRUPT';
  constructor(
    readonly reason: string,
    readonly offset?: number,
  ) {
    super(`corrupt cache record${offset === undefined ? '' : ` at offset ${offset}`}: ${reason}`);
  }
}

/** A counter record payload that does not decode. */
export class CounterRecordCorruptError extends StorageError {
  readonly code = 'FELIX_STORAGE_COUNTER_RECORD_CORRUPT';
  constructor(
    readonly reason: string,
    readonly offset?: number,
  ) {
    super(`corrupt counter record${offset === undefined ? '' : ` at offset ${offset}`}: ${reason}`);
  }
}

/** An add whose result leaves the signed 64-bit range; nothing was appended. */
export class CounterOverflowError extends StorageError {
  readonly code = 'FELIX_STORAGE_COUNTER_OVERFLOW';
  constructor(
    readonly key: string,
    readonly sum: bigint,
    readonly delta: bigint,
  ) {
    super(`counter ${JSON.stringify(key)}: ${sum} + ${delta} leaves the signed 64-bit range`);
  }
}

/** A key or value the caller supplied is outside the projection's bounds. */
export class ProjectionInputError extends StorageError {
  readonly code = 'FELIX_STORAGE_PROJECTION_INPUT';
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** The projection (cache, counter log, store) was closed; reopen to continue. */
export class ProjectionClosedError extends StorageError {
  readonly code = 'FELIX_STORAGE_PROJECTION_CLOSED';
  constructor(what: string) {
    super(`${what} is closed`, { retry: 'retry' });
  }
}

/** The projection shard was released (another broker leads its shard and replicates into its
 *  log); it opens again only once this broker is admitted to lead it. */
export class ProjectionReleasedError extends StorageError {
  readonly code = 'FELIX_STORAGE_PROJECTION_RELEASED';
  constructor(what: string) {
    super(`${what} is released to another leader`, { retry: 'retry' });
  }
}

/** A watch was asked for a start its cache cannot serve (e.g. an offset on an in-memory cache). */
export class WatchStartError extends StorageError {
  readonly code = 'FELIX_STORAGE_WATCH_START';
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** Watch history below this offset was compacted away while being replayed. */
export class WatchHistoryTrimmedError extends StorageError {
  readonly code = 'FELIX_STORAGE_WATCH_HISTORY_TRIMMED';
  constructor(readonly resumeFrom: number) {
    super(`watch history at offset ${resumeFrom} was compacted away during replay`, {
      retry: 'retry',
    });
  }
}

/** A read kept finding its record moved by compaction; try again. */
export class ProjectionReadMovedError extends StorageError {
  readonly code = 'FELIX_STORAGE_READ_MOVED';
  constructor(readonly key: string) {
    super(`read of ${JSON.stringify(key)} kept racing compaction`, { retry: 'retry' });
  }
}

/** A group-state entry (cursor or dead letter) whose stored value does not decode. */
export class GroupStateCorruptError extends StorageError {
  readonly code = 'FELIX_STORAGE_GROUP_STATE_CORRUPT';
  constructor(readonly reason: string) {
    super(`corrupt group state: ${reason}`);
  }
}

/** The log could not supply records below a write's offset (it failed under the projection). */
export class ProjectionLogFailedError extends StorageError {
  readonly code = 'FELIX_STORAGE_PROJECTION_LOG_FAILED';
  constructor(what: string, offset: number) {
    super(`${what}: records below offset ${offset} could not be read back; reopen it`);
  }
}

/** The shard's `replica` file is present but does not decode. It is authoritative (it holds
 *  the highest generation this replica accepted), so the shard does not open without it. */
export class ReplicaStateCorruptError extends StorageError {
  readonly code = 'FELIX_STORAGE_REPLICA_STATE_CORRUPT';
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`corrupt replica state ${path}: ${reason}; restore the file or rebuild the replica`);
  }
}

/** The shard's `generations` file is present but does not decode (its generation starts decide
 *  which records a follower may truncate, so the shard does not open without it). */
export class GenerationStartsCorruptError extends StorageError {
  readonly code = 'FELIX_STORAGE_GENERATION_STARTS_CORRUPT';
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`corrupt generation starts ${path}: ${reason}; restore the file or rebuild the replica`);
  }
}

// ---- replication (tail truncation) ----

/** A truncation that would remove records at or below the commit offset: a majority holds
 *  them and a reader may have seen them, so they are never rewritten. */
export class BelowCommitError extends StorageError {
  readonly code = 'FELIX_STORAGE_BELOW_COMMIT';
  constructor(
    readonly shardDir: string,
    readonly offset: number,
    readonly commitOffset: number,
  ) {
    super(
      `refusing to truncate ${shardDir} above ${offset}: records below the commit offset ${commitOffset} are never rewritten`,
    );
  }
}

/** A truncation target below the log's oldest retained record: nothing there to keep. */
export class TruncateBelowBaseError extends StorageError {
  readonly code = 'FELIX_STORAGE_TRUNCATE_BELOW_BASE';
  constructor(
    readonly shardDir: string,
    readonly offset: number,
    readonly baseOffset: number,
  ) {
    super(
      `cannot truncate ${shardDir} above ${offset}: the log starts at ${baseOffset}; rebuild the replica instead`,
    );
  }
}
