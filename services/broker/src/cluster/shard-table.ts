/**
 * What a control-plane broker serves: the streams of the catalog feed and the assignments of the
 * assignment feed, reconciled into the broker's Catalog. A stream of the catalog is installed
 * with all its shards (so routing by key and `stream_shards` see its real width); a shard this
 * node leads is opened (its SegmentLog for a durable stream), any other shard is an idle
 * placeholder the session never touches, because `refuse()` answers for it first: `not_leader`
 * naming the leader, or `shard_unavailable` while no one (or not yet this node) serves it.
 * Caches of the catalog feed are defined in the broker's cache service, which opens their shards
 * lazily; a cache shard is served when this node leads it (`refuseMessage` gates the requests),
 * and, with replication on, only once this node's follower copies of its cache and counter logs
 * are closed. With replication, every durable log of a led shard ships: a stream's records, its
 * group cursors and dead letters, a cache shard's cache and counter logs (riding-logs.ts).
 *
 * Reconciling runs one pass at a time; feed changes arriving meanwhile mark it dirty and one more
 * pass follows. A shard stops being served (refused) before its in-flight appends settle and its
 * subscribers and log are closed.
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { type Catalog, type OpenStore, type StreamRuntime, streamKey } from '../catalog/catalog.js';
import { routeAtIngress, routeWriteAtIngress } from '@felix/router';
import type { LogOptions, ShardId } from '@felix/storage';
import type { Message, ShardRef } from '@felix/wire';
import { type ReplicaLogKind, logsOwnedBy } from '@felix/replication';
import type { BrokerConfig, CacheConfig, StreamConfig } from '../config/types.js';
import { FENCE_RETRY_AFTER_MS, RIDING_LOG_RETRY_MS } from '../limits.js';
import type { Refusal, ShardOwner } from '../session/refusal.js';
import { applyRetention, retentionOf } from '../streams/durable-store.js';
import { Shard, type ShardHooks, type ShardStore } from '../streams/shard.js';
import { CACHE_WRITES, GROUP_WRITES, drainingWrite } from './shard-writes.js';
import { type DeletedName, DeletedNames, type ShardFiles } from './deleted-names.js';
import type { FeedHandler } from './feed-follower.js';
import type { Replicator } from './replicator.js';
import { type RidingLogKind, type RidingLogs, labelLeaderGeneration } from './riding-logs.js';
import { type NewLeaderMark, openThroughGenerationStart } from './generation-start.js';
import {
  cacheShardOfMessage,
  idOf,
  idOfStream,
  ownerRefusal,
  refOf,
  refOfAssignment,
  sameShape,
  NEEDS_DATA_DIR,
  keepNewerGenerations,
  latestConfig,
  ledWithCopies,
  streamKeyOfChange,
  takeOut,
  underReplicated,
  underReplicatedGauge,
} from './shard-refs.js';
import type { CacheQuorum } from './cache-leading.js';
import { CommittingCaches, fenceLedCache, holdCacheQuorum } from './cache-leading.js';
import { CoalescedRuns } from '../util/coalesced-runs.js';
import { type Fence, type FencedStore, fencedOpen } from './fenced-open.js';
import { type LeaseView, leaseRefusal } from './lease.js';
import { movingRefusal } from './transfers.js';
import { OpenTroubles } from './open-troubles.js';
import {
  type AssignmentRecord,
  type ShardKind,
  assignmentFrom,
  cacheFromCatalog,
  posInt,
  replicaGenerationOf,
  shardKey,
  shardLabel,
  str,
  streamFromCatalog,
} from './feed-items.js';

export type { AssignmentRecord, ShardKind } from './feed-items.js';

type HeldShard = { generation: number };

/** Where the caches of the catalog feed go (the broker's CacheService). */
export interface CacheRegistry {
  define(c: CacheConfig): void;
  forget(tenant: string, namespace: string, name: string): void;
}

