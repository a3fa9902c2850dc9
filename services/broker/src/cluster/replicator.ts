/**
 * The leader's side of replication in the broker: one ShardShipper per durable log of each shard
 * this broker leads whose replica set names followers (a stream's records, its group cursors and
 * dead letters; a cache's log and its counters: each log its own shipper, so its own cursor per
 * follower, and a slow group or counter log never holds up a stream's), shipping over peer
 * links that dial on first use (and again after a failure) to the follower's internal address
 * from the node book. Links are per peer and shared by every shard and log (and, through the
 * broker's PeerPool, with the forwarder). A log's shipper stops before the log closes, and is
 * replaced when the shard's generation changes.
 *
 * A `quorum` shard's stream log also gets a CommitMark over its replica set (the leader counted
 * at what its own log acknowledges, each follower at what it confirmed, and never past the
 * leader's own: records ship before the leader's fsync ends). A log acknowledges what its fsync
 * mode does (`readableOffset`): synced records under `onCommit`, written ones under `periodic`
 * (a follower's copy takes its stream's mode too). The mark is recomputed on every
 * confirmation and every move of the leader's own offset, carried to the followers by the
 * shipper, handed to
 * `onMark` (the shard's waiter list) and set as the log's retention floor. The logs riding
 * with a stream shard never count toward the mark. A new leader's mark counts only through its
 * own generation's first record (CommitMark, `newLeader`).
 *
 * A `quorum` cache shard's cache and counter logs get a CommitMark each, over the same members,
 * handed to their commit waits (caches/commit-waiters.ts). Their followers are not told the
 * mark: the committed batch kind carries stream records only, so a cache shard's new leader
 * (fenced log by log, fenced-open.ts) is not repaired by a commit offset (docs/replication.md,
 * "Quorum caches").
 *
 * Every log riding with a shard (not a stream's records, whose followers run their own
 * retention) has its retention floor held at what its in-sync followers confirmed
 * (trim-hold.ts), recomputed at each confirmation, each halt and each report, so the leader's
 * own compaction never trims past a follower in sync; cleared when its shipping stops for good.
 */
import {
  CommitMark,
  RebuildSlots,
  type FenceOutcome,
  type FencedLogKind,
  type HaltReason,
  type PeerLink,
  type ReplicaLogKind,
  ShardShipper,
  type ShipperOptions,
  fenceReplicaSet,
  majorityHeld,
} from '@felix/replication';
import type { SegmentLog } from '@felix/storage';
import type { ShardRef } from '@felix/wire';
import {
  REPLICA_LAG_MAX_MS_DEFAULT,
  REPLICATION_BACKOFFS_WARN_AFTER,
  REPLICATION_BACKOFFS_WARN_EVERY,
} from '../limits.js';
import { FailingFollowers } from './failing-followers.js';
import type { ShardReport } from './control-plane-client.js';
import { type PeerPoolDeps, PeerPool } from './peer-pool.js';
import { trimFloor } from './trim-hold.js';
import { shardLabel } from './feed-items.js';

export interface ReplicatorDeps extends PeerPoolDeps {
  /** The broker's shared links (peer-pool.ts); absent: the replicator keeps its own. */
  pool?: PeerPool;
  /** `cluster.replica_lag_max_ms`: the lag window a reported in-sync follower is within;
   *  default REPLICA_LAG_MAX_MS_DEFAULT. */
  replicaLagMaxMs?: number;
  /** A shard's follower came in sync that its last report did not name: report soon
   *  (replica-reporter.ts, `nudge`). */
  onInSyncJoined?: () => void;
  /** Consecutive backoffs of one follower before a warning; default
   *  REPLICATION_BACKOFFS_WARN_AFTER (tests shorten it). */
  backoffsWarnAfter?: number;
  /** Each shipping backoff, of any shard and follower (felix_broker_replication_backoffs_total). */
  onBackoff?: () => void;
  /** A follower halted `needs_bootstrap` on a `kind` log was rebuilt at the leader's base
   *  (felix_broker_replication_rebuilds_total). */
  onRebuilt?: (kind: ReplicaLogKind) => void;
}

