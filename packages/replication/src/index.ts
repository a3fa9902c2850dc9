// @felix/replication public surface: exports only.
export {
  InvalidReplicaSetError,
  MalformedPeerFrameError,
  ReplicationError,
  TailFetchError,
} from './errors.js';
export {
  type BatchVerdict,
  type ReplicaView,
  answerFor,
  checkBatch,
} from './follower/batch-check.js';
export { CommitSaver } from './follower/commit-saver.js';
export { ReplicaServer, type ReplicaServerOptions } from './follower/replica-server.js';
export { bootstrapFrame, committedFrame, rebuildFrame, recordsFrame } from './frames.js';
export { RebuildSlots } from './leader/rebuild-slots.js';
export { answerOf } from './leader/answers.js';
export { CommitMark, majorityHeld } from './leader/commit-mark.js';
export {
  type FenceAnswer,
  type FenceOptions,
  type FenceOutcome,
  fenceReplicaSet,
} from './leader/fence.js';
export {
  type FollowerAnswer,
  FollowerCursor,
  type HaltReason,
  type Shipment,
} from './leader/follower-cursor.js';
export {
  type PeerLink,
  ShardShipper,
  type ShipperFollower,
  type ShipperOptions,
} from './leader/shard-shipper.js';
export {
  type LogEnd,
  type TailFetchOptions,
  fetchTail,
  furtherAhead,
  furthestAnswer,
} from './leader/tail-fetch.js';
export * from './limits.js';
export {
  REPLICA_LOGS,
  REPLICA_LOG_KINDS,
  type FencedLogKind,
  type ReplicaLogInfo,
  type ReplicaLogKind,
  type ShardOwnerKind,
  isFencedLog,
  logsOwnedBy,
  shippingKindOf,
} from './log-kind.js';