export class ShardTable {
  private readonly streams = new Map<string, StreamConfig>();
  private readonly caches = new Map<string, CacheConfig>();
  /** Client addresses of the other nodes (the address book), named in `not_leader` refusals. */
  nodeAddresses = new Map<string, string>();
  /** Lifecycle of each node of the book (`live`, `draining`, `down`, `left`): topology's. */
  nodeLifecycles = new Map<string, string>();
  /** Node id → internal address (replication dials it). */
  peerAddresses = new Map<string, string>();
  /** Set by the broker when it has an internal listener: the leader's shippers, the follower
   *  logs its replica server holds (released before this table opens one as the leader's), and
   *  the logs riding with a shard beside a stream's records (group state, caches, counters). */
  replication: {
    replicator: Replicator;
    releaseFollower: (ref: ShardRef, log: ReplicaLogKind) => Promise<void>;
    /** Applies the catalog's retention to the open follower copies (a PATCH, no reopen). */
    refreshFollowerRetention: () => Promise<number>;
    /** Where this broker keeps `log` of a shard (its follower copy and its leader log alike). */
    logOptions: (ref: ShardRef, log: ReplicaLogKind) => LogOptions;
    riding: RidingLogs;
  } | null = null;
  /** Set when the assignments feed's sequence went back: its next snapshot keeps newer entries. */
  assignmentsWentBack = false;
  /** Called when the assignment feed changed (the cluster node refreshes its node book). */
  onAssignments: (() => void) | null = null;
  /** Set by the broker once its cache service exists (absent: caches are not served). */
  cacheRegistry: CacheRegistry | null = null;
  /** True once the broker's stop began: writes are refused `draining` (shard-writes.ts). */
  draining: () => boolean = () => false;
  /** Where a deleted stream's or cache's files go (null: they stay, tests). */
  shardFiles: ShardFiles | null = null;
  /** This broker's write lease (cluster/lease.ts); null writes without one (tests). */
  lease: LeaseView | null = null;
  /** While true, the replicated shards it leads stay closed (empty data dir: fresh-storage.ts). */
  awaitingFailover = false;
  private readonly assignments = new Map<string, AssignmentRecord>();
  private readonly installed = new Map<string, StreamRuntime>();
  private readonly held = new Map<string, HeldShard>();
  /** Cache shards this node leads and serves, with replication on (their logs ship). */
  private readonly heldCaches = new Map<string, AssignmentRecord>();
  /** Shards this node leads that it could not open yet, and why (open-troubles.ts). */
  private readonly troubles = new OpenTroubles();
  /** Streams and caches the catalog deleted whose files are not removed yet (unserved). */
  private readonly deleted: DeletedNames;
  private readonly passes = new CoalescedRuns(
    () => this.reconcile(),
    (err) => this.log.error({ err }, 'reconcile pass failed'),
    () => this.closed,
  );
  private closed = false;
  private readonly heldGauge: Gauge;
  /** Led quorum cache shards not served until a majority holds what they took. */
  private readonly committing: CommittingCaches;
  private readonly ring: { records: number; bytes: number };

  constructor(
    private readonly cfg: BrokerConfig,
    private readonly catalog: Catalog,
    private readonly nodeId: string,
    private readonly openStore: OpenStore,
    private readonly hooks: ShardHooks,
    private readonly log: Logger,
    registry: Registry,
  ) {
    this.ring = { records: cfg.memory.ring_records, bytes: cfg.memory.ring_bytes };
    this.deleted = new DeletedNames(log);
    this.committing = new CommittingCaches(registry, log);
    this.heldGauge = new Gauge({
      name: 'felix_broker_cluster_shards_held',
      help: 'Stream shards this broker leads and serves, as assigned by the control plane',
      registers: [registry],
    });
    underReplicatedGauge(registry, () => this.underReplicatedShards());
  }

  /** Replicated shards (stream or cache) the feed names this node leader of. */
  ledWithCopies(): number {
    return ledWithCopies(this.assignments.values(), this.nodeId);
  }

  /** Whether this node leads `a` and may open it now. */
  private opens(a: AssignmentRecord | undefined): a is AssignmentRecord {
    return a?.leader === this.nodeId && (!this.awaitingFailover || a.replicas.length === 1);
  }

  /** Led stream and cache shards whose replica set is smaller than their replication factor. */
  underReplicatedShards(): number {
    const { held, heldCaches, assignments } = this;
    const n = underReplicated(held.keys(), assignments, this.streams);
    return n + underReplicated(heldCaches.keys(), assignments, this.caches);
  }

  /** Handler of the streams catalog feed. */
  readonly streamsFeed: FeedHandler = {
    snapshot: (items) => {
      const before = new Map(this.streams);
      this.streams.clear();
      for (const item of items) this.putStream(item);
      // A snapshot taken again (changes were missed): what it no longer holds was deleted.
      for (const [key, s] of before) if (!this.streams.has(key)) this.deleted.note('stream', s);
      this.kick();
    },
    changes: (items) => {
      for (const c of items) {
        if (c.op !== 'deleted') this.putStream(c.value);
        else this.deleted.note('stream', takeOut(this.streams, streamKeyOfChange(c)));
      }
      this.kick();
    },
  };

