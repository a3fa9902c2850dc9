/**
 * Which followers keep failing, rolled up per follower node so a broker that goes down is
 * warned of once, not once per shard and log it follows (a broker following 100 shards ships
 * three or more logs of each to it). A shard log's shipper counts as failing once it has backed
 * off `after` times in a row; the first one of a node is warned of at once, naming how many of
 * the node's shard logs fail so far; after that one warning every `every` backoffs of the
 * node's oldest failing log, with the count then. A node is said to be back when its last
 * failing log answers again. A log whose shipper stops (the shard moved, a new generation)
 * leaves the tally without a word. No I/O: the replicator logs what this decides. Bounded by
 * the shippers: one entry per shard log and follower that is failing now.
 */

/** What to say of a follower node after one of its shard logs backed off or answered. */
export type FollowerNotice =
  | { kind: 'warn'; node: string; logs: number }
  | { kind: 'back'; node: string; logs: number };

export class FailingFollowers {
  /** Per node: its failing shard logs (insertion order: the oldest first). */
  private readonly failing = new Map<string, Set<string>>();
  /** Per node: how many of its logs failed since its last warning series began. */
  private readonly peak = new Map<string, number>();

  constructor(
    private readonly after: number,
    private readonly every: number,
  ) {}

  /** Shard log `entry`'s shipper backed off for the `backoffs`th time in a row from `node`. */
  backoff(node: string, entry: string, backoffs: number): FollowerNotice | null {
    if (backoffs < this.after) return null;
    let logs = this.failing.get(node);
    if (logs === undefined) {
      logs = new Set();
      this.failing.set(node, logs);
    }
    const first = logs.size === 0;
    logs.add(entry);
    this.peak.set(node, Math.max(this.peak.get(node) ?? 0, logs.size));
    const oldest = logs.values().next().value;
    const due =
      oldest === entry && backoffs > this.after && (backoffs - this.after) % this.every === 0;
    if (!first && !due) return null;
    return { kind: 'warn', node, logs: logs.size };
  }

  /** Shard log `entry`'s shipper reached `node` again after `backoffs` in a row. */
  resumed(node: string, entry: string, backoffs: number): FollowerNotice | null {
    if (backoffs < this.after) return null;
    const logs = this.failing.get(node);
    if (logs === undefined || !logs.delete(entry) || logs.size > 0) return null;
    const peak = this.peak.get(node) ?? 1;
    this.failing.delete(node);
    this.peak.delete(node);
    return { kind: 'back', node, logs: peak };
  }

  /** Shard log `entry`'s shipper stopped: it no longer fails for any node. */
  forget(entry: string): void {
    for (const [node, logs] of this.failing) {
      if (!logs.delete(entry) || logs.size > 0) continue;
      this.failing.delete(node);
      this.peak.delete(node);
    }
  }

  /** Shard logs failing to `node` now. */
  failingLogs(node: string): number {
    return this.failing.get(node)?.size ?? 0;
  }
}
