// @felix/storage public surface: exports only.
export { CommitSequencer } from './commit-sequencer.js';
export type { Turn } from './commit-sequencer.js';
export {
  AppendQueueFullError,
  CorruptionError,
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