  /** Handler of the caches catalog feed: caches are defined at once, their shards gated by `refuse`. */
  readonly cachesFeed: FeedHandler = {
    snapshot: (items) => {
      const before = new Map(this.caches);
      this.caches.clear();
      for (const item of items) this.putCache(item);
      for (const [key, c] of before) {
        if (this.caches.has(key)) continue;
        this.deleted.note('cache', c);
        this.cacheRegistry?.forget(c.tenant, c.namespace, c.name);
      }
      this.kick();
    },
    changes: (items) => {
      for (const c of items) {
        if (c.op !== 'deleted') {
          this.putCache(c.value);
          continue;
        }
        const t = String(c.key.tenant_id);
        const ns = String(c.key.namespace);
        const name = String(c.key.cache);
        this.deleted.note('cache', this.caches.get(streamKey(t, ns, name)));
        this.caches.delete(streamKey(t, ns, name));
        this.cacheRegistry?.forget(t, ns, name);
      }
      this.kick();
    },
  };

  private putCache(item: unknown): void {
    const c = cacheFromCatalog(item, this.cfg);
    if (c === null) {
      this.log.warn({ item }, 'ignoring a malformed cache from the catalog feed');
      return;
    }
    this.caches.set(streamKey(c.tenant, c.namespace, c.name), c);
    this.deleted.observe('cache', c, this.shardFiles);
    // A led shard's writes wait for the mark before the cache is served under this config
    // (its assignment may have come first); the next pass ships with the mark.
    for (const a of this.heldCaches.values())
      if (a.tenant_id === c.tenant && a.namespace === c.namespace && a.stream === c.name)
        this.cacheQuorum(a);
    this.cacheRegistry?.define(c);
    this.kick();
  }

  /**
   * The refusal for a cache, counter, watch or group request on a shard this node does not serve,
   * or null (also for an unknown cache, which its handler answers `not_found`).
   */
  refuseMessage(msg: Message): Refusal | null {
    const m = msg as unknown as Record<string, unknown>;
    const stopping = drainingWrite(this.draining(), String(m.type));
    const t = str(m.tenant_id);
    const ns = str(m.namespace);
    if (stopping !== null || t === null || ns === null) return stopping;
    const cacheName = str(m.cache);
    if (cacheName !== null) {
      const c = this.caches.get(streamKey(t, ns, cacheName));
      if (c === undefined) return null;
      const shard = cacheShardOfMessage(m, c.shards);
      if (shard === null || shard >= c.shards) return null;
      // Every cache request follows the assignment: a get answered from a copy being let go
      // would miss a put already forwarded to the new leader.
      const write = CACHE_WRITES.has(String(m.type));
      return this.refuse('cache', t, ns, cacheName, shard, write, true);
    }
    const streamName = str(m.stream);
    const shard = posInt(m.shard);
    if (streamName === null || shard === null) return null;
    const s = this.streams.get(streamKey(t, ns, streamName));
    if (s === undefined || shard >= s.shards) return null;
    // Group requests move claims and cursors: on a copy being let go they would be lost, and
    // an ack answered without the lease may be one the shard's next leader never hears of.
    const write = GROUP_WRITES.has(String(m.type));
    return this.refuse('stream', t, ns, streamName, shard, write, true);
  }

  /** Handler of the shard-assignments feed. */
  readonly assignmentsFeed: FeedHandler = {
    snapshot: (items) => {
      const before = this.assignmentsWentBack ? new Map(this.assignments) : null;
      this.assignments.clear();
      for (const item of items) this.putAssignment(item);
      this.assignmentsWentBack = false;
      if (before !== null) keepNewerGenerations(before, this.assignments, this.log);
      this.onAssignments?.();
      this.kick();
    },
    changes: (items) => {
      for (const c of items) {
        if (c.op === 'unassigned') {
          const k = c.key;
          this.assignments.delete(
            shardKey(
              String(k.kind),
              String(k.tenant_id),
              String(k.namespace),
              String(k.stream),
              Number(k.shard),
            ),
          );
        } else this.putAssignment(c.value);
      }
      this.onAssignments?.();
      this.kick();
    },
  };

  private putStream(item: unknown): void {
    const s = streamFromCatalog(item, this.cfg);
    if (s === null) {
      this.log.warn({ item }, 'ignoring a malformed stream from the catalog feed');
      return;
    }
    this.streams.set(streamKey(s.tenant, s.namespace, s.name), s);
    this.deleted.observe('stream', s, this.shardFiles);
  }

