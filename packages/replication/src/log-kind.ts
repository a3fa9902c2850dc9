/**
 * The logs of a shard that ride with it (reference §1.9): a stream shard's records and, for the
 * same shard, its consumer groups' cursors and dead letters; a cache shard's cache log and its
 * counter log. Each ships with the same exchange under its own pair of FLXI kinds (records,
 * bootstrap) and each has its own cursor on the leader and its own log and `replica` file on a
 * follower. This table is the one place that pairs a log with its kinds and its owning shard.
 */
import { type InternalKindName, REPLICA_LOG } from '@felix/wire';

export type ReplicaLogKind = 'stream' | 'cache' | 'groupCursors' | 'deadLetters' | 'counters';

/** The shard kind whose assignment a log follows: group state belongs to the stream shard. */
export type ShardOwnerKind = 'stream' | 'cache';

export interface ReplicaLogInfo {
  records: InternalKindName;
  bootstrap: InternalKindName;
  /** The wire's `ReplicaLog` byte (rebuild, fence, fetch name a log by it). */
  wire: number;
  owner: ShardOwnerKind;
}

export const REPLICA_LOGS: Readonly<Record<ReplicaLogKind, ReplicaLogInfo>> = {
  stream: {
    records: 'ReplicateRecords',
    bootstrap: 'ReplicateBootstrap',
    wire: REPLICA_LOG.Stream,
    owner: 'stream',
  },
  cache: {
    records: 'ReplicateCacheRecords',
    bootstrap: 'ReplicateCacheBootstrap',
    wire: REPLICA_LOG.Cache,
    owner: 'cache',
  },
  groupCursors: {
    records: 'ReplicateGroupRecords',
    bootstrap: 'ReplicateGroupBootstrap',
    wire: REPLICA_LOG.GroupCursors,
    owner: 'stream',
  },
  deadLetters: {
    records: 'ReplicateDeadLetterRecords',
    bootstrap: 'ReplicateDeadLetterBootstrap',
    wire: REPLICA_LOG.GroupDeadLetters,
    owner: 'stream',
  },
  counters: {
    records: 'ReplicateCounterRecords',
    bootstrap: 'ReplicateCounterBootstrap',
    wire: REPLICA_LOG.Counters,
    owner: 'cache',
  },
};

export const REPLICA_LOG_KINDS = Object.keys(REPLICA_LOGS) as readonly ReplicaLogKind[];

/**
 * The logs a new leader fences and whose furthest tail it takes before serving: a stream's
 * records, and a cache shard's cache and counter logs, whose `quorum` writes are acked on a
 * majority. Group cursors and dead letters are acked on the leader alone (docs/replication.md,
 * "The redelivery window") and follow their stream shard's fence.
 */
export type FencedLogKind = 'stream' | 'cache' | 'counters';

const FENCED = new Set<ReplicaLogKind>(['stream', 'cache', 'counters']);

export function isFencedLog(log: ReplicaLogKind): log is FencedLogKind {
  return FENCED.has(log);
}

/** The logs that ride with a shard of `owner` kind. */
export function logsOwnedBy(owner: ShardOwnerKind): ReplicaLogKind[] {
  return REPLICA_LOG_KINDS.filter((k) => REPLICA_LOGS[k].owner === owner);
}

const BY_MESSAGE = new Map<InternalKindName, { log: ReplicaLogKind; bootstrap: boolean }>();
for (const log of REPLICA_LOG_KINDS) {
  BY_MESSAGE.set(REPLICA_LOGS[log].records, { log, bootstrap: false });
  BY_MESSAGE.set(REPLICA_LOGS[log].bootstrap, { log, bootstrap: true });
}
// A quorum shard's records carry the leader's commit mark (kind 26): stream records still.
BY_MESSAGE.set('ReplicateCommittedRecords', { log: 'stream', bootstrap: false });
// A batch holding a generation-start record carries a mark per record (kind 25): stream records.
BY_MESSAGE.set('ReplicateMarkedRecords', { log: 'stream', bootstrap: false });

/** The log a shipping request is for (and whether it is a bootstrap), or undefined for any
 *  other kind. */
export function shippingKindOf(
  kind: string,
): { log: ReplicaLogKind; bootstrap: boolean } | undefined {
  return BY_MESSAGE.get(kind as InternalKindName);
}

const BY_WIRE = new Map<number, ReplicaLogKind>(
  REPLICA_LOG_KINDS.map((k) => [REPLICA_LOGS[k].wire, k]),
);

/** The log a `ReplicaLog` byte names (the decoder lets only known bytes through). */
export function logOfWire(byte: number): ReplicaLogKind | undefined {
  return BY_WIRE.get(byte);
}
