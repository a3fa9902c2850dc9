/**
 * The files of a stream or cache the catalog deleted: every log this broker keeps of each of its
 * shards (a stream's records, group cursors and dead letters; a cache's cache and counter logs;
 * each with its `replica` and `generations` files), whether it led the shard or followed it.
 * They go once the delete is confirmed by the catalog feed: each log is closed first (the
 * leader's riding logs kept closed meanwhile, the follower copies released), then its directory
 * is renamed aside in one durable step (storage's discard.ts) and its tree removed in the
 * background. A stream or cache created again under the same name then starts from nothing:
 * no old record, value, counter, cursor, or the old replica set's generation. Trees left aside
 * by a crash are removed when the broker starts (`sweepDeletedShards`).
 */
import { join } from 'node:path';
import { type ReplicaLogKind, type ShardOwnerKind, logsOwnedBy } from '@felix/replication';
import {
  type Io,
  type ShardId,
  discardShardDir,
  projectionRoot,
  sweepDiscarded,
} from '@felix/storage';
import type { ShardRef } from '@felix/wire';
import type { Logger } from 'pino';
import type { BrokerConfig } from '../config/types.js';
import { followerLogOptions } from './internal-node.js';
import { type LineageFiles, LineageMarkerStore } from './lineage-markers.js';
import { type NameMarkerFiles, NameMarkerStore } from './name-markers.js';
import type { RidingLogs } from './riding-logs.js';

export interface DeletedShardsDeps {
  cfg: BrokerConfig;
  io: Io;
  log: Logger;
  /** The leader's riding logs (group state, caches, counters), replicated or not. */
  riding: Pick<RidingLogs, 'release' | 'admit'>;
  /** Closes this broker's follower copy of a log (absent: no replica server). */
  releaseFollower: ((ref: ShardRef, log: ReplicaLogKind) => Promise<void>) | null;
}

/** The shard table's ShardFiles (deleted-names.ts). */
export class DeletedShards {
  /** Which creation of each name the files belong to (none without a data directory). */
  readonly markers: NameMarkerFiles | undefined;
  /** Which restart of each shard the files descend from (shard-lineages.ts). */
  readonly lineages: LineageFiles | undefined;

  constructor(private readonly deps: DeletedShardsDeps) {
    const { cfg, io, log } = deps;
    const dataDir = cfg.durable.data_dir;
    const warn = (fields: object, message: string) => log.warn(fields, message);
    this.markers = dataDir === null ? undefined : new NameMarkerStore(dataDir, io, warn);
    this.lineages = dataDir === null ? undefined : new LineageMarkerStore(dataDir, io, warn);
  }

  async discard(owner: ShardOwnerKind, id: ShardId): Promise<void> {
    const { cfg, io, log, riding, releaseFollower } = this.deps;
    const ref: ShardRef = {
      tenantId: id.tenant,
      namespace: id.namespace,
      stream: id.stream,
      shard: id.shard,
      generation: 0,
    };
    // Kept closed until the files are gone: a request in flight cannot open them again.
    await riding.release(id, owner);
    try {
      // Before the logs: a crash between leaves logs without a floor (discarded at the next
      // floor heard), never a floor that would vouch for logs of another creation.
      await this.lineages?.remove(owner, id);
      const dataDir = cfg.durable.data_dir;
      for (const kind of logsOwnedBy(owner)) {
        await releaseFollower?.(ref, kind).catch((err: unknown) => {
          // A copy whose open failed holds no file; its failure was answered to its leader.
          log.warn({ err, shard: id, log: kind }, 'releasing a deleted follower copy failed');
        });
        if (dataDir === null) continue;
        const root = followerLogOptions(cfg, ref, kind).root;
        const aside = await discardShardDir(io, root, id);
        if (aside === null) continue;
        log.info({ shard: id, log: kind, aside }, 'files of a deleted shard set aside');
        io.removeTree(aside).catch((err: unknown) => {
          // Left aside: removed by the sweep when the broker starts again.
          log.warn({ err, aside }, 'removing the files of a deleted shard failed');
        });
      }
    } finally {
      // A shard of the same name (created again) may open: it starts empty.
      riding.admit(id, owner);
    }
  }
}

/** The roots a broker keeps shard logs under: streams as streams/durable-store.ts keeps them,
 *  projections on their own roots. */
export function shardLogRoots(dataDir: string): string[] {
  const kinds = ['caches', 'counters', 'groups', 'dead-letters'] as const;
  return [join(dataDir, 'streams'), ...kinds.map((k) => projectionRoot(dataDir, k))];
}

/** Sweeps each shard log root of the trees a discard left aside. */
export async function sweepDeletedShards(dataDir: string, io: Io, log: Logger): Promise<void> {
  for (const root of shardLogRoots(dataDir)) {
    const removed = await sweepDiscarded(io, root).catch((err: unknown) => {
      log.warn({ err, root }, 'removing the files of deleted shards failed');
      return [];
    });
    if (removed.length > 0) log.info({ removed }, 'removed the files of deleted shards');
  }
}
