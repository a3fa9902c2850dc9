// @felix/storage public surface: exports only.
export { CommitSequencer } from './commit-sequencer.js';
export type { Turn } from './commit-sequencer.js';
export {
  AppendQueueFullError,
  CorruptionError,
  EmptyBatchError,
  InvalidLogOptionsError,
  LogClosedError,
  LogPoisonedError,
  RecordTooLargeError,
  StorageError,
  SupersededError,
  TurnCancelledError,
  WriteFailedError,
  WritesRefusedError,
} from './errors.js';
export type { CorruptionKind, CorruptionSite } from './errors.js';
export * from './limits.js';
export { SegmentLog } from './log/segment-log.js';
export type { FsyncMode, LogOptions, ReadBudget, ReadResult, Staged } from './log/segment-log.js';
export { shardDirName } from './log/layout.js';
export type { ShardId } from './log/layout.js';
export type { LogRecord } from './segment/reader.js';
export type { CommitBody, ProducerTag } from './segment/format.js';
export { applyRecovery, planRecovery } from './log/recovery.js';
export type { RecoveredSegment, RecoveryAction, RecoveryPlan } from './log/recovery.js';
export type { Io, IoFile, OpenMode } from './io/io.js';
export { NodeIo, nodeIo } from './io/node-io.js';
export { FaultyIo, systemError } from './io/faulty-io.js';
export type { FaultCode } from './io/faulty-io.js';