  private putAssignment(item: unknown): void {
    const a = assignmentFrom(item);
    if (a === null) {
      this.log.warn({ item }, 'ignoring a malformed assignment from the feed');
      return;
    }
    const key = shardKey(a.kind, a.tenant_id, a.namespace, a.stream, a.shard);
    const prev = this.assignments.get(key);
    // Applied by generation: anything at or below the one held is old news.
    if (prev !== undefined && prev.generation >= a.generation) return;
    this.assignments.set(key, a);
    this.deleted.observeAssignment(a, this.nodeId, this.shardFiles);
  }

  /** The generation at which this node follows a shard (a replica, not its leader). */
  replicaGeneration(kind: ShardKind, t: string, ns: string, name: string, shard: number) {
    return replicaGenerationOf(
      this.assignments.get(shardKey(kind, t, ns, name, shard)),
      this.nodeId,
    );
  }

  /** A shard's generation as the feed says, and whether this node follows it there. */
  replicaRole(kind: ShardKind, t: string, ns: string, name: string, shard: number) {
    // The files of a deleted one are being removed: its leader is asked to come back later.
    if (this.deleted.has(kind, t, ns, name, shard)) return undefined;
    const a = this.assignments.get(shardKey(kind, t, ns, name, shard));
    if (a === undefined) return undefined;
    const follower = replicaGenerationOf(a, this.nodeId) !== undefined;
    return { generation: a.generation, follower };
  }

  /** A stream of the catalog feed (a follower's copy takes its retention and consistency). */
  streamConfig(t: string, ns: string, name: string): StreamConfig | undefined {
    return this.streams.get(streamKey(t, ns, name));
  }

  /** The served creation id of a stream or cache (none while an older one's files remain). */
  uidOf(kind: ShardKind, t: string, ns: string, name: string): string | undefined {
    if (this.deleted.has(kind, t, ns, name)) return undefined;
    return (kind === 'cache' ? this.caches : this.streams).get(streamKey(t, ns, name))?.uid;
  }

  /** The assignment of one shard, if the feed has one. */
  assignment(kind: ShardKind, t: string, ns: string, name: string, shard: number) {
    return this.assignments.get(shardKey(kind, t, ns, name, shard));
  }

  /** Whether this node serves a shard now. */
  private serving(kind: ShardKind, key: string): boolean {
    if (this.held.has(key)) return true;
    if (this.heldCaches.has(key)) return !this.committing.has(key);
    // Cache shards open lazily in the cache service: without replication, leading one is
    // serving it; with it, it is served once its follower copies are released (reconcile).
    const lead = this.assignments.get(key)?.leader === this.nodeId;
    return kind === 'cache' && lead && this.replication === null;
  }

  /** What this node knows of a shard: its assignment and whether it serves it (routing). */
  routeView(kind: ShardKind, t: string, ns: string, name: string, shard: number) {
    const key = shardKey(kind, t, ns, name, shard);
    return { view: this.assignments.get(key), serving: this.serving(kind, key) };
  }

  /** The client address of a node from the address book (named in redirects). */
  clientAddress(nodeId: string): string | undefined {
    return this.nodeAddresses.get(nodeId);
  }

  /**
   * Null when this node serves the shard; otherwise the refusal to answer with (`not_leader`
   * naming the leader, its client address and generation, which a write's handler forwards
   * instead). A `write` is also refused, retryably, while this broker's lease is lapsed (no
   * heartbeat accepted for 0.75 L): the control plane may be about to give the shard to another
   * broker. A write, and a request that `followsAssignment`, goes to the leader the assignment
   * names at once; a stream read may stay until this broker lets the shard go.
   */
  refuse(
    kind: ShardKind,
    t: string,
    ns: string,
    name: string,
    shard: number,
    write = false,
    followsAssignment = write,
  ): Refusal | null {
    const key = shardKey(kind, t, ns, name, shard);
    const where = `${kind} ${t}/${ns}/${name} shard ${shard}`;
    const { view, serving } = this.routeView(kind, t, ns, name, shard);
    const mine = view?.leader === this.nodeId ? shard : undefined; // a floor gates what it serves
    const deleted = this.deleted.refusal(kind, t, ns, name, where, mine);
    if (deleted !== null) return deleted;
    const routeOf = followsAssignment ? routeWriteAtIngress : routeAtIngress;
    const route = routeOf(this.nodeId, view, serving);
    if (route.kind === 'local') return write ? this.leaseRefusal(where, key) : null;
    if (route.kind === 'remote') {
      const owner: ShardOwner = {
        kind,
        tenant: t,
        namespace: ns,
        name,
        shard,
        nodeId: route.leader,
        generation: route.generation,
        addr: this.nodeAddresses.get(route.leader),
      };
      return ownerRefusal(owner, this.nodeId, this.nodeLifecycles.get(route.leader));
    }
    return this.troubles.refusal(where, route.reason, key);
  }

