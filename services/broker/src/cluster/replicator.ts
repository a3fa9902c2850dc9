/**
 * The leader's side of replication in the broker: one ShardShipper per durable stream shard
 * this broker leads whose replica set names followers, shipping over peer links that dial on
 * first use (and again after a failure) to the follower's internal address from the node book.
 * Links are per peer and shared by its shards (and, through the broker's PeerPool, with the
 * forwarder). A shard's shipper stops before its log closes, and is replaced when the shard's
 * generation changes.
 */
import { ShardShipper } from '@felix/replication';
import type { SegmentLog } from '@felix/storage';
import type { ShardRef } from '@felix/wire';
import { type PeerPoolDeps, PeerPool } from './peer-pool.js';

export interface ReplicatorDeps extends PeerPoolDeps {
  /** The broker's shared links (peer-pool.ts); absent: the replicator keeps its own. */
  pool?: PeerPool;
}

export class Replicator {
  private readonly shippers = new Map<
    string,
    { shipper: ShardShipper; generation: number; log: SegmentLog; followers: string[] }
  >();
  private readonly pool: PeerPool;
  /** Whether the pool is this replicator's own (closed with it) or the broker's. */
  private readonly ownsPool: boolean;

  constructor(private readonly deps: ReplicatorDeps) {
    this.ownsPool = deps.pool === undefined;
    this.pool = deps.pool ?? new PeerPool(deps);
  }

  /** Ships `log` to `followers` at `ref.generation` (restarting a shipper of an older one). */
  async ship(key: string, log: SegmentLog, ref: ShardRef, followers: string[]): Promise<void> {
    const current = this.shippers.get(key);
    if (current !== undefined && current.generation === ref.generation) return;
    await this.stop(key);
    if (followers.length === 0) return;
    // Just below the tail: the first batch overlaps one record, and each answer says where the
    // follower's log really ends.
    const start = Math.max(log.baseOffset, log.tailOffset - 1);
    const shipper = new ShardShipper({
      log,
      shard: ref,
      followers: followers.map((nodeId) => ({ nodeId, link: this.pool.link(nodeId), start })),
      onStopped: (nodeId, reason) =>
        this.deps.log.warn({ shard: key, follower: nodeId, reason }, 'shipping stopped'),
    });
    this.shippers.set(key, { shipper, generation: ref.generation, log, followers });
  }

  /** Stops shipping shard `key` (before its log closes). */
  async stop(key: string): Promise<void> {
    const current = this.shippers.get(key);
    if (current === undefined) return;
    this.shippers.delete(key);
    await current.shipper.stop();
  }

  /** What a follower confirmed of shard `key` (0 when unknown). */
  confirmed(key: string, nodeId: string): number {
    return this.shippers.get(key)?.shipper.confirmed(nodeId) ?? 0;
  }

  /** Records the leader holds that followers have not confirmed, over every shard shipped. */
  lagRecords(): number {
    let lag = 0;
    for (const s of this.shippers.values())
      for (const f of s.followers) lag += Math.max(0, s.log.tailOffset - s.shipper.confirmed(f));
    return lag;
  }

  async close(): Promise<void> {
    await Promise.all([...this.shippers.keys()].map((k) => this.stop(k)));
    if (this.ownsPool) await this.pool.close();
  }
}
