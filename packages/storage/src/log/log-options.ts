/**
 * The options of a SegmentLog, checked once at open and turned into the settings the log's
 * parts read (fsync mode, rollover size, index spacing, preallocation step, retention).
 */
import { InvalidLogOptionsError } from '../errors.js';
import type { Io } from '../io/io.js';
import {
  FLUSH_INTERVAL_MS_DEFAULT,
  FLUSH_INTERVAL_MS_MIN,
  INDEX_SPACING_BYTES_DEFAULT,
  RETENTION_CHECK_INTERVAL_MS_DEFAULT,
  SEGMENT_BYTES_DEFAULT,
  SEGMENT_BYTES_MAX,
  SEGMENT_BYTES_MIN,
  SEGMENT_PREALLOCATE_BYTES_DEFAULT,
} from '../limits.js';
import type { ShardId } from './layout.js';
import type { RetentionPolicy } from './retention.js';

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

/** The checked options, defaults filled in. */
export interface LogConfig {
  fsync: FsyncMode;
  flushIntervalMs: number;
  segmentBytes: number;
  indexSpacingBytes: number;
  preallocateBytes: number;
  retention: RetentionPolicy;
  retentionCheckMs: number;
}

/** Wall-clock time in microseconds: the default stamp of a batch and of a new segment. */
export const nowMicros = (): number => Date.now() * 1000;

/** Checks `opts` and fills in the defaults; throws InvalidLogOptionsError naming the option. */
export function normalizeLogOptions(opts: LogOptions): LogConfig {
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
  return {
    fsync,
    flushIntervalMs,
    segmentBytes,
    indexSpacingBytes,
    preallocateBytes,
    ...normalizeRetention(opts.retention ?? {}),
  };
}

/** Checks retention options (at open, or changed on an open log) and fills in the check interval. */
export function normalizeRetention(
  r: NonNullable<LogOptions['retention']>,
): Pick<LogConfig, 'retention' | 'retentionCheckMs'> {
  for (const [k, v] of Object.entries(r)) {
    if (v !== undefined && !(typeof v === 'number' && v > 0)) {
      throw new InvalidLogOptionsError(`retention.${k} must be positive (zero bounds are refused)`);
    }
  }
  return {
    retention: { maxBytes: r.maxBytes, maxAgeMs: r.maxAgeMs },
    retentionCheckMs: r.checkIntervalMs ?? RETENTION_CHECK_INTERVAL_MS_DEFAULT,
  };
}