/** One led shard's replication health, for the broker's gauges (Replicator.shardHealth). */
export interface ShardHealth {
  ref: ShardRef;
  /** A stream's shard or a cache's (a stream and a cache may share a name). */
  kind: 'stream' | 'cache';
  /** Followers in sync now, as the shard's next replica report names them. */
  inSync: number;
  /** Acked records a failover now would lose (a `leader` stream's; else 0). */
  exposedRecords: number;
}

/** A quorum shard's side of shipping: told each time the commit mark moves. */
export interface ShipQuorum {
  /** Members the majority is of (the stream's replication factor, or the set when larger). */
  members?: number;
  onMark(offset: number): void;
}

interface Shipping {
  shipper: ShardShipper;
  ref: ShardRef;
  generation: number;
  log: SegmentLog;
  followers: string[];
  mark: CommitMark | null;
  unlisten: () => void;
  /** Followers whose loop halted until repaired (reported; never promoted). */
  halted: Map<string, 'diverged' | 'needs_bootstrap'>;
  /** Followers whose loop stopped for any reason (a riding log's trims no longer wait on them). */
  stopped: Set<string>;
  /** A riding log (not a stream's records): its trims are held at its in-sync followers. */
  riding: boolean;
  /** When this shipper started (performance.now()): a follower never caught up counts as in
   *  sync for one lag window from here. */
  startedAtMs: number;
  /** The followers the shard's last report named in sync (kept on its primary log). */
  reportedInSync: Set<string>;
  /** Followers a quorum mark leaves out (`countedOffset`), each with the highest offset it may
   *  hold written only: they said their copies answer once written while this leader's log
   *  syncs before its acks. */
  unsynced: Map<string, number>;
}

/** What `ship` takes besides the log: which of the shard's logs it is, and its quorum side. */
export interface ShipOptions {
  kind?: ReplicaLogKind;
  /** A quorum shard's stream log, or a quorum cache shard's cache or counter log. */
  quorum?: ShipQuorum;
  /**
   * Where this generation's records start in `log` (its tail when this broker opened it as
   * leader; default: the tail now): the first batch overlaps the record just below it, so a
   * returning deposed leader's divergent suffix is compared from its first record.
   */
  genStart?: number;
  /**
   * A quorum shard this broker just opened as a new leader: the mark counts only once a
   * majority holds the record at `countFrom` (this generation's first: its generation-start
   * record), starting from `commitStart` (what its fence answers said was committed).
   */
  newLeader?: { countFrom: number; commitStart: number };
}

export class Replicator {
  /** Per shard key, the shipper of each of its logs. */
  private readonly shippers = new Map<string, Map<ReplicaLogKind, Shipping>>();
  private readonly pool: PeerPool;
  /** Followers warned of as syncing less than this leader (one warning each, not per shard). */
  private readonly warnedUnsynced = new Set<string>();
  /** Whether the pool is this replicator's own (closed with it) or the broker's. */
  private readonly ownsPool: boolean;
  /** Followers whose shippers keep backing off, rolled up per node for the warnings. */
  private readonly failing: FailingFollowers;
  /** The rebuilds of halted followers this broker runs at once, over all its shards. */
  private readonly rebuildSlots = new RebuildSlots();
  /** Per led shard (its key), the followers rebuilt on a log its reports speak of, until it
   *  stops leading the shard (bounded by the shards it leads times their followers). */
  private readonly rebuiltOf = new Map<string, Set<string>>();

  constructor(private readonly deps: ReplicatorDeps) {
    this.failing = new FailingFollowers(
      deps.backoffsWarnAfter ?? REPLICATION_BACKOFFS_WARN_AFTER,
      REPLICATION_BACKOFFS_WARN_EVERY,
    );
    this.ownsPool = deps.pool === undefined;
    this.pool = deps.pool ?? new PeerPool(deps);
  }