  /** Null while this broker holds its lease and shard `key` (when named) is not moving
   *  (transfers.ts); else the refusal of a write. */
  leaseRefusal(where: string, key?: string): Refusal | null {
    const moving = movingRefusal(this.replication?.replicator, key, where);
    return moving ?? (this.lease === null ? null : leaseRefusal(this.lease, where, this.nodeId));
  }

  /** Runs a reconcile pass soon (coalesced). */
  kick(): void {
    this.passes.kick();
  }

  /** Resolves once no pass is running and none is owed. */
  settled(): Promise<void> {
    return this.passes.settled();
  }

  private leads(s: StreamConfig, i: number): AssignmentRecord | null {
    const a = this.assignments.get(shardKey('stream', s.tenant, s.namespace, s.name, i));
    return this.opens(a) ? a : null;
  }

  private placeholder(s: StreamConfig, i: number): Shard {
    return new Shard(`${s.tenant}/${s.namespace}/${s.name}/${i}`, null, this.ring, this.hooks);
  }

  /** Stops serving an installed stream: out of the catalog, every shard released. */
  private async closeStream(key: string, rt: StreamRuntime): Promise<void> {
    // Out of the catalog first: a subscriber ended by the release below that subscribes
    // again must hear not_found, not find the stream still listed with a placeholder shard
    // that never ends its subscription (or not_leader, which a client retries for ever).
    this.catalog.removeStream(rt.config.tenant, rt.config.namespace, rt.config.name);
    this.installed.delete(key);
    for (let i = 0; i < rt.shards.length; i++) await this.release(rt, i);
    this.log.info(
      { stream: `${rt.config.tenant}/${rt.config.namespace}/${rt.config.name}` },
      'stream closed',
    );
  }

  /** Before a deleted name's files go: its stream closed, its led cache shards unshipped. */
  private readonly closeDeleted = async (d: DeletedName): Promise<void> => {
    const key = streamKey(d.tenant, d.namespace, d.name);
    const rt = d.owner === 'stream' ? this.installed.get(key) : undefined;
    if (rt !== undefined) await this.closeStream(key, rt);
    for (let i = 0; i < d.shards; i++)
      await this.closeShard(d.owner, { ...d, stream: d.name, shard: i });
  };

  /** Before one shard's files go: unserved (a led stream shard released), unshipped. */
  private readonly closeShard = async (owner: ShardKind, id: ShardId): Promise<void> => {
    const sk = shardKey(owner, id.tenant, id.namespace, id.stream, id.shard);
    this.troubles.clear(sk);
    this.committing.drop(sk);
    if (this.heldCaches.delete(sk)) await this.replication?.replicator.stop(sk);
    const rt = this.installed.get(streamKey(id.tenant, id.namespace, id.stream));
    if (owner === 'stream' && rt !== undefined) await this.release(rt, id.shard);
  };

  private async reconcile(): Promise<void> {
    await this.deleted.discard(this.shardFiles, {
      close: this.closeDeleted,
      closeShard: this.closeShard,
      closed: () => this.closed,
      retryLater: () => setTimeout(() => this.kick(), RIDING_LOG_RETRY_MS).unref(),
    });
    // Streams gone from the catalog, or re-created with another width: stop serving them.
    for (const [key, rt] of this.installed) {
      const want = this.streams.get(key);
      if (want !== undefined && sameShape(want, rt.config)) continue;
      await this.closeStream(key, rt);
    }
    for (const [key, s] of this.streams) {
      if (this.closed) return;
      // Deleted meanwhile: its old files go first (the next pass), then it opens.
      if (this.deleted.has('stream', s.tenant, s.namespace, s.name)) continue;
      let rt = this.installed.get(key);
      if (rt === undefined) {
        rt = {
          config: s,
          shards: Array.from({ length: s.shards }, (_, i) => this.placeholder(s, i)),
        };
        this.catalog.installStream(rt);
        this.installed.set(key, rt);
      }
      for (let i = 0; i < s.shards; i++) {
        // A copy older than the shard's floor is being discarded: not opened meanwhile.
        const a = this.deleted.has('stream', s.tenant, s.namespace, s.name, i)
          ? null
          : this.leads(s, i);
        const sk = shardKey('stream', s.tenant, s.namespace, s.name, i);
        const held = this.held.get(sk);
        if (a === null) {
          this.troubles.clear(sk);
          if (held) await this.release(rt, i);
          continue;
        }
        if (held) {
          held.generation = a.generation;
          applyRetention(rt.shards[i], retentionOf(this.cfg, s), this.log);
          await this.shipIfReplicated(rt, i, a);
          continue;
        }
        const failure = this.troubles.failure(sk);
        if (failure !== undefined && failure.generation >= a.generation) continue;
        await this.acquire(rt, i, a.generation);
      }
    }
    await this.reconcileCaches();
    void this.replication?.refreshFollowerRetention(); // deletions run behind the pass
    this.heldGauge.set(this.held.size);
  }

