/**
 * Typed failures of the projections read from the log (cache, counters, group state).
 * Staged here until the package's errors.ts exists; moved there verbatim afterwards.
 */
import { FelixError } from '@felix/common';

/** A cache record payload that does not decode: unknown version/op, bad lengths, bad UTF-8. */
export class CacheRecordCorruptError extends FelixError {
  readonly code = 'FELIX_STORAGE_CACHE_RECORD_CORRUPT';
  constructor(
    readonly reason: string,
    readonly offset?: number,
  ) {
    super(`corrupt cache record${offset === undefined ? '' : ` at offset ${offset}`}: ${reason}`);
  }
}

/** A counter record payload that does not decode. */
export class CounterRecordCorruptError extends FelixError {
  readonly code = 'FELIX_STORAGE_COUNTER_RECORD_CORRUPT';
  constructor(
    readonly reason: string,
    readonly offset?: number,
  ) {
    super(`corrupt counter record${offset === undefined ? '' : ` at offset ${offset}`}: ${reason}`);
  }
}

/** An add whose result leaves the signed 64-bit range; nothing was appended. */
export class CounterOverflowError extends FelixError {
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
export class ProjectionInputError extends FelixError {
  readonly code = 'FELIX_STORAGE_PROJECTION_INPUT';
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** The projection (cache, counter log, store) was closed; reopen to continue. */
export class ProjectionClosedError extends FelixError {
  readonly code = 'FELIX_STORAGE_PROJECTION_CLOSED';
  constructor(what: string) {
    super(`${what} is closed`, { retry: 'retry' });
  }
}

/** A watch was asked for a start its cache cannot serve (e.g. an offset on an in-memory cache). */
export class WatchStartError extends FelixError {
  readonly code = 'FELIX_STORAGE_WATCH_START';
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** Watch history below this offset was compacted away while being replayed. */
export class WatchHistoryTrimmedError extends FelixError {
  readonly code = 'FELIX_STORAGE_WATCH_HISTORY_TRIMMED';
  constructor(readonly resumeFrom: number) {
    super(`watch history at offset ${resumeFrom} was compacted away during replay`, {
      retry: 'retry',
    });
  }
}

/** A read kept finding its record moved by compaction; try again. */
export class ProjectionReadMovedError extends FelixError {
  readonly code = 'FELIX_STORAGE_READ_MOVED';
  constructor(readonly key: string) {
    super(`read of ${JSON.stringify(key)} kept racing compaction`, { retry: 'retry' });
  }
}

/** A group-state entry (cursor or dead letter) whose stored value does not decode. */
export class GroupStateCorruptError extends FelixError {
  readonly code = 'FELIX_STORAGE_GROUP_STATE_CORRUPT';
  constructor(readonly reason: string) {
    super(`corrupt group state: ${reason}`);
  }
}

/** The log could not supply records below a write's offset (it failed under the projection). */
export class ProjectionLogFailedError extends FelixError {
  readonly code = 'FELIX_STORAGE_PROJECTION_LOG_FAILED';
  constructor(what: string, offset: number) {
    super(`${what}: records below offset ${offset} could not be read back; reopen it`);
  }
}