  /**
   * Fences the replica set before this broker serves `ref` at its generation: resolves once a
   * majority (this broker counted) accepted it, or with why not (deposed, or the deadline).
   */
  fence(
    ref: ShardRef,
    followers: string[],
    deadlineMs: number,
    log: FencedLogKind = 'stream',
  ): Promise<FenceOutcome> {
    return fenceReplicaSet({
      shard: ref,
      followers: followers.map((nodeId) => ({ nodeId, link: this.pool.link(nodeId) })),
      deadlineMs,
      log,
    });
  }

  /** The link to `nodeId` this replicator ships over (a promoted leader's tail take uses it). */
  link(nodeId: string): PeerLink {
    return this.pool.link(nodeId);
  }

  /** Ships `log` (the shard's `kind` log) to `followers` at `ref.generation` (restarting a
   *  shipper of an older one, or of the other consistency); with `quorum`, keeps the shard's
   *  commit mark. */
  async ship(
    key: string,
    log: SegmentLog,
    ref: ShardRef,
    followers: string[],
    opts: ShipOptions = {},
  ): Promise<void> {
    const kind = opts.kind ?? 'stream';
    const quorum = reportedLog(kind) ? opts.quorum : undefined;
    const current = this.shippers.get(key)?.get(kind);
    if (
      current !== undefined &&
      current.generation === ref.generation &&
      (current.mark !== null) === (quorum !== undefined)
    )
      return;
    const caughtUp = caughtUpOf(current);
    // A riding log's floor stays through a restart: the new shipper sets its own at once.
    await this.halt(key, [kind], followers.length === 0);
    if (followers.length === 0) return;
    // Just below where this generation starts (or the tail): the first batch overlaps a record
    // both hold, and each answer says where the follower's log really ends.
    const genStart = Math.min(opts.genStart ?? log.tailOffset, log.tailOffset);
    const start = Math.max(log.baseOffset, genStart - 1);
    const members = Math.max(followers.length + 1, quorum?.members ?? 0);
    const fresh = opts.newLeader;
    const mark =
      quorum === undefined
        ? null
        : new CommitMark(members, fresh?.commitStart ?? 0, fresh?.countFrom ?? 0);
    const recompute = () => this.recompute(key, kind, quorum);
    // Only a stream's batches can carry the mark to followers (kind 26 is stream records).
    const carried = mark !== null && kind === 'stream';
    const halted = new Map<string, 'diverged' | 'needs_bootstrap'>();
    const stopped = new Set<string>();
    const shipper = new ShardShipper({
      log,
      shard: ref,
      logKind: kind,
      followers: followers.map((nodeId) => {
        const at = caughtUp.get(nodeId);
        const follower = { nodeId, link: this.pool.link(nodeId), start };
        return at === undefined ? follower : { ...follower, caughtUpAtMs: at };
      }),
      ...this.watchers(key, kind, mark === null ? null : recompute, { halted, stopped }),
      ...(carried ? { commitOffset: () => mark.offset } : {}),
      rebuild: { slots: this.rebuildSlots },
    });
    // What a majority may not hold yet is never deleted by retention.
    if (carried) log.setRetentionFloor(mark.offset);
    const unlisten = mark === null ? () => undefined : log.onReadable(recompute);
    const riding = kind !== 'stream';
    const generation = ref.generation;
    const startedAtMs = performance.now();
    const shipping = { shipper, ref, generation, log, followers, mark, unlisten, halted };
    const reportedInSync = new Set<string>();
    const unsynced = new Map<string, number>();
    this.register(key, kind, {
      ...shipping,
      stopped,
      riding,
      startedAtMs,
      reportedInSync,
      unsynced,
    });
    this.holdTrims(key, kind);
  }

