/**
 * Which followers keep failing, rolled up per follower node so a broker that goes down is
 * warned of once, not once per shard and log it follows (a broker following 100 shards ships
 * three or more logs of each to it). A shard log's shipper counts as failing once it has backed
 * off `after` times in a row; the first one of a node is warned of at once, naming how many of
 * the node's shard logs fail so far; after that one warning every `every` backoffs of the
 * node's oldest failing log, with the count then. A node is said to be back when its last
 * failing log answers again, with how many of its logs failed in the series. A log whose
 * shipping to the node stops (the shard moved, a new generation, the follower halted or
 * fenced) leaves the tally without a word. No I/O: the replicator logs what this decides.
 * Bounded by the shippers: one entry per shard log and follower that is failing now.
 */

/** What to say of a follower node after one of its shard logs backed off or answered. */
export type FollowerNotice =
  | { kind: 'warn'; node: string; logs: number }
  | { kind: 'back'; node: string; logs: number };

export class FailingFollowers {
  /** Per node: its failing shard logs (insertion order: the oldest first). */
  private readonly failing = new Map<string, Set<string>>();
  /** Per node: every log that failed since its first warning (those that stopped left out). */
  private readonly series = new Map<string, Set<string>>();

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
    let series = this.series.get(node);
    if (series === undefined) {
      series = new Set();
      this.series.set(node, series);
    }
    series.add(entry);
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
    const failed = this.series.get(node)?.size ?? 1;
    this.failing.delete(node);
    this.series.delete(node);
    return { kind: 'back', node, logs: failed };
  }

  /** Shard log `entry` no longer ships to `node` (or, without `node`, to any node). */
  forget(entry: string, node?: string): void {
    for (const [n, logs] of this.failing) {
      if (node !== undefined && n !== node) continue;
      this.series.get(n)?.delete(entry);
      if (!logs.delete(entry) || logs.size > 0) continue;
      this.failing.delete(n);
      this.series.delete(n);
    }
  }

  /** Shard logs failing to `node` now. */
  failingLogs(node: string): number {
    return this.failing.get(node)?.size ?? 0;
  }
}