  /** With replication on: serves and ships the cache shards this node leads, releases others. */
  private async reconcileCaches(): Promise<void> {
    if (this.replication === null) return;
    for (const [key, held] of this.heldCaches) {
      const a = this.assignments.get(key);
      if (a !== undefined && a.leader === this.nodeId) continue;
      this.heldCaches.delete(key);
      this.committing.drop(key);
      await this.replication.replicator.stop(key);
      await this.replication.riding.release(idOf(held), 'cache');
      this.log.info({ cache_shard: shardLabel(key) }, 'cache shard released');
    }
    for (const [key, a] of this.assignments) {
      if (this.closed) return;
      if (a.kind !== 'cache' || !this.troubles.keptIf(this.opens(a), key)) continue;
      // Deleted meanwhile: its old files go first (the next pass), then it is served.
      if (this.deleted.has('cache', a.tenant_id, a.namespace, a.stream, a.shard)) continue;
      if (!this.heldCaches.has(key)) {
        // Before serving: this node's follower copies are the same files the leader opens.
        for (const log of logsOwnedBy('cache'))
          await this.replication.releaseFollower(refOfAssignment(a), log);
        // A quorum shard is served only once fenced, with the furthest tail of each log taken.
        const retryLater = (why?: string) => this.retryOpen(key, why);
        const ctx = { log: this.log, retryLater };
        if (!(await fenceLedCache(this.replication, this.cacheOf(a), a, this.nodeId, ctx)))
          continue;
        this.troubles.clear(key); // fenced: no longer waiting for a majority
        this.replication.riding.admit(idOf(a), 'cache');
        // Served once a majority holds what its logs replay (cache-leading.ts).
        this.committing.hold(key, this.replication, this.cacheQuorum(a), a, this.nodeId);
      }
      // Before it is served: a quorum shard's writes wait for the mark from the first one; its
      // logs are labelled with this generation (shipRiding), which a resumed watch parts at.
      const quorum = this.cacheQuorum(a);
      await this.shipRiding(key, a, 'cache', quorum);
      this.heldCaches.set(key, a);
    }
  }

  /** A cache of the catalog feed, by the shard's names (an assignment's or a report's). */
  cacheOf(
    a: Pick<AssignmentRecord, 'tenant_id' | 'namespace' | 'stream'>,
  ): CacheConfig | undefined {
    return this.caches.get(streamKey(a.tenant_id, a.namespace, a.stream));
  }

  /** A led cache shard's commit waits (cache-leading.ts); null when its writes wait for none. */
  private cacheQuorum(a: AssignmentRecord): CacheQuorum | null {
    if (this.replication === null) return null;
    const timeoutMs = this.cfg.broker.publish_quorum_timeout_ms;
    return holdCacheQuorum(this.replication, this.cacheOf(a), a, this.nodeId, timeoutMs);
  }

  /** Ships the logs riding with a led shard (group state of a stream shard; a cache shard's
   *  logs) to the followers its replica set names; a log that cannot open is retried on the
   *  next pass (the shard is served regardless: its writes wait for nothing shipped). */
  private async shipRiding(
    key: string,
    a: AssignmentRecord,
    owner: 'stream' | 'cache',
    quorum: CacheQuorum | null = null,
  ) {
    const replication = this.replication;
    if (replication === null) return;
    const followers = a.replicas.filter((id) => id !== this.nodeId);
    for (const kind of logsOwnedBy(owner)) {
      if (kind === 'stream') continue;
      if (followers.length === 0) {
        await replication.replicator.stop(key, kind);
        continue;
      }
      try {
        const log = await replication.riding.open(idOf(a), kind as RidingLogKind);
        if (log === null) continue;
        // Once per generation: its records written as leader are labelled with it.
        if (replication.replicator.shippingGeneration(key, kind) !== a.generation)
          await labelLeaderGeneration(log, a.generation);
        const waits =
          quorum === null ? undefined : kind === 'cache' ? quorum.cache : quorum.counters;
        const onMark = (offset: number) => waits?.advance(offset);
        await replication.replicator.ship(key, log, refOfAssignment(a), followers, {
          kind,
          ...(waits === undefined ? {} : { quorum: { members: quorum!.members, onMark } }),
        });
      } catch (err) {
        this.log.warn({ err, shard: shardLabel(key), log: kind }, 'not shipped');
        setTimeout(() => this.kick(), RIDING_LOG_RETRY_MS).unref();
      }
    }
  }