  /**
   * The callbacks of shard `key`'s `kind` shipper: a stopped follower is noted (and a halted one
   * kept for the reports); a quorum log's mark (`recompute`) and a riding log's floor follow
   * each confirmation, and the floor each stop.
   */
  private watchers(
    key: string,
    kind: ReplicaLogKind,
    recompute: (() => void) | null,
    seen: Pick<Shipping, 'halted' | 'stopped'>,
  ): Pick<ShipperOptions, 'onStopped' | 'onConfirmed' | 'onBackoff' | 'onResumed' | 'onRebuilt'> {
    const riding = kind !== 'stream';
    const onStopped: ShipperOptions['onStopped'] = (nodeId, reason) => {
      if (isRepairable(reason)) seen.halted.set(nodeId, reason);
      seen.stopped.add(nodeId);
      // No backoff or answer follows: its warnings must not hang on this log.
      this.failing.forget(failingEntry(key, kind), nodeId);
      this.deps.log.warn(
        { shard: shardLabel(key), log: kind, follower: nodeId, reason },
        'shipping stopped',
      );
      this.holdTrims(key, kind);
    };
    const onRebuilt: ShipperOptions['onRebuilt'] = (nodeId, offset) => {
      // Shipping again from the base: no longer halted, reported as a follower like the others.
      seen.halted.delete(nodeId);
      seen.stopped.delete(nodeId);
      // Of a log a report speaks of: named `rebuilt` in this shard's reports while this broker
      // leads it (a generation of its own that follows, a follower-set change, included).
      if (reportedLog(kind)) {
        const nodes = this.rebuiltOf.get(key) ?? new Set<string>();
        nodes.add(nodeId);
        this.rebuiltOf.set(key, nodes);
      }
      this.deps.onRebuilt?.(kind);
      this.deps.log.info(
        { shard: shardLabel(key), log: kind, follower: nodeId, base: offset },
        "follower's copy rebuilt at the leader's base; shipping resumed",
      );
      this.holdTrims(key, kind);
    };
    const retries = { ...this.retryWatchers(key, kind), onRebuilt };
    const notice = reportedLog(kind) && this.deps.onInSyncJoined !== undefined;
    if (recompute === null && !riding && !notice) return { onStopped, ...retries };
    const onConfirmed = () => {
      recompute?.();
      this.holdTrims(key, kind);
      if (notice) this.noticeInSync(key);
    };
    return { onStopped, onConfirmed, ...retries };
  }

  /**
   * Counts each backoff and warns of a follower that keeps failing (a broker down, or one that
   * has not heard of the shard), after REPLICATION_BACKOFFS_WARN_AFTER in a row and then every
   * REPLICATION_BACKOFFS_WARN_EVERY, once per follower node for all its shard logs
   * (failing-followers.ts); says when its last failing log answers again.
   */
  private retryWatchers(
    key: string,
    kind: ReplicaLogKind,
  ): Pick<ShipperOptions, 'onBackoff' | 'onResumed'> {
    const entry = failingEntry(key, kind);
    return {
      onBackoff: (nodeId, backoffs, waitMs) => {
        this.deps.onBackoff?.();
        const notice = this.failing.backoff(nodeId, entry, backoffs);
        if (notice === null) return;
        this.deps.log.warn(
          {
            follower: nodeId,
            shard_logs: notice.logs,
            shard: shardLabel(key),
            log: kind,
            backoffs,
            wait_ms: waitMs,
          },
          'follower not answering; shipping to it is retried',
        );
      },
      onResumed: (nodeId, backoffs) => {
        const notice = this.failing.resumed(nodeId, entry, backoffs);
        if (notice === null) return;
        this.deps.log.info(
          {
            follower: nodeId,
            shard_logs: notice.logs,
            shard: shardLabel(key),
            log: kind,
            backoffs,
          },
          'follower answering again; shipping resumed',
        );
      },
    };
  }

  /** Asks for a report when shard `key` has a follower in sync its last report did not name. */
  private noticeInSync(key: string): void {
    const logs = this.shippers.get(key);
    const primary = logs === undefined ? undefined : primaryOf(logs);
    if (logs === undefined || primary === undefined) return;
    const { kind, shipping: s } = primary;
    const windowMs = this.deps.replicaLagMaxMs ?? REPLICA_LAG_MAX_MS_DEFAULT;
    const now = inSyncOfShard(logs, kind, s.halted, performance.now(), windowMs);
    if (now.some((f) => !s.reportedInSync.has(f))) this.deps.onInSyncJoined?.();
  }

