/**
 * The streams and caches the catalog deleted whose shards' files this broker has not removed
 * yet (the shard table's side of deleted-shards.ts). A name stays here from the feed's delete
 * (or a snapshot that no longer holds it) until the next reconcile pass closed each of its
 * shards and removed their files; meanwhile its shards are unserved (`refusal`), and not
 * followed (the leader is asked to come back), so a stream or cache created again under the
 * same name never opens, serves or replicates into the old files.
 */
import type { ShardOwnerKind } from '@felix/replication';
import type { ShardId } from '@felix/storage';
import type { Logger } from 'pino';
import { Refusal } from '../session/refusal.js';
import type { AssignmentRecord } from './feed-items.js';
import type { LineageFiles } from './lineage-markers.js';
import { type NamedConfig, NameIncarnations } from './name-incarnations.js';
import type { NameMarkerFiles } from './name-markers.js';
import { ShardLineages } from './shard-lineages.js';

/** What the shard table asks of the files of a deleted shard (deleted-shards.ts). */
export interface ShardFiles {
  /** Closes every log this broker holds of shard `id` of `owner` kind and removes its files. */
  discard(owner: ShardOwnerKind, id: ShardId): Promise<void>;
  /** The name-incarnation files (absent without a data directory: nothing to compare). */
  readonly markers?: NameMarkerFiles;
  /** The shard lineage files (absent without a data directory: no copy to be older). */
  readonly lineages?: LineageFiles;
}

/** A deleted stream or cache, by as many shards as this broker knew it with. */
export interface DeletedName {
  owner: ShardOwnerKind;
  tenant: string;
  namespace: string;
  name: string;
  shards: number;
}

/** What the table knew of a deleted name (its stream or cache config). */
type KnownConfig = Pick<DeletedName, 'tenant' | 'namespace' | 'name' | 'shards'>;

/** What a pass asks of the shard table while it removes a deleted name's files. */
export interface DiscardHooks {
  /** Stops serving and shipping what the table holds of the name (before its files go). */
  close(d: DeletedName): Promise<void>;
  /** The same for one shard (before a copy older than its floor goes: shard-lineages.ts). */
  closeShard(owner: ShardOwnerKind, id: ShardId): Promise<void>;
  /** Whether the table is closing (the pass stops). */
  closed(): boolean;
  /** Another pass later (a removal failed). */
  retryLater(): void;
}

function keyOf(owner: string, tenant: string, namespace: string, name: string): string {
  return `${owner}\u0000${tenant}\u0000${namespace}\u0000${name}`;
}

export class DeletedNames {
  private readonly names = new Map<string, DeletedName>();
  /** Names created again unheard (their files are of an earlier creation), and new names. */
  private readonly incarnations: NameIncarnations;
  /** Shards whose copy here is older than their floor (an accepted loss restarted them). */
  private readonly lineages: ShardLineages;

  constructor(private readonly log: Logger) {
    this.incarnations = new NameIncarnations(log);
    this.lineages = new ShardLineages(log);
  }

  /** The feed assigned `a`: a copy of it here older than its floor must go before it opens. */
  observeAssignment(a: AssignmentRecord, nodeId: string, files: ShardFiles | null): void {
    this.lineages.observe(a, nodeId, files?.lineages);
  }

  /** The catalog lists `config`: its files must be of this creation before it is served. */
  observe(owner: ShardOwnerKind, config: NamedConfig, files: ShardFiles | null): void {
    this.incarnations.observe(owner, config, files?.markers);
  }

  /** The catalog deleted a stream or cache this broker knew as `config` (undefined: it did not
   *  know it, and holds none of its files). Deleted again meanwhile: the widest is kept. */
  note(owner: ShardOwnerKind, config: KnownConfig | undefined): void {
    if (config === undefined) return;
    const { tenant, namespace, name } = config;
    const k = keyOf(owner, tenant, namespace, name);
    const shards = Math.max(config.shards, this.names.get(k)?.shards ?? 0);
    this.names.set(k, { owner, tenant, namespace, name, shards });
    this.incarnations.forget(owner, config);
    this.lineages.forget(owner, tenant, namespace, name);
  }

  /** Whether the name is unserved: its old files are being removed, or they are of an earlier
   *  creation of the name (name-incarnations.ts); given a `shard`, also whether that shard's
   *  copy is older than its floor (shard-lineages.ts). */
  has(owner: ShardOwnerKind, t: string, ns: string, name: string, shard?: number): boolean {
    if (this.names.size > 0 && this.names.has(keyOf(owner, t, ns, name))) return true;
    if (this.incarnations.pending(owner, t, ns, name)) return true;
    return shard !== undefined && this.lineages.pending(owner, t, ns, name, shard);
  }

  /** The refusal of a request for a shard of a name whose old files are still here, or null. */
  refusal(
    owner: ShardOwnerKind,
    t: string,
    ns: string,
    name: string,
    where: string,
    shard?: number,
  ) {
    if (!this.has(owner, t, ns, name, shard)) return null;
    const why = this.names.has(keyOf(owner, t, ns, name))
      ? `the files of the deleted ${owner} of this name are being removed`
      : this.incarnations.pending(owner, t, ns, name)
        ? `the files of an earlier ${owner} of this name are being removed`
        : 'its copy here from before its data was given up (an accepted loss) is being discarded';
    return new Refusal('shard_unavailable', `${where}: ${why} (not_ready)`, 'not_ready');
  }

  /** Removes the files of every deleted name (`hooks.close` first); one that fails stays, and
   *  is tried again later. */
  async discard(files: ShardFiles | null, hooks: DiscardHooks): Promise<void> {
    for (const [k, d] of [...this.names]) {
      if (hooks.closed()) return;
      const what = `${d.owner} ${d.tenant}/${d.namespace}/${d.name}`;
      try {
        await this.discardName(files, hooks, d);
        this.names.delete(k);
        this.log.info({ [d.owner]: what, shards: d.shards }, 'files of a deleted name removed');
      } catch (err) {
        this.log.warn({ err, [d.owner]: what }, 'removing the files of a deleted name failed');
        hooks.retryLater();
      }
    }
    // Then the incarnation files, each after the files of an earlier creation went.
    await this.incarnations.settle(files?.markers, {
      discardOld: (d) => this.discardName(files, hooks, d),
      closed: hooks.closed,
      retryLater: hooks.retryLater,
    });
    // Then the copies of single shards older than their floor.
    await this.lineages.settle(files?.lineages, {
      discardCopy: async (owner, id) => {
        await hooks.closeShard(owner, id);
        await files?.discard(owner, id);
      },
      closed: hooks.closed,
      retryLater: hooks.retryLater,
    });
  }

  private async discardName(files: ShardFiles | null, hooks: DiscardHooks, d: DeletedName) {
    await hooks.close(d);
    for (let i = 0; i < d.shards; i++) {
      const id = { tenant: d.tenant, namespace: d.namespace, stream: d.name, shard: i };
      await files?.discard(d.owner, id);
    }
  }
}
