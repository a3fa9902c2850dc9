/**
 * The leader's durable logs that ride with a shard beside a stream's own records (reference
 * §1.9): a stream shard's group cursors and dead letters (the group service's stores), a cache
 * shard's cache and counter logs (the cache service's). The shard table opens them to ship while
 * this broker leads the shard, and releases them when another broker does, so that broker's
 * replica of them can append; each projection rebuilds by replay when it opens again.
 */
import type { ReplicaLogKind } from '@felix/replication';
import { GenerationStarts, type SegmentLog, type ShardId, nodeIo } from '@felix/storage';
import type { CacheService } from '../caches/cache-service.js';
import type { CommitWait } from '../caches/commit-waiters.js';
import type { GroupService } from '../groups/group-service.js';

/** Every log of a shard but a stream's records. */
export type RidingLogKind = Exclude<ReplicaLogKind, 'stream'>;

export interface RidingLogs {
  /** The log, opened (null when this broker keeps no such log: no durable storage). */
  open(id: ShardId, log: RidingLogKind): Promise<SegmentLog | null>;
  /** Closes the riding logs of a shard of `owner` kind this broker no longer leads, and keeps
   *  them closed (a request in flight cannot reopen them) until `admit`. */
  release(id: ShardId, owner: 'stream' | 'cache'): Promise<void>;
  /** This broker leads the shard (again, its follower copies closed): its riding logs may open. */
  admit(id: ShardId, owner: 'stream' | 'cache'): void;
  /** Whether a stream shard's groups hold claims or acks its next leader would not have
   *  (GroupRegistry.busyIn); a cache shard's logs hold nothing of the kind. */
  busy(id: ShardId, owner: 'stream' | 'cache'): boolean;
  /**
   * A quorum cache shard's `kind` log acks and shows its writes only once the commit mark covers
   * them, each writer waiting at most `timeoutMs` (null: on this broker alone). Answers where
   * to tell the mark (and wait on it), or null.
   */
  holdToCommit(
    id: ShardId,
    kind: 'cache' | 'counters',
    timeoutMs: number | null,
  ): CommitWait | null;
}

export function ridingLogsOf(
  caches: Pick<CacheService, 'shardLog' | 'releaseShard' | 'admitShard' | 'holdToCommit'>,
  groups: Pick<GroupService, 'shardState'> | null,
): RidingLogs {
  return {
    async open(id, log) {
      if (log === 'cache' || log === 'counters') return caches.shardLog(log, id);
      return groups === null ? null : groups.shardState.shardLog(log, id);
    },
    async release(id, owner) {
      if (owner === 'cache') await caches.releaseShard(id);
      else await groups?.shardState.releaseShard(id);
    },
    admit(id, owner) {
      if (owner === 'cache') caches.admitShard(id);
      else groups?.shardState.admitShard(id);
    },
    busy(id, owner) {
      return owner === 'stream' && (groups?.shardState.busyIn(id) ?? false);
    },
    holdToCommit(id, kind, timeoutMs) {
      return caches.holdToCommit(kind, id, timeoutMs);
    },
  };
}

/**
 * Records in a riding log's `generations` file that this broker's records from its tail on are
 * of `generation`, the one it now leads the shard at, as a stream leader does for its records
 * (idempotent within a generation). When it returns deposed, those records are then an older
 * generation's suffix: its successor's first batch, even one starting exactly at its tail, is
 * asked to overlap them, and they are compared and truncated. Unlabelled, a broker that never
 * followed the log would keep them under the successor's records.
 */
export async function labelLeaderGeneration(log: SegmentLog, generation: number): Promise<void> {
  const starts = await GenerationStarts.open(nodeIo, log.dir);
  await starts.begin(generation, log.tailOffset);
}