  private register(key: string, kind: ReplicaLogKind, shipping: Shipping): void {
    let logs = this.shippers.get(key);
    if (logs === undefined) {
      logs = new Map();
      this.shippers.set(key, logs);
    }
    logs.set(kind, shipping);
  }

  /**
   * What each shipped shard's replicas hold, for the control plane (docs/replication.md,
   * "Replica reports and promotion"): of its primary log (a stream's records, a cache's log), the
   * leader's own offset (as its log acknowledges it), each follower's confirmed offset, the commit mark (a quorum shard's,
   * else the majority over them, the leader counted); and the followers halted on a log holding
   * user data (a cache shard's counters as well as its cache log; a stream shard's group state is
   * redelivered at least once, docs/replication.md, so it does not bar a follower); and the
   * followers in sync: those that held the whole primary log within the lag window.
   */
  reports(leaving = false): ShardReport[] {
    // A follower that left the window meanwhile stops holding its leader's trims.
    for (const [key, logs] of this.shippers) for (const k of logs.keys()) this.holdTrims(key, k);
    const out: ShardReport[] = [];
    const windowMs = this.deps.replicaLagMaxMs ?? REPLICA_LAG_MAX_MS_DEFAULT;
    const nowMs = performance.now();
    for (const [key, logs] of this.shippers) {
      const primary = primaryOf(logs);
      if (primary === undefined) continue;
      const { kind, shipping: s } = primary;
      const level = leaving || this.moving.get(key) === true ? levelFollowers(logs) : null;
      const own = s.log.readableOffset;
      const confirmed = s.followers.map((f) => s.shipper.confirmed(f));
      const majority = Math.min(own, majorityHeld([own, ...confirmed], s.followers.length + 1));
      const halted = new Map<string, 'diverged' | 'needs_bootstrap'>();
      for (const [k, l] of logs)
        if (k === kind || k === 'counters') for (const [id, why] of l.halted) halted.set(id, why);
      // Named at what the primary log's cursor counts it as holding: the offset the control
      // plane then stores for it (a counter log's base is an offset of another log).
      const rebuilt = new Map<string, number>();
      for (const id of this.rebuiltOf.get(key) ?? [])
        if (s.followers.includes(id)) rebuilt.set(id, s.shipper.confirmed(id));
      const inSync = inSyncOfShard(logs, kind, halted, nowMs, windowMs);
      s.reportedInSync = new Set(inSync);
      out.push({
        tenant_id: s.ref.tenantId,
        namespace: s.ref.namespace,
        kind,
        stream: s.ref.stream,
        shard: s.ref.shard,
        generation: s.generation,
        leader_offset: own,
        commit_offset: s.mark?.offset ?? majority,
        replica_offsets: s.followers.map((f, i) => ({ node_id: f, durable_offset: confirmed[i]! })),
        halted: [...halted].map(([node_id, reason]) => ({ node_id, reason })),
        // Only when there is one: a control plane older than the field refuses it.
        ...(rebuilt.size === 0
          ? {}
          : { rebuilt: [...rebuilt].map(([node_id, base]) => ({ node_id, base })) }),
        in_sync: inSync,
        ...(level === null
          ? {}
          : { drained: level.durable && level.followers.length > 0, caught_up: level.followers }),
      });
    }
    return out;
  }