  private async acquire(rt: StreamRuntime, i: number, generation: number): Promise<void> {
    const s = latestConfig(this.streams, rt.config); // a PATCH since install (its retention)
    const sk = shardKey('stream', s.tenant, s.namespace, s.name, i);
    try {
      if (s.durable && this.cfg.durable.data_dir === null) throw new Error(NEEDS_DATA_DIR);
      // A follower's copies of this shard's logs are closed first: the leader's are the same
      // files (its records, and its groups' cursors and dead letters).
      for (const log of logsOwnedBy('stream'))
        await this.replication?.releaseFollower(refOf(s, i, generation), log);
      this.replication?.riding.admit(idOfStream(s, i), 'stream');
      let store = s.durable ? await this.openStore(s, i) : null;
      let fence: Fence | undefined;
      if (store?.log) {
        const fenced = await this.fencedStore(s, i, generation, store);
        if (fenced === null) return;
        this.troubles.clear(sk); // fenced: no longer waiting for a majority
        store = fenced.store;
        fence = fenced.fence;
      }
      // Where this generation's records start: its first batch to a follower overlaps below it.
      const genStart = fence?.start ?? store?.log?.tailOffset ?? 0;
      const label = `${s.tenant}/${s.namespace}/${s.name}/${i}`;
      const shard = new Shard(label, store, this.ring, this.hooks);
      const a = this.assignments.get(sk);
      if (fence && a && !(await this.generationHeld(rt, i, a, shard, fence))) {
        await store!.close();
        return;
      }
      if (fence) shard.history = fence; // what a resuming subscriber is checked against
      shard.passOver(store?.tailOffset ?? 0); // past a generation start just appended
      rt.shards[i] = shard;
      this.troubles.clear(sk);
      this.held.set(sk, { generation });
      // The generations a resuming subscriber's history is checked against (log-history.ts).
      const starts = fence?.starts;
      this.log.info({ shard: label, generation, ...(starts ? { starts } : {}) }, 'shard opened');
      if (a !== undefined) await this.shipIfReplicated(rt, i, a, genStart);
    } catch (err) {
      this.troubles.fail(sk, generation, (err as Error).message);
      this.log.error(
        { err, shard: `${s.tenant}/${s.namespace}/${s.name}/${i}` },
        'shard open failed',
      );
    }
  }

  /**
   * Ships a led durable shard to the followers its replica set names (when replication is on).
   * A `quorum` stream of replication factor above 1 also holds acks and reads at the commit
   * mark, a majority of that factor (with no follower left in its set it acks nothing); at RF 1
   * it behaves as `leader`. The catalog's latest consistency applies (it may change).
   * `genStart` is where this generation's records start (when the shard was just opened).
   */
  private async shipIfReplicated(
    rt: StreamRuntime,
    i: number,
    a: AssignmentRecord,
    genStart?: number,
    opening?: { shard: Shard; newLeader: NewLeaderMark; onMark: (offset: number) => void },
  ) {
    const shard = opening?.shard ?? rt.shards[i];
    const log = shard?.store?.log;
    if (this.replication === null || shard === undefined || log === undefined) return;
    const c = rt.config;
    const s = latestConfig(this.streams, c);
    const followers = a.replicas.filter((id) => id !== this.nodeId);
    // A majority of the replication factor, not of the set: followers marked down leave the
    // set, and a set shrunk to the leader alone must not ack a quorum write with one copy.
    const members = Math.max(s.replication_factor ?? 1, followers.length + 1);
    const quorum = s.consistency === 'quorum' && members > 1;
    const key = shardKey('stream', s.tenant, s.namespace, s.name, i);
    const replicator = this.replication.replicator;
    const onMark = (o: number): void => void [shard.commitTo(o), opening?.onMark(o)];
    // Under periodic fsync the log's durable offset (what wakes an idle shipper) lags the
    // write: a held batch wakes it at once, so a follower's answer is what the ack waits for.
    shard.holdToCommit(quorum ? this.cfg.broker.publish_quorum_timeout_ms : null, () =>
      replicator.wake(key),
    );
    await replicator.ship(key, log, refOf(s, i, a.generation), followers, {
      ...(quorum ? { quorum: { members, onMark: (offset: number) => onMark(offset) } } : {}),
      ...(genStart === undefined ? {} : { genStart }),
      ...(opening === undefined ? {} : { newLeader: opening.newLeader }),
    });
    if (opening === undefined) await this.shipRiding(key, a, 'stream');
  }

