/**
 * Which creation of each catalog name this broker's files belong to. The control plane gives a
 * stream or cache a new `uid` every time it is created; this broker keeps, per name, the uid its
 * shard directories were written for (name-markers.ts). A name the catalog lists under another
 * uid than its file's was deleted and created again while this broker did not hear it (down, or
 * cut off from the feed): its old directories are discarded as a heard delete's are
 * (deleted-names.ts), before any of its shards opens, so the new name starts empty here too:
 * until then it is unserved (`not_ready`), as a deleted one is. The files are read when the
 * broker starts, so a name is compared the moment the feed lists it, and one with no file yet
 * is served at once, its file written behind. The same question Kafka answers with topic ids
 * (KIP-516).
 *
 * Bookkeeping only: the file I/O and the discard are the caller's (`settle`'s arguments).
 * A name whose file is missing but whose directories exist (written before brokers kept these
 * files, or by a broker that crashed before the file was written) is adopted as the catalog's
 * current creation.
 */
import type { ShardOwnerKind } from '@felix/replication';
import type { Logger } from 'pino';
import type { MarkedName, NameMarkerFiles } from './name-markers.js';

/** What a name's file is to become: the catalog's uid, or '' once the name is deleted. */
interface Wanted extends MarkedName {
  uid: string;
  shards: number;
  /** The name's files are of another creation: unserved until they are discarded. A name
   *  with no file yet is served at once (nothing to discard; its file is written behind). */
  gate: boolean;
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
  /** Names whose file is not yet what the catalog says. */
  private readonly wanted = new Map<string, Wanted>();

  constructor(private readonly log: Logger) {}

  /**
   * The catalog lists `c` (a snapshot or a change). Compared at once with the name's file as
   * `files` knows it: another creation's files gate the name until they are discarded. A
   * uid-less item, or a broker without marker files, is not tracked.
   */
  observe(owner: ShardOwnerKind, c: NamedConfig, files: NameMarkerFiles | undefined): void {
    if (c.uid === undefined || files === undefined) return;
    const { tenant, namespace, name, shards, uid } = c;
    const k = keyOf(owner, tenant, namespace, name);
    const w = this.wanted.get(k);
    const held = files.known({ owner, tenant, namespace, name });
    if (w !== undefined ? w.uid === uid : held?.uid === uid) return;
    const gate = held !== null && held.uid !== uid;
    this.wanted.set(k, { owner, tenant, namespace, name, shards, uid, gate });
  }

  /** The catalog deleted the name: its file goes (after its shards' files, in the same pass). */
  forget(owner: ShardOwnerKind, c: NamedConfig): void {
    const k = keyOf(owner, c.tenant, c.namespace, c.name);
    const { tenant, namespace, name, shards } = c;
    this.wanted.set(k, { owner, tenant, namespace, name, shards, uid: '', gate: false });
  }

  /** Whether the name waits for an earlier creation's files to go (its shards unserved). */
  pending(owner: ShardOwnerKind, t: string, ns: string, name: string): boolean {
    return this.wanted.size > 0 && this.wanted.get(keyOf(owner, t, ns, name))?.gate === true;
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
        if (files !== undefined) await this.settleOne(w, files, hooks);
        // A newer wish for the name (it changed during the awaits) waits for the next pass.
        if (this.wanted.get(k) === w) this.wanted.delete(k);
      } catch (err) {
        const what = `${w.owner} ${w.tenant}/${w.namespace}/${w.name}`;
        this.log.warn({ err, [w.owner]: what }, 'settling the incarnation file of a name failed');
        hooks.retryLater();
      }
    }
  }

  private async settleOne(w: Wanted, files: NameMarkerFiles, hooks: SettleHooks): Promise<void> {
    if (w.uid === '') {
      await files.remove(w);
      return;
    }
    const held = files.known(w);
    if (held !== null && held.uid === w.uid) return;
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
  }
}