  /**
   * Per shard led: its followers in sync (as its next report names them) and, for a `leader`
   * stream, its exposure: the records its log holds above what the most caught-up in-sync
   * follower confirmed, which are what a failover now would lose (the control plane promotes
   * that follower, docs/replication.md "In-sync followers"). With no follower in sync the shard
   * cannot fail over (it waits for its leader), so nothing is exposed; a quorum stream or a
   * cache shard never loses an acked write to a failover either.
   */
  shardHealth(): ShardHealth[] {
    const windowMs = this.deps.replicaLagMaxMs ?? REPLICA_LAG_MAX_MS_DEFAULT;
    const nowMs = performance.now();
    const out: ShardHealth[] = [];
    for (const logs of this.shippers.values()) {
      const primary = primaryOf(logs);
      if (primary === undefined) continue;
      const { kind, shipping: s } = primary;
      const inSync = inSyncOfShard(logs, kind, s.halted, nowMs, windowMs);
      let exposed = 0;
      if (kind === 'stream' && s.mark === null && inSync.length > 0) {
        const best = Math.max(...inSync.map((f) => s.shipper.confirmed(f)));
        exposed = Math.max(0, s.log.tailOffset - best);
      }
      out.push({ ref: s.ref, kind, inSync: inSync.length, exposedRecords: exposed });
    }
    return out;
  }

  /**
   * Shards moving to their preferred broker (transfers.ts): their writes are refused, and once
   * true (level, checked twice) their reports say `drained` as a leaving broker's do.
   */
  readonly moving = new Map<string, boolean>();

  /** Whether shard `key` is shipped. */
  ships(key: string): boolean {
    return this.shippers.has(key);
  }

  /** Whether shard `key` is shipped, durable, and follower `to` holds every log of it to its end
   *  (what its drained report must name for the control plane to move it there). */
  isLevel(key: string, to: string): boolean {
    const logs = this.shippers.get(key);
    if (logs === undefined) return false;
    const level = levelFollowers(logs);
    return level.durable && level.followers.includes(to);
  }

  /** Whether every follower of every shipped shard holds every log to its end (lag 0). */
  allLevel(): boolean {
    for (const logs of this.shippers.values()) {
      const level = levelFollowers(logs);
      const followers = primaryOf(logs)?.shipping.followers.length ?? 0;
      if (!level.durable || level.followers.length < followers) return false;
    }
    return true;
  }

  /** Stops shipping shard `key`'s `kind` log, or every log of it (before they close). */
  stop(key: string, kind?: ReplicaLogKind): Promise<void> {
    if (kind === undefined) this.rebuiltOf.delete(key);
    const logs = this.shippers.get(key);
    if (logs === undefined) return Promise.resolve();
    return this.halt(key, kind === undefined ? [...logs.keys()] : [kind], true);
  }

  /** Stops the shippers of `kinds`; `clearFloor` false keeps a riding log's floor (a restart). */
  private async halt(key: string, kinds: ReplicaLogKind[], clearFloor: boolean): Promise<void> {
    const logs = this.shippers.get(key);
    if (logs === undefined) return;
    const shippers: ShardShipper[] = [];
    for (const k of kinds) {
      const s = logs.get(k);
      if (s === undefined) continue;
      logs.delete(k);
      this.failing.forget(failingEntry(key, k));
      s.unlisten();
      if (s.riding ? clearFloor : s.mark !== null) s.log.setRetentionFloor(undefined);
      shippers.push(s.shipper);
    }
    if (logs.size === 0) this.shippers.delete(key);
    await Promise.all(shippers.map((s) => s.stop()));
  }

  /** The generation shard `key`'s `kind` log ships at, or undefined when it does not ship. */
  shippingGeneration(key: string, kind: ReplicaLogKind): number | undefined {
    return this.shippers.get(key)?.get(kind)?.generation;
  }

  /** Makes shard `key`'s `kind` shipper look at its log now (a batch waits for a majority). */
  wake(key: string, kind: ReplicaLogKind = 'stream'): void {
    this.shippers.get(key)?.get(kind)?.shipper.wake();
  }

  /** The commit mark of a quorum shard being shipped (undefined otherwise). */
  commitOffset(key: string): number | undefined {
    return this.shippers.get(key)?.get('stream')?.mark?.offset;
  }

