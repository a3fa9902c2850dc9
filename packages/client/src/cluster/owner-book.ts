/**
 * What the client knows of the cluster: the brokers a topology answer named (node id → dial
 * address) and, per stream or cache, each shard's owner with its generation. Learned from
 * `topology` and `shard_owners` answers and from redirects; an owner is replaced only by one of
 * a generation at least as new, and dropped when a request finds it stale. Bounded
 * (CLUSTER_BROKERS_MAX, OWNER_BOOK_NAMES_MAX); pure, no I/O.
 */
import { CLUSTER_BROKERS_MAX, OWNER_BOOK_NAMES_MAX } from '../limits.js';

export type OwnerKind = 'stream' | 'cache';

export interface ShardOwnerEntry {
  nodeId?: string;
  /** Dial address (`quic://…`), when known. */
  addr?: string;
  generation: number;
  /** Why no broker serves the shard now (`not_assigned`, `leader_not_live`), when one said so. */
  unavailable?: string;
}

function nameKey(kind: OwnerKind, name: string): string {
  return `${kind}\u0000${name}`;
}

export class OwnerBook {
  /** node id → dial address, in the order learned (the reconnect order after the seeds). */
  private readonly brokers = new Map<string, string>();
  private readonly owners = new Map<string, Map<number, ShardOwnerEntry>>();
  private readonly widths = new Map<string, number>();
  private changes = 0;

  /** Changes whenever an owner or a width is learned or dropped: a caller that keeps what it
   *  looked up (a cache handle's connections per shard) compares it instead of looking again. */
  get version(): number {
    return this.changes;
  }

  /** Every dial address known from topology answers. */
  get brokerAddresses(): string[] {
    return [...this.brokers.values()];
  }

  /** Node ids known, with their addresses. */
  get brokerIds(): ReadonlyMap<string, string> {
    return this.brokers;
  }

  /** Replaces the broker list with a topology answer (an empty one keeps the old: a single
   *  node, or a broker whose book is not yet loaded). */
  learnBrokers(list: ReadonlyArray<{ nodeId: string; addr: string }>): void {
    if (list.length === 0) return;
    this.brokers.clear();
    for (const b of list.slice(0, CLUSTER_BROKERS_MAX)) this.brokers.set(b.nodeId, b.addr);
  }

  addressOf(nodeId: string): string | undefined {
    return this.brokers.get(nodeId);
  }

  ownerOf(kind: OwnerKind, name: string, shard: number): ShardOwnerEntry | undefined {
    return this.owners.get(nameKey(kind, name))?.get(shard);
  }

  /** Records one shard's owner unless a newer generation is known. Answers whether it did. */
  learnOwner(kind: OwnerKind, name: string, shard: number, owner: ShardOwnerEntry): boolean {
    const key = nameKey(kind, name);
    let shards = this.owners.get(key);
    if (shards === undefined) {
      if (this.owners.size >= OWNER_BOOK_NAMES_MAX) this.owners.clear();
      shards = new Map();
      this.owners.set(key, shards);
    }
    const known = shards.get(shard);
    if (known !== undefined && known.generation > owner.generation) return false;
    const entry = { ...owner };
    if (entry.addr === undefined && entry.nodeId !== undefined) {
      const addr = this.brokers.get(entry.nodeId);
      if (addr !== undefined) entry.addr = addr;
    }
    shards.set(shard, entry);
    this.changes++;
    return true;
  }

  /** Shards known of a name (the owners answer lists every shard). */
  widthOf(kind: OwnerKind, name: string): number | undefined {
    return this.widths.get(nameKey(kind, name));
  }

  /** Records how many shards an owners answer listed. */
  learnWidth(kind: OwnerKind, name: string, width: number): void {
    if (this.widths.size >= OWNER_BOOK_NAMES_MAX) this.widths.clear();
    this.widths.set(nameKey(kind, name), width);
    this.changes++;
  }

  /** Drops a shard's owner (a request found it stale); the next use asks again. */
  forgetOwner(kind: OwnerKind, name: string, shard: number): void {
    if (this.owners.get(nameKey(kind, name))?.delete(shard)) this.changes++;
  }

  /** Drops every owner at `addr` (its connection was lost: a failover is likely). */
  forgetAddress(addr: string): void {
    for (const shards of this.owners.values()) {
      for (const [shard, o] of shards) if (o.addr === addr) shards.delete(shard);
    }
    this.changes++;
  }
}
