/**
 * What a broker leading a replicated cache shard decides before and while it serves it: the
 * commit waits of a `quorum` shard's two logs (a majority of the replication factor), the
 * fence of a newly led `quorum` shard (fenced-open.ts, `fenceCacheShard`), and the hold on its
 * serving until a majority holds what it took (`CommittingCaches`).
 */
import type { ReplicaLogKind } from '@felix/replication';
import type { LogOptions } from '@felix/storage';
import type { ShardRef } from '@felix/wire';
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { CommitWait } from '../caches/commit-waiters.js';
import type { CacheConfig } from '../config/types.js';
import { COMMIT_HOLD_RETRY_MS } from '../limits.js';
import { type AssignmentRecord, shardLabel } from './feed-items.js';
import { fenceCacheShard } from './fenced-open.js';
import type { Replicator } from './replicator.js';
import type { RidingLogs } from './riding-logs.js';
import { idOf, refOfAssignment } from './shard-refs.js';

/** A quorum cache shard's commit waits, one per log, and the members its majority is of. */
export interface CacheQuorum {
  members: number;
  cache: CommitWait;
  counters: CommitWait;
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

/**
 * The `quorum` cache shards newly led here that are not served yet. Their projections replayed
 * the whole of each log on open, a suffix no majority may hold included: one the new leader
 * inherited, or took from the furthest fence answer. A follower of a cache log keeps no commit
 * offset, and no generation-start record holds its reads back as a stream's does, so served at
 * once such a value could be read and then lost with this broker. Each shard is held (refused
 * `not_ready`) until the commit mark of each of its logs covers where the log ended when it was
 * taken; its writes wait for the same mark anyway.
 */
export class CommittingCaches {
  private readonly holds = new Map<string, object>();
  private readonly gauge: Gauge;

  constructor(
    registry: Registry,
    private readonly log: Logger,
  ) {
    this.gauge = new Gauge({
      name: 'felix_broker_cluster_cache_shards_committing',
      help: 'Quorum cache shards this broker newly leads and does not serve yet: it waits for a majority of their replica set to hold each of their logs up to where it took them',
      registers: [registry],
    });
  }

  /** Whether shard `key` is led here but not served yet. */
  has(key: string): boolean {
    return this.holds.has(key);
  }

  /** Holds shard `key` (newly led at `a`, its logs about to be shipped) until a majority holds
   *  each of its logs; nothing to hold without a quorum or without a follower. */
  hold(
    key: string,
    r: CacheLeading,
    quorum: CacheQuorum | null,
    a: AssignmentRecord,
    self: string,
  ) {
    if (quorum === null || followersOf(a, self).length === 0) return;
    const token = {};
    this.holds.set(key, token);
    this.gauge.set(this.holds.size);
    const since = performance.now();
    this.release(key, token, since, () => committedThroughEnds(r, quorum, a));
  }

  /** Ends the hold `token` once `committed` resolves (said when the shard is served); tries
   *  again while a log fails to open. */
  private release(key: string, token: object, since: number, committed: () => Promise<boolean>) {
    const shard = shardLabel(key);
    committed().then(
      (served) => {
        const held_ms = Math.round(performance.now() - since);
        if (this.drop(key, token) && served)
          this.log.info(
            { cache_shard: shard, held_ms },
            'cache shard served: a majority holds its logs',
          );
      },
      (err: unknown) => {
        // Let go meanwhile (its waits abandoned): whoever let it go dropped the hold.
        if (this.holds.get(key) !== token) return;
        this.log.warn({ err, cache_shard: shard }, 'cache shard held back; tried again');
        setTimeout(() => this.release(key, token, since, committed), COMMIT_HOLD_RETRY_MS).unref();
      },
    );
  }

  /** Forgets shard `key`'s hold (it is let go), or only the hold `token` when named. */
  drop(key: string, token?: object): boolean {
    if (token !== undefined && this.holds.get(key) !== token) return false;
    const dropped = this.holds.delete(key);
    this.gauge.set(this.holds.size);
    return dropped;
  }
}

/** Resolves true once the mark of each of a quorum cache shard's logs covers the log's end
 *  now; false when a log is not there to open (the broker closing). */
async function committedThroughEnds(
  r: CacheLeading,
  quorum: CacheQuorum,
  a: AssignmentRecord,
): Promise<boolean> {
  const id = idOf(a);
  for (const kind of ['cache', 'counters'] as const) {
    const log = await r.riding.open(id, kind);
    if (log === null) return false;
    await (kind === 'cache' ? quorum.cache : quorum.counters).wait(log.tailOffset);
  }
  return true;
}