  /** A member's durable offset moved: the mark follows a majority as soon as one answers. */
  private recompute(key: string, kind: ReplicaLogKind, quorum: ShipQuorum | undefined): void {
    const s = this.shippers.get(key)?.get(kind);
    if (s === undefined || s.mark === null) return;
    const own = s.log.readableOffset;
    const held = [own, ...s.followers.map((f) => this.countedOffset(key, s, f))];
    // Followers may confirm records before the leader's fsync of them ends (the shipper sends
    // what is written): the mark waits for what the leader's own log acknowledges as well.
    if (!s.mark.advance(held, own)) return;
    if (kind === 'stream') s.log.setRetentionFloor(s.mark.offset);
    s.shipper.wake();
    quorum?.onMark(s.mark.offset);
  }

  /**
   * What follower `f` counts toward shard `key`'s quorum mark: what it confirmed, or nothing.
   * A leader whose stream log syncs before it acks (`onCommit`) counts only followers whose
   * copies do too: one whose Hello answer said its copies answer once written (a weaker
   * `durable.fsync_mode`) would let a quorum ack stand on a page cache. What it confirmed then
   * stays uncounted after it comes back syncing (a restart with the stronger mode), until it
   * confirms past it: the cursor keeps those offsets, and a crash of its host may have lost
   * them unsynced. A follower that said nothing (an earlier build) counts. Cache and counter
   * logs sync on commit on every broker.
   */
  private countedOffset(key: string, s: Shipping, f: string): number {
    const confirmed = s.shipper.confirmed(f);
    const weaker =
      s.log.fsync === 'onCommit' &&
      s.riding === false &&
      this.pool.link(f).answersSynced?.() === false;
    const unsyncedUpTo = s.unsynced.get(f);
    if (weaker) {
      s.unsynced.set(f, Math.max(unsyncedUpTo ?? 0, confirmed));
      if (!this.warnedUnsynced.has(f)) {
        this.warnedUnsynced.add(f);
        this.deps.log.warn(
          { shard: shardLabel(key), follower: f },
          'follower confirms written, not synced, records (a weaker durable.fsync_mode than this leader): not counted toward quorum acks',
        );
      }
      return 0;
    }
    if (unsyncedUpTo === undefined) return confirmed;
    if (confirmed <= unsyncedUpTo) return 0;
    s.unsynced.delete(f);
    // Warned of again should it slide back, once no shard leaves it out any more.
    if (!this.leftOut(f)) this.warnedUnsynced.delete(f);
    return confirmed;
  }

  /** Whether some shard's quorum mark still leaves follower `f` out. */
  private leftOut(f: string): boolean {
    for (const logs of this.shippers.values())
      for (const s of logs.values()) if (s.unsynced.has(f)) return true;
    return false;
  }

  /** Followers left out of some quorum mark for syncing less than this leader
   *  (`felix_broker_replication_unsynced_followers`), as each quorum log last judged them (on
   *  its last confirmation or write). */
  unsyncedFollowers(): number {
    const nodes = new Set<string>();
    for (const logs of this.shippers.values())
      for (const s of logs.values()) for (const f of s.unsynced.keys()) nodes.add(f);
    return nodes.size;
  }

  /** Holds shard `key`'s riding `kind` log's trims at what its in-sync followers confirmed. */
  private holdTrims(key: string, kind: ReplicaLogKind): void {
    const s = this.shippers.get(key)?.get(kind);
    if (s === undefined || !s.riding) return;
    const held = s.followers.map((f) => ({
      confirmed: s.shipper.confirmed(f),
      caughtUpAtMs: s.shipper.caughtUpAtMs(f),
      stopped: s.stopped.has(f) || s.halted.has(f),
    }));
    const windowMs = this.deps.replicaLagMaxMs ?? REPLICA_LAG_MAX_MS_DEFAULT;
    s.log.setRetentionFloor(trimFloor(held, performance.now(), s.startedAtMs, windowMs));
  }

  /** What a follower confirmed of shard `key`'s `kind` log (0 when unknown). */
  confirmed(key: string, nodeId: string, kind: ReplicaLogKind = 'stream'): number {
    return this.shippers.get(key)?.get(kind)?.shipper.confirmed(nodeId) ?? 0;
  }

