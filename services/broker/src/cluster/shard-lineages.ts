/**
 * Which restart of a shard this broker's copy of it descends from. When an operator accepts the
 * loss of a shard's leader, the control plane restarts the shard at a new generation, on a
 * replica whose copy it continues (the floor's base) or empty, and the assignment carries that
 * generation as the shard's floor from then on (docs/control-plane.md, "Accepting a lost node's
 * data"). Any other copy kept from before may hold records the lost leader acked, where the
 * restart writes others at the same offsets: the lost node come back, a follower that was
 * down, a node that held the shard earlier. So a broker named by such an assignment whose
 * lineage file (lineage-markers.ts) is below the floor discards its copy (every log of the
 * shard, as a deleted shard's are), the base keeping its own, and the file then records the
 * floor; until then the shard is unserved (`not_ready`) and not followed. Otherwise such a
 * copy would be served, or its tail taken by a fencing leader, as if it were the shard's log.
 *
 * Bookkeeping only: the file I/O and the discard are the caller's (`settle`'s arguments).
 */
import type { ShardOwnerKind } from '@felix/replication';
import type { ShardId } from '@felix/storage';
import type { Logger } from 'pino';
import { type AssignmentRecord, shardKey } from './feed-items.js';
import type { LineageFiles } from './lineage-markers.js';

interface Wanted {
  owner: ShardOwnerKind;
  id: ShardId;
  floor: number;
  /** This broker's copy is the one the restart continued: recorded, not discarded. */
  base: boolean;
}

/** What a settle pass asks of the shard table. */
export interface LineageHooks {
  /** Closes what is open of the shard and removes every log of it this broker holds. */
  discardCopy(owner: ShardOwnerKind, id: ShardId): Promise<void>;
  closed(): boolean;
  retryLater(): void;
}

export class ShardLineages {
  /** Shards named to this broker whose copy is older than their floor, by shard key. */
  private readonly wanted = new Map<string, Wanted>();

  constructor(private readonly log: Logger) {}

  /** The feed assigned `a`: a copy here older than its floor gates the shard until it goes. */
  observe(a: AssignmentRecord, nodeId: string, files: LineageFiles | undefined): void {
    const floor = a.floor_generation ?? 0;
    // Without a data directory there is no copy to be older than anything.
    if (floor === 0 || files === undefined) return;
    if (a.leader !== nodeId && !a.replicas.includes(nodeId)) return;
    const id = { tenant: a.tenant_id, namespace: a.namespace, stream: a.stream, shard: a.shard };
    const held = files.floorOf(a.kind, id);
    if (held >= floor) return;
    const k = shardKey(a.kind, a.tenant_id, a.namespace, a.stream, a.shard);
    if ((this.wanted.get(k)?.floor ?? 0) >= floor) return;
    // An unreadable file's copy is adopted (lineage-markers.ts): its file is rewritten only.
    this.wanted.set(k, { owner: a.kind, id, floor, base: a.floor_base === nodeId || held < 0 });
  }

  /** The catalog deleted the name: its shards' files go with it, and no floor is written back
   *  for them (a creation of the name again starts without one). */
  forget(owner: ShardOwnerKind, t: string, ns: string, name: string): void {
    for (const [k, w] of this.wanted) {
      const { tenant, namespace, stream } = w.id;
      if (w.owner === owner && tenant === t && namespace === ns && stream === name)
        this.wanted.delete(k);
    }
  }

  /** Whether the shard waits for a copy older than its floor to be discarded. */
  pending(owner: ShardOwnerKind, t: string, ns: string, name: string, shard: number): boolean {
    return this.wanted.size > 0 && this.wanted.has(shardKey(owner, t, ns, name, shard));
  }

  /** Discards each gated shard's copy (the base's is kept), then records its floor; one that
   *  fails stays gated. */
  async settle(files: LineageFiles | undefined, hooks: LineageHooks): Promise<void> {
    for (const [k, w] of [...this.wanted]) {
      if (hooks.closed()) return;
      const shard = `${w.owner} ${w.id.tenant}/${w.id.namespace}/${w.id.stream}/${w.id.shard}`;
      try {
        if (files !== undefined) {
          if (!w.base) {
            this.log.warn(
              { shard, floor: w.floor, held: files.floorOf(w.owner, w.id) },
              'a copy of this shard from before its data was given up (an accepted loss) is discarded',
            );
            await hooks.discardCopy(w.owner, w.id);
          }
          await files.write(w.owner, w.id, w.floor);
        }
        // A higher floor heard during the awaits waits for the next pass.
        if (this.wanted.get(k) === w) this.wanted.delete(k);
      } catch (err) {
        this.log.warn({ err, shard }, 'discarding a copy from before its floor failed');
        hooks.retryLater();
      }
    }
  }
}
