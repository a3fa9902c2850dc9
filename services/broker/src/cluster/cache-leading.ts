/**
 * What a broker leading a replicated cache shard decides before and while it serves it: the
 * commit waits of a `quorum` shard's two logs (a majority of the replication factor), and the
 * fence of a newly led `quorum` shard (fenced-open.ts, `fenceCacheShard`).
 */
import type { ReplicaLogKind } from '@felix/replication';
import type { LogOptions } from '@felix/storage';
import type { ShardRef } from '@felix/wire';
import type { Logger } from 'pino';
import type { CacheConfig } from '../config/types.js';
import type { AssignmentRecord } from './feed-items.js';
import { fenceCacheShard } from './fenced-open.js';
import type { Replicator } from './replicator.js';
import type { RidingLogs } from './riding-logs.js';
import { idOf, refOfAssignment } from './shard-refs.js';

/** A quorum cache shard's commit waits, one per log, and the members its majority is of. */
export interface CacheQuorum {
  members: number;
  cache: { advance(offset: number): void };
  counters: { advance(offset: number): void };
}

export interface CacheLeading {
  replicator: Replicator;
  logOptions: (ref: ShardRef, log: ReplicaLogKind) => LogOptions;
  riding: RidingLogs;
}

const followersOf = (a: AssignmentRecord, self: string) => a.replicas.filter((n) => n !== self);

/**
 * A led cache shard's commit waits: with `quorum` consistency at a replication factor above 1
 * (and log-backed caches), its cache and counter writes ack and show only once a majority of
 * that factor holds them (with no follower left in its set, none does); otherwise, none.
 */
export function holdCacheQuorum(
  r: CacheLeading,
  c: CacheConfig | undefined,
  a: AssignmentRecord,
  self: string,
  timeoutMs: number,
): CacheQuorum | null {
  const id = idOf(a);
  const members = Math.max(c?.replication_factor ?? 1, followersOf(a, self).length + 1);
  const quorum = c?.consistency === 'quorum' && c.durable && members > 1;
  const cache = r.riding.holdToCommit(id, 'cache', quorum ? timeoutMs : null);
  const counters = r.riding.holdToCommit(id, 'counters', quorum ? timeoutMs : null);
  return cache === null || counters === null ? null : { members, cache, counters };
}

/** Before a `quorum` cache shard newly led here is served: fenced and its tails taken (false:
 *  not yet, retried by `retryLater`). Other caches, and a set of one, need nothing; a cache the
 *  catalog has not described yet waits for it (its definition starts the next pass). */
export function fenceLedCache(
  r: CacheLeading,
  c: CacheConfig | undefined,
  a: AssignmentRecord,
  self: string,
  ctx: { log: Logger; retryLater: () => void },
): Promise<boolean> {
  const followers = followersOf(a, self);
  if (c === undefined) return Promise.resolve(false);
  if (c.consistency !== 'quorum' || !c.durable || followers.length === 0)
    return Promise.resolve(true);
  const ref = refOfAssignment(a);
  return fenceCacheShard({
    ref,
    followers,
    replicator: r.replicator,
    logOptions: (kind) => r.logOptions(ref, kind),
    ...ctx,
  });
}