  /** Records the leader holds that followers have not confirmed, over every log of every shard
   *  shipped (`felix_broker_replication_lag_records`: 0 means every log is on every follower). */
  lagRecords(): number {
    let lag = 0;
    for (const logs of this.shippers.values())
      for (const s of logs.values())
        for (const f of s.followers) lag += Math.max(0, s.log.tailOffset - s.shipper.confirmed(f));
    return lag;
  }

  async close(): Promise<void> {
    await Promise.all([...this.shippers.keys()].map((k) => this.stop(k)));
    if (this.ownsPool) await this.pool.close();
  }
}

/** The name a shard's log goes by in the failing-followers tally. */
function failingEntry(key: string, kind: ReplicaLogKind): string {
  return `${key}\u0000${kind}`;
}

/** A shard's primary log, the one its report speaks of: a stream's records, else a cache's log
 *  (a shard whose primary log is not shipped, e.g. not opened yet, is not reported). */
function primaryOf(
  logs: ReadonlyMap<ReplicaLogKind, Shipping>,
): { kind: 'stream' | 'cache'; shipping: Shipping } | undefined {
  const stream = logs.get('stream');
  if (stream !== undefined) return { kind: 'stream', shipping: stream };
  const cache = logs.get('cache');
  return cache === undefined ? undefined : { kind: 'cache', shipping: cache };
}

/** The same leader's log and followers: when each last held it stays true across a restart
 *  (a follower-set change), so a restart does not put every follower out of sync. */
/** The followers of `s` that held its whole log within the lag window and are not halted. */
function inSyncOf(
  s: Shipping,
  halted: ReadonlyMap<string, unknown>,
  nowMs: number,
  windowMs: number,
): string[] {
  return s.followers.filter((f) => {
    const at = s.shipper.caughtUpAtMs(f);
    return !halted.has(f) && at !== undefined && nowMs - at <= windowMs;
  });
}

/**
 * The followers in sync on shard's primary log and, for a cache shard, on its counter log too:
 * a follower promoted for being in sync must not lack more than the window of either.
 */
function inSyncOfShard(
  logs: ReadonlyMap<ReplicaLogKind, Shipping>,
  kind: 'stream' | 'cache',
  halted: ReadonlyMap<string, unknown>,
  nowMs: number,
  windowMs: number,
): string[] {
  const primary = inSyncOf(logs.get(kind)!, halted, nowMs, windowMs);
  const counters = kind === 'cache' ? logs.get('counters') : undefined;
  if (counters === undefined) return primary;
  const also = new Set(inSyncOf(counters, halted, nowMs, windowMs));
  return primary.filter((f) => also.has(f));
}

function caughtUpOf(current: Shipping | undefined): Map<string, number> {
  const caughtUp = new Map<string, number>();
  for (const f of current?.followers ?? []) {
    const at = current!.shipper.caughtUpAtMs(f);
    if (at !== undefined) caughtUp.set(f, at);
  }
  return caughtUp;
}

function isRepairable(
  reason: HaltReason | 'fenced' | 'failed',
): reason is 'diverged' | 'needs_bootstrap' {
  return reason === 'diverged' || reason === 'needs_bootstrap';
}

/**
 * The followers holding every log of one shard to its tail, and whether each log is durable to
 * its tail: what a leaving leader may hand the shard over on.
 */
function levelFollowers(logs: ReadonlyMap<ReplicaLogKind, Shipping>): {
  durable: boolean;
  followers: string[];
} {
  let durable = true;
  let followers: string[] | null = null;
  for (const s of logs.values()) {
    const tail = s.log.tailOffset;
    if (s.log.durableOffset < tail) durable = false;
    const here = s.followers.filter((f) => !s.halted.has(f) && s.shipper.confirmed(f) >= tail);
    followers = followers === null ? here : followers.filter((f) => here.includes(f));
  }
  return { durable, followers: followers ?? [] };
}

/** The logs a shard's replica report speaks of (its in-sync list, its rebuilt followers, a
 *  quorum mark): a stream's records, a cache's two logs. */
function reportedLog(kind: ReplicaLogKind): boolean {
  return kind === 'stream' || kind === 'cache' || kind === 'counters';
}
