/**
 * Opens projections shard by shard under one store root, each kind on its own root so no two
 * kinds of log can share a directory: `<root>/caches/`, `<root>/counters/`, `<root>/groups/`,
 * `<root>/dead-letters/`, beside streams at `<root>/<shard-dir>`. Opens of one shard coalesce;
 * different shards do not wait on each other.
 */
import { join } from 'node:path';
import { SegmentLogPort } from '../compaction/segment-log-port.js';
import type { Io } from '../io/io.js';
import { type ShardId, shardDirName } from '../log/layout.js';
import type { FsyncMode, SegmentLog } from '../log/segment-log.js';
import { CounterLog } from '../counter/counter-log.js';
import type { CompactionOptions } from '../compaction/compactor.js';
import { LogCache } from './log-cache.js';
import type { CommitGate } from './projection-writer.js';
import { ProjectionClosedError, ProjectionReleasedError } from '../errors.js';
import { PROJECTION_SEGMENT_BYTES_DEFAULT } from '../limits.js';

export type ProjectionKind = 'caches' | 'counters' | 'groups' | 'dead-letters';

export interface ProjectionStoreOptions {
  /** The storage root streams live in; each projection kind takes a subdirectory of it. */
  root: string;
  fsync?: FsyncMode;
  flushIntervalMs?: number;
  segmentBytes?: number;
  io?: Io;
  /** Wall clock in ms for cache TTL. */
  now?: () => number;
  compaction?: CompactionOptions & { auto?: boolean; floorBytes?: number };
  /**
   * What a durable write to `shard`'s projection waits for before it is applied and answered
   * (a replicated quorum shard's commit mark reaching `next`); undefined: nothing. Asked on
   * every write, so a shard's consistency may change while it is open.
   */
  commitGate?: (kind: ProjectionKind, shard: ShardId, next: number) => Promise<void> | undefined;
}

/** The directory a projection kind keeps its shard logs in. */
export function projectionRoot(root: string, kind: ProjectionKind): string {
  return join(root, kind);
}

interface Closable {
  close(): Promise<void>;
}

/** One open projection per shard, opened on first use. */
export class ProjectionShards<T extends Closable> {
  private readonly open = new Map<string, Promise<T>>();
  /** The log under each open projection (a leader ships it to the shard's followers). */
  private readonly logs = new Map<string, SegmentLog>();
  /** Shards released to another leader: not opened again until `admit`. */
  private readonly released = new Set<string>();
  private closed = false;

  constructor(
    readonly kind: ProjectionKind,
    private readonly opts: ProjectionStoreOptions,
    private readonly make: (log: SegmentLogPort, shard: ShardId) => Promise<T>,
  ) {}

  get(shard: ShardId): Promise<T> {
    if (this.closed) return Promise.reject(new ProjectionClosedError(`${this.kind} store`));
    const key = shardDirName(shard);
    if (this.released.has(key))
      return Promise.reject(new ProjectionReleasedError(`${this.kind} ${key}`));
    let p = this.open.get(key);
    if (p === undefined) {
      p = SegmentLogPort.open({
        root: projectionRoot(this.opts.root, this.kind),
        shard,
        fsync: this.opts.fsync ?? 'onCommit',
        flushIntervalMs: this.opts.flushIntervalMs,
        segmentBytes: this.opts.segmentBytes ?? PROJECTION_SEGMENT_BYTES_DEFAULT,
        io: this.opts.io,
      }).then(async (log) => {
        try {
          const made = await this.make(log, shard);
          this.logs.set(key, log.segmentLog);
          return made;
        } catch (err) {
          // Close the log (and release its directory lock) so the next call can open it again.
          await log.close().catch(() => undefined);
          throw err;
        }
      });
      // A failed open is not cached: the next call tries again.
      p.catch(() => this.open.delete(key));
      this.open.set(key, p);
    }
    return p;
  }

  /** The segment log under `shard`'s projection, opening the projection when it is not. */
  async log(shard: ShardId): Promise<SegmentLog> {
    const p = this.get(shard);
    await p;
    const log = this.logs.get(shardDirName(shard));
    if (log === undefined || this.open.get(shardDirName(shard)) !== p)
      throw new ProjectionClosedError(`${this.kind} ${shardDirName(shard)}`);
    return log;
  }

  /**
   * Closes `shard`'s projection (its log and directory lock) and keeps it closed: a request
   * still in flight cannot open it again while a replica appends to its log. After `admit`, the
   * next `get` opens it again, replaying what the log gained meanwhile.
   */
  async release(shard: ShardId): Promise<void> {
    const key = shardDirName(shard);
    this.released.add(key);
    const p = this.open.get(key);
    if (p === undefined) return;
    this.open.delete(key);
    this.logs.delete(key);
    // A shard that failed to open holds nothing, and its opener saw the failure.
    await (await p.catch(() => undefined))?.close();
  }

  /** This broker leads `shard` again: it may be opened (a shard never released always may). */
  admit(shard: ShardId): void {
    this.released.delete(shardDirName(shard));
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.open.values()];
    this.open.clear();
    this.logs.clear();
    // A shard that failed to open has nothing to close, and its opener saw the failure.
    for (const p of all) await (await p.catch(() => undefined))?.close();
  }
}

/** Caches on `<root>/caches/`, or on another kind's root for group state. */
export function cacheShards(opts: ProjectionStoreOptions, kind: ProjectionKind = 'caches') {
  return new ProjectionShards<LogCache>(kind, opts, (log, shard) =>
    LogCache.open({
      log,
      now: opts.now,
      compaction: opts.compaction,
      name: `${kind} ${shardDirName(shard)}`,
      ...gateOf(opts, kind, shard),
    }),
  );
}

/** Counter logs on `<root>/counters/`. */
export function counterShards(opts: ProjectionStoreOptions) {
  return new ProjectionShards<CounterLog>('counters', opts, (log, shard) =>
    CounterLog.open({
      log,
      compaction: opts.compaction,
      name: `counters ${shardDirName(shard)}`,
      ...gateOf(opts, 'counters', shard),
    }),
  );
}

/** The commit gate of one shard's projection, when the store has one. */
function gateOf(
  opts: ProjectionStoreOptions,
  kind: ProjectionKind,
  shard: ShardId,
): { commitGate?: CommitGate } {
  const gate = opts.commitGate;
  return gate === undefined ? {} : { commitGate: (next) => gate(kind, shard, next) };
}
