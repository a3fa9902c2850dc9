// @felix/storage public surface: exports only.
export { CommitSequencer } from './commit-sequencer.js';
export type { Turn } from './commit-sequencer.js';
export {
  AppendQueueFullError,
  BelowCommitError,
  CorruptionError,
  DataDirLockBusyError,
  DataDirLockedError,
  EmptyBatchError,
  InvalidLogOptionsError,
  LogClosedError,
  LogPoisonedError,
  RecordTooLargeError,
  ReplicaStateCorruptError,
  GenerationStartsCorruptError,
  StorageError,
  SupersededError,
  TruncateBelowBaseError,
  TurnCancelledError,
  WriteFailedError,
  WritesRefusedError,
} from './errors.js';
export type { CorruptionKind, CorruptionSite, LockHolderInfo } from './errors.js';
export { lockDir } from './lock/dir-lock.js';
export type { DirLock, LockDirOptions } from './lock/dir-lock.js';
export * from './limits.js';
export { SegmentLog } from './log/segment-log.js';
export { ReplicaFile } from './replica/replica-file.js';
export {
  type GenerationStart,
  GenerationStarts,
  decodeGenerationStarts,
  encodeGenerationStarts,
} from './replica/generation-starts.js';
export { type TruncateResult, truncateLogAbove } from './log/tail-truncation.js';
export { type BootstrapResult, bootstrapLogAt, rebuildLogAt } from './log/bootstrap.js';
export { type FollowerAppendResult, FollowerAppender } from './log/follower-append.js';
export {
  REPLICA_STATE_BYTES,
  REPLICA_STATE_INITIAL,
  type ReplicaState,
  decodeReplicaState,
  encodeReplicaState,
} from './replica/replica-state.js';
export type { FsyncMode, LogOptions, ReadBudget, ReadResult, Staged } from './log/segment-log.js';
export { DIR_LOCK_FILE, ensureDurableDir, shardDirName } from './log/layout.js';
export type { ShardId } from './log/layout.js';
export { DISCARDED_PREFIX, discardShardDir, sweepDiscarded } from './log/discard.js';
export type { LogRecord } from './segment/reader.js';
export type { CommitBody, ProducerTag } from './segment/format.js';
export {
  FLAG_GENERATION_START,
  decodeGenerationStartBody,
  encodeGenerationStartBody,
} from './segment/format.js';
export { applyRecovery, planRecovery } from './log/recovery.js';
export type { RecoveredSegment, RecoveryAction, RecoveryPlan } from './log/recovery.js';
export type { Io, IoFile, OpenMode } from './io/io.js';
export { replaceFileDurably } from './io/io.js';
export { NodeIo, nodeIo } from './io/node-io.js';
export { FaultyIo, systemError } from './io/faulty-io.js';
export type { FaultCode } from './io/faulty-io.js';
export { DelegatingFile, DelegatingIo } from './io/delegating-io.js';
export { FaultFileIo } from './io/fault-file-io.js';
export type { FaultFileIoOptions } from './io/fault-file-io.js';
export { FSYNC_FAULTS, NO_STORAGE_FAULTS, parseStorageFaults } from './io/fault-file.js';
export type { FsyncFault, ParsedStorageFaults, StorageFaults } from './io/fault-file.js';
// Projections read from the log: caches, counters, group state.
export { LogCache } from './cache/log-cache.js';
export type {
  KeyObserver,
  LogCacheCompactionOptions,
  LogCacheOptions,
} from './cache/log-cache.js';
export type { CommitGate } from './cache/projection-writer.js';
export { EphemeralCache } from './cache/ephemeral-cache.js';
export type { CacheEntry, PutOptions } from './cache/ephemeral-cache.js';
export { CacheWatch, WatchHub, matchesFilter } from './cache/watch.js';
export type {
  CacheChange,
  SnapshotEntry,
  WatchEvent,
  WatchFilter,
  WatchOptions,
  WatchSource,
  WatchStart,
} from './cache/watch.js';
export { decodeCacheRecord, encodeCacheRecord } from './cache/record.js';
export type { CacheRecord } from './cache/record.js';
export type { Claim, PortReadResult, PortRecord, ProjectionLog } from './cache/log-port.js';
export {
  ProjectionShards,
  cacheShards,
  counterShards,
  projectionRoot,
} from './cache/projection-store.js';
export type { ProjectionKind, ProjectionStoreOptions } from './cache/projection-store.js';
export { CounterLog } from './counter/counter-log.js';
export type { CounterLogOptions } from './counter/counter-log.js';
export { decodeCounterRecord, encodeCounterRecord } from './counter/record.js';
export type { CounterRecord } from './counter/record.js';
export { runCompaction } from './compaction/compactor.js';
export type {
  CompactionOptions,
  CompactionResult,
  CompactionTarget,
} from './compaction/compactor.js';
export { SegmentLogPort } from './compaction/segment-log-port.js';
export {
  CursorStore,
  DeadLetterStore,
  decodeCursor,
  encodeCursor,
  openCursorStore,
  openDeadLetterStore,
} from './group/group-stores.js';
export type {
  DeadLetter,
  DeadLetterState,
  DeadLetterStoreOptions,
  GroupShard,
  ShardCaches,
} from './group/group-stores.js';
export {
  CacheRecordCorruptError,
  CounterOverflowError,
  CounterRecordCorruptError,
  GroupStateCorruptError,
  ProjectionClosedError,
  ProjectionReleasedError,
  ProjectionInputError,
  ProjectionLogFailedError,
  ProjectionReadMovedError,
  WatchHistoryTrimmedError,
  WatchStartError,
} from './errors.js';
export { runLogTool } from './tool/cli.js';
export type { ToolOutput } from './tool/cli.js';
export { dumpShardDir, recordJson, verifyShardDir } from './tool/inspect.js';
export type { VerifySummary } from './tool/inspect.js';
// The storage benchmark is not API: it runs as `felix-log-tool bench` (tool/cli.ts).
/** CRC-32 over a byte range, native for long runs (what the segment format checks with). */
export { crc32Range } from './segment/checksum.js';