  /** A new quorum leader serves only once a majority holds its generation start
   *  (generation-start.ts); false: shipping stops and the open is tried again. */
  private async generationHeld(
    rt: StreamRuntime,
    i: number,
    a: AssignmentRecord,
    shard: Shard,
    fence: { start: number; commitStart: number },
  ): Promise<boolean> {
    const c = rt.config;
    const s = latestConfig(this.streams, c);
    const log = shard.store?.log;
    const led = a.replicas.some((id) => id !== this.nodeId) && s.consistency === 'quorum';
    if (this.replication === null || log === undefined || !led || fence.start === 0) return true;
    const ship = (newLeader: NewLeaderMark, onMark: (offset: number) => void) =>
      this.shipIfReplicated(rt, i, a, fence.start, { shard, newLeader, onMark });
    if (await openThroughGenerationStart({ log, generation: a.generation, fence, ship }))
      return true;
    await this.replication.replicator.stop(shardKey('stream', s.tenant, s.namespace, s.name, i));
    shard.retire();
    const why =
      'no majority holds the generation start; the shard stays unserved, the open retried';
    this.log.warn({ shard: shard.name, generation: a.generation }, why);
    this.retryOpen(shardKey('stream', s.tenant, s.namespace, s.name, i), why);
    return false;
  }

  /** An open tried again later; `why` it waits, said by refusals meanwhile (open-troubles.ts). */
  private retryOpen(key: string, why?: string): void {
    if (why !== undefined) this.troubles.wait(key, why);
    setTimeout(() => this.kick(), FENCE_RETRY_AFTER_MS).unref();
  }

  /** Before a replicated shard is served at `generation`: fenced-open.ts (null: not opened). */
  private async fencedStore(
    s: StreamConfig,
    i: number,
    generation: number,
    store: ShardStore,
  ): Promise<FencedStore | null> {
    const a = this.assignments.get(shardKey('stream', s.tenant, s.namespace, s.name, i));
    const followers = (a?.replicas ?? []).filter((id) => id !== this.nodeId);
    const replication = this.replication;
    if (replication === null || followers.length === 0 || !store.log) return { store };
    const ref = refOf(s, i, generation);
    return fencedOpen(store, {
      ref,
      followers,
      replicator: replication.replicator,
      logOptions: replication.logOptions(ref, 'stream'),
      reopen: () => this.openStore(s, i),
      quorum: latestConfig(this.streams, s).consistency === 'quorum',
      log: this.log,
      retryLater: (why) =>
        this.retryOpen(shardKey('stream', s.tenant, s.namespace, s.name, i), why),
    });
  }

  /** Stops serving shard `i`: refuse first, then settle appends, end readers, close the log. */
  private async release(rt: StreamRuntime, i: number): Promise<void> {
    const s = rt.config;
    const sk = shardKey('stream', s.tenant, s.namespace, s.name, i);
    if (!this.held.delete(sk)) return;
    const shard = rt.shards[i];
    rt.shards[i] = this.placeholder(s, i);
    await this.replication?.replicator.stop(sk);
    // Its group state too: another broker leads it now, and may ship into these logs.
    await this.replication?.riding
      .release(idOfStream(s, i), 'stream')
      .catch((err: unknown) => this.log.warn({ err, shard: sk }, 'releasing group state failed'));
    if (shard === undefined) return;
    // A failed append was answered to its publisher already; release only waits for quiet.
    await shard.settled().catch(() => undefined);
    shard.retire();
    await shard.store?.close().catch((err: unknown) => {
      this.log.warn({ err, shard: shard.name }, 'closing a released shard failed');
    });
    this.log.info({ shard: shard.name }, 'shard released');
  }

  /** Stops reconciling; the Catalog closes whatever is open. */
  async close(): Promise<void> {
    this.closed = true;
    await this.settled();
  }
}
