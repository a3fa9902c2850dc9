// @felix/replication public surface: exports only.
export { InvalidReplicaSetError, ReplicationError } from './errors.js';
export {
  type BatchVerdict,
  type ReplicaView,
  answerFor,
  checkBatch,
} from './follower/batch-check.js';
export { CommitMark, majorityHeld } from './leader/commit-mark.js';
export {
  type FollowerAnswer,
  FollowerCursor,
  type HaltReason,
  type Shipment,
} from './leader/follower-cursor.js';
export * from './limits.js';
