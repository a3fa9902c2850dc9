export { InvalidReplicationFactorError, RouterError, TooManyNodesError } from './errors.js';
export { fmix32, fnv1a32, mixScore } from './hash.js';
export { NODES_MAX, REPLICATION_FACTOR_MAX } from './limits.js';
export {
  placeShard,
  planPlacement,
  rankNodes,
  rendezvousScore,
  shardKeyString,
} from './placement.js';
export type {
  Assignment,
  FailoverPolicy,
  PlacementNode,
  Placement,
  PlanEntry,
  ShardKey,
  ShardKind,
  ShardRequest,
} from './placement.js';
export { judgeForward, routeAtIngress, routeWriteAtIngress } from './routing.js';
export type { ForwardVerdict, IngressRoute, ShardView, UnavailableReason } from './routing.js';
