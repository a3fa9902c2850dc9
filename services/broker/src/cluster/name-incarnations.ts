/**
 * Which creation of each catalog name this broker's files belong to. The control plane gives a
 * stream or cache a new `uid` every time it is created; this broker keeps, per name, the uid its
 * shard directories were written for (name-markers.ts). A name the catalog lists under another
 * uid than its file's was deleted and created again while this broker did not hear it (down, or
 * cut off from the feed): its old directories are discarded as a heard delete's are
 * (deleted-names.ts), before any of its shards opens, so the new name starts empty here too.
 * A name seen for the first time gets its file before its shards open. Until its file says
 * what the catalog says, a name is unserved (`not_ready`), as a deleted one is. The same
 * question Kafka answers with topic ids (KIP-516).
 *
 * Bookkeeping only: the file I/O and the discard are the caller's (`settle`'s arguments).
 * A name whose file is missing but whose directories exist (written before brokers kept these
 * files) is adopted as the catalog's current creation.
 */
import type { ShardOwnerKind } from '@felix/replication';
import type { Logger } from 'pino';
import type { MarkedName, NameMarkerFiles } from './name-markers.js';

/** What a name's file is to become: the catalog's uid, or '' once the name is deleted. */
interface Wanted extends MarkedName {
  uid: string;
  shards: number;
}

/** A catalog stream or cache as this bookkeeping reads it. */
export interface NamedConfig {
  tenant: string;
  namespace: string;
  name: string;
  shards: number;
  uid?: string;
}

/** A name's earlier creation, by as many shards as it had (deleted-names.ts's DeletedName). */
export interface OldCreation extends MarkedName {
  shards: number;
}

/** What a settle pass asks of the shard table. */
export interface SettleHooks {
  /** Closes what is open of a name's earlier creation and removes its shards' files. */
  discardOld(d: OldCreation): Promise<void>;
  closed(): boolean;
  retryLater(): void;
}

function keyOf(owner: string, tenant: string, namespace: string, name: string): string {
  return `${owner}\u0000${tenant}\u0000${namespace}\u0000${name}`;
}

export class NameIncarnations {
  /** The uid each name's file holds, as this process read or wrote it. */
  private readonly onDisk = new Map<string, string>();
  /** Names whose file is not yet what the catalog says (unserved meanwhile). */
  private readonly wanted = new Map<string, Wanted>();

  constructor(private readonly log: Logger) {}

  /** The catalog lists `c` (a snapshot or a change); a uid-less item is not tracked. */
  observe(owner: ShardOwnerKind, c: NamedConfig): void {
    if (c.uid === undefined) return;
    const k = keyOf(owner, c.tenant, c.namespace, c.name);
    const w = this.wanted.get(k);
    if (w !== undefined ? w.uid === c.uid : this.onDisk.get(k) === c.uid) return;
    const { tenant, namespace, name, shards, uid } = c;
    this.wanted.set(k, { owner, tenant, namespace, name, shards, uid });
  }

  /** The catalog deleted the name: its file goes (after its shards' files, in the same pass). */
  forget(owner: ShardOwnerKind, c: NamedConfig): void {
    const k = keyOf(owner, c.tenant, c.namespace, c.name);
    if (!this.onDisk.has(k) && !this.wanted.has(k)) return;
    const { tenant, namespace, name, shards } = c;
    this.wanted.set(k, { owner, tenant, namespace, name, shards, uid: '' });
  }

  /** Whether the name's file is not yet settled (its shards are not served). */
  pending(owner: ShardOwnerKind, t: string, ns: string, name: string): boolean {
    return this.wanted.size > 0 && this.wanted.has(keyOf(owner, t, ns, name));
  }

  /**
   * Brings every wanted name's file to what the catalog says, first discarding the files of an
   * earlier creation. Without marker files (no data directory) there is nothing to compare:
   * every name is settled as it is. A name that fails stays wanted for a later pass.
   */
  async settle(files: NameMarkerFiles | undefined, hooks: SettleHooks): Promise<void> {
    for (const [k, w] of [...this.wanted]) {
      if (hooks.closed()) return;
      try {
        if (files !== undefined) await this.settleOne(k, w, files, hooks);
        // A newer wish for the name (it changed during the awaits) waits for the next pass.
        if (this.wanted.get(k) === w) this.wanted.delete(k);
      } catch (err) {
        const what = `${w.owner} ${w.tenant}/${w.namespace}/${w.name}`;
        this.log.warn({ err, [w.owner]: what }, 'settling the incarnation file of a name failed');
        hooks.retryLater();
      }
    }
  }

  private async settleOne(
    k: string,
    w: Wanted,
    files: NameMarkerFiles,
    hooks: SettleHooks,
  ): Promise<void> {
    if (w.uid === '') {
      await files.remove(w);
      this.onDisk.delete(k);
      return;
    }
    const held = await files.read(w);
    if (held !== null && held.uid === w.uid) {
      this.onDisk.set(k, w.uid);
      return;
    }
    if (held !== null) {
      const what = `${w.owner} ${w.tenant}/${w.namespace}/${w.name}`;
      this.log.warn(
        { [w.owner]: what, old_uid: held.uid, uid: w.uid, shards: held.shards },
        'files of an earlier creation of this name are discarded (it was deleted and created again)',
      );
      const { owner, tenant, namespace, name } = w;
      await hooks.discardOld({ owner, tenant, namespace, name, shards: held.shards });
    }
    await files.write(w, { uid: w.uid, shards: w.shards });
    this.onDisk.set(k, w.uid);
  }
}
