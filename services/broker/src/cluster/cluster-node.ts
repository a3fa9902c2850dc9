/**
 * The broker as a member of a control-plane cluster (cluster.controlplane_url set): follows the
 * streams, caches and shard-assignments feeds into the ShardTable, and once the first snapshots are
 * applied registers and heartbeats (so placement never counts a broker that cannot serve yet).
 * Readiness is every first snapshot applied, one reconcile pass done, and a registration accepted.
 * While registered it reports what the replicas of the shards it leads hold, and its write
 * lease follows its accepted heartbeats.
 * `leave()` at SIGTERM stops the heartbeats, deregisters (bounded) and stops the feeds.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { ShardTransfers } from './transfers.js';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Catalog, OpenStore } from '../catalog/catalog.js';
import type { BrokerConfig } from '../config/types.js';
import { awaitFailover } from './fresh-storage.js';
import { ConfigInvalidCombinationError } from '../errors.js';
import {
  CONTROLPLANE_DEREGISTER_MS_MAX,
  CONTROLPLANE_OUTAGE_CLEAR_MS,
  CONTROLPLANE_OUTAGE_REMIND_MS,
  NODE_BOOK_REFRESH_MS,
} from '../limits.js';
import { type Partition, partitionedFetch } from '../faults/partition.js';
import type { BrokerMetrics } from '../metrics.js';
import type { ShardHooks } from '../streams/shard.js';
import { type Bearer, ControlPlaneClient, type ShardReport } from './control-plane-client.js';
import { FeedFollower, sleep } from './feed-follower.js';
import { type HandoffDeps, type HandoffOutcome, handOff } from './handoff.js';
import { Membership, type NodeSpec } from './membership.js';
import { PeerLinks } from './peer-links.js';
import { ReplicaReporter } from './replica-reporter.js';
import { type CacheRegistry, ShardTable } from './shard-table.js';
import { type ReachabilityNotice, Reachability, callKind } from './reachability.js';

export interface ClusterNodeDeps {
  config: BrokerConfig;
  catalog: Catalog;
  openStore: OpenStore;
  hooks: ShardHooks;
  metrics: BrokerMetrics;
  log: Logger;
  /** The client port the listeners bound (for the default node id and client address). */
  clientPort: number;
  /** Where caches from the catalog feed are defined (the broker's cache service). */
  caches?: CacheRegistry;
  /** The node credential for every control-plane call (cluster/node-token.ts). */
  bearer?: Bearer;
  /** The test partition file's reader (faults/partition.ts); null or absent when unset. */
  partition?: Partition | null;
  /** The broker started without its shard logs (fresh-storage.ts). */
  freshStorage?: boolean;
  /** Called once its wait for a failover ended (not by a stop): the marker goes. */
  freshWaitEnded?: () => Promise<void>;
}

/** The control-plane URL when clustering is configured (an empty value means unset). */
export function controlPlaneUrl(cfg: BrokerConfig): string | null {
  const url = cfg.cluster?.controlplane_url ?? null;
  return url === null || url.trim() === '' ? null : url.trim();
}

/** Refuses a file catalog next to a control plane: one source of truth for what is served. */
export function checkClusterConfig(cfg: BrokerConfig): void {
  if (controlPlaneUrl(cfg) === null) return;
  if (cfg.streams.length > 0 || cfg.caches.length > 0) {
    throw new ConfigInvalidCombinationError(
      ['cluster.controlplane_url', cfg.streams.length > 0 ? 'streams' : 'caches'],
      'with a control plane the catalog comes from its feeds; declare no streams or caches in the file',
    );
  }
}

function parseLabels(raw: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of (raw ?? '').split(',')) {
    const t = item.trim();
    if (t === '') continue;
    const eq = t.indexOf('=');
    if (eq <= 0) {
      throw new ConfigInvalidCombinationError(['cluster.labels'], `label ${t} is not key=value`);
    }
    out[t.slice(0, eq)] = t.slice(eq + 1);
  }
  return out;
}

/** The registration this config describes. */
export function nodeSpec(cfg: BrokerConfig, clientPort: number): NodeSpec {
  const c = cfg.cluster;
  const host =
    cfg.broker.host === '0.0.0.0' || cfg.broker.host === '::' ? hostname() : cfg.broker.host;
  const clientAddr = c.client_advertise_addr ?? `${host}:${clientPort}`;
  const nodeId =
    c.node_id ??
    `${
      hostname()
        .replace(/[^A-Za-z0-9_.-]/g, '-')
        .replace(/^[^A-Za-z0-9]+/, '') || 'broker'
    }-${clientPort}`;
  return {
    node_id: nodeId,
    advertise_addr: c.advertise_addr ?? clientAddr,
    client_addr: clientAddr,
    zone: c.zone,
    labels: parseLabels(c.labels),
    capacity: { max_shards: c.max_shards, weight: 1 },
    // Sent only when false: a control plane reads its absence as durable, and one older than
    // the field (which refuses unknown fields) still registers a durable broker.
    ...(cfg.durable.data_dir === null ? { durable_storage: false } : {}),
  };
}

export class ClusterNode {
  readonly table: ShardTable;
  readonly membership: Membership;
  /** The other brokers: the peer probe and the gate every peer connection dials through. */
  readonly peers: PeerLinks;
  private readonly feeds: FeedFollower[];
  private readonly reporter: ReplicaReporter;
  private readied = false;
  private readonly stopBook = new AbortController();
  private readonly freshWaitEnded: () => Promise<void>;
  private book: Promise<void> | null = null;
  /** The node-book refresh in flight (refreshes asked for meanwhile share it). */
  private bookRefresh: Promise<void> | null = null;
  private readonly cp: ControlPlaneClient;
  private readonly log: Logger;
  /** Whether the control plane answers, for the log's few lines per outage (reachability.ts). */
  readonly reachability = new Reachability(
    CONTROLPLANE_OUTAGE_REMIND_MS,
    CONTROLPLANE_OUTAGE_CLEAR_MS,
  );

  constructor(deps: ClusterNodeDeps) {
    const { config, log, metrics } = deps;
    const url = controlPlaneUrl(config);
    if (url === null)
      throw new ConfigInvalidCombinationError(['cluster.controlplane_url'], 'unset');
    const spec = nodeSpec(config, deps.clientPort);
    const clog = log.child({ node_id: spec.node_id });
    this.log = clog;
    const client = this.controlPlaneClient(deps, url, clog);
    this.cp = client;
    this.peers = new PeerLinks({
      selfId: spec.node_id,
      intervalMs: config.cluster.peer_probe_interval_ms,
      partition: deps.partition ?? null,
      registry: metrics.registry,
      log: clog,
    });
    this.table = new ShardTable(
      config,
      deps.catalog,
      spec.node_id,
      deps.openStore,
      deps.hooks,
      clog,
      metrics.registry,
    );
    this.table.cacheRegistry = deps.caches ?? null;
    // A new leader is named in refusals and dialled by forwards: learn its addresses now, not
    // at the next periodic refresh.
    this.table.onAssignments = () => void this.refreshBook();
    this.feeds = this.feedFollowers(client, config.cluster.feed_wait_ms, clog, metrics.registry);
    this.membership = new Membership(client, spec, clog, metrics.registry);
    this.table.lease = this.membership.lease;
    // A deposed node writes again only once it has heard where its shards went (lease.ts).
    const assignments = this.feeds[2]!;
    this.membership.lease.onDeposed = () => assignments.resync();
    this.reporter = new ReplicaReporter(
      client,
      this.membership,
      () => this.reports(),
      clog,
      metrics.registry,
    );
    const transfers = new ShardTransfers({
      replicator: () => this.table.replication?.replicator,
      busy: (t) =>
        this.table.replication?.riding.busy(
          { tenant: t.tenant_id, namespace: t.namespace, stream: t.stream, shard: t.shard },
          t.kind,
        ) ?? false,
      nudge: () => this.reporter.nudge(),
      reported: () => this.reporter.reported(),
      log: clog,
      registry: metrics.registry,
    });
    this.reporter.onTransfers = (list) => transfers.request(list);
    this.book = this.refreshNodeBook();
    this.peers.start();
    // Before the first snapshot: the replicated shards it names this node leader of stay closed.
    this.table.awaitingFailover = deps.freshStorage === true;
    this.freshWaitEnded = deps.freshWaitEnded ?? (async () => undefined);
    void this.follow(clog, url);
  }

  /** The three control-plane feeds this node follows (streams, caches, shard assignments). */
  private feedFollowers(
    client: ControlPlaneClient,
    wait: number,
    clog: Logger,
    registry: Registry,
  ): FeedFollower[] {
    const resyncs = new Counter({
      name: 'felix_broker_shard_watch_resyncs_total',
      help: 'Control-plane feeds resnapshotted, by reason',
      labelNames: ['reason'],
      registers: [registry],
    });
    const onResync = (reason: string) => resyncs.inc({ reason });
    return [
      new FeedFollower(client, 'streams', wait, this.table.streamsFeed, clog, onResync),
      new FeedFollower(client, 'caches', wait, this.table.cachesFeed, clog, onResync),
      new FeedFollower(
        client,
        'shard-assignments',
        wait,
        this.table.assignmentsFeed,
        clog,
        (reason) => {
          onResync(reason);
          // The control plane's history went back (its database restored): hold on to newer.
          if (reason === 'sequence_reset') this.table.assignmentsWentBack = true;
        },
        (sentAt) => this.membership.lease.assignmentsSeen(sentAt),
      ),
    ];
  }

  /** The led shards' replica reports, each naming its creation for a control plane that reads it. */
  private reports(): ShardReport[] {
    const reports = this.table.replication?.replicator.reports() ?? [];
    if (!this.membership.reportsUid) return reports;
    return reports.map((r) => {
      const uid = this.table.uidOf(r.kind, r.tenant_id, r.namespace, r.stream);
      return uid === undefined || uid === '' ? r : { ...r, uid };
    });
  }

  /** The client every control-plane call goes through, through the test partition when set. */
  private controlPlaneClient(deps: ClusterNodeDeps, url: string, log: Logger): ControlPlaneClient {
    const reachable = new Gauge({
      name: 'felix_broker_controlplane_reachable',
      help: 'Whether the last control-plane call got an answer (0: network error, timeout or 5xx)',
      registers: [deps.metrics.registry],
    });
    reachable.set(0);
    const said = this.reachability;
    return new ControlPlaneClient(url, deps.bearer, {
      ...(deps.partition ? { fetch: partitionedFetch(deps.partition) } : {}),
      onOutcome: (ok, what, err) => {
        reachable.set(ok ? 1 : 0);
        const now = performance.now();
        const call = callKind(what);
        const notice = ok ? said.answered(call, now) : said.failed(call, now);
        if (notice !== null) logReachability(log, url, notice, err);
      },
    });
  }

  /** Starts the feeds; registers once every first snapshot is applied and reconciled. */
  private async follow(log: Logger, url: string): Promise<void> {
    for (const f of this.feeds) f.start();
    await Promise.all(this.feeds.map((f) => f.whenSynced()));
    if (this.table.awaitingFailover && !(await this.awaitFailover(log))) return;
    await this.table.settled();
    this.membership.start();
    this.reporter.start();
    log.info({ controlplane: url }, 'first catalog and assignment snapshots applied');
  }

  /** Started without its shard logs: waits for its replicated shards to move
   *  (fresh-storage.ts). False when the broker stopped meanwhile (the wait goes on at its next
   *  start: nothing opens, nothing registers). */
  private async awaitFailover(log: Logger): Promise<boolean> {
    const ended = await awaitFailover(
      {
        ledWithCopies: () => this.table.ledWithCopies(),
        lifecycle: () => this.table.nodeLifecycles.get(this.nodeId),
        refresh: () => this.refreshBook(),
        signal: this.stopBook.signal,
      },
      log,
    );
    if (ended === 'stopped') return false;
    await this.freshWaitEnded().catch((err: unknown) => {
      // Left behind, the marker only makes the next start wait again (bounded, as this one).
      log.warn({ err }, 'removing the failover-wait marker failed');
    });
    if (ended !== 'moved' || this.table.ledWithCopies() > 0)
      log.warn(
        { ended, shards: this.table.ledWithCopies() },
        'opening the replicated shards it still leads',
      );
    this.table.awaitingFailover = false;
    this.table.kick();
    return true;
  }

  /** Keeps the address book fresh; a failed refresh keeps the previous one. */
  private async refreshNodeBook(): Promise<void> {
    const signal = this.stopBook.signal;
    while (!signal.aborted) {
      await this.refreshBook();
      await sleep(NODE_BOOK_REFRESH_MS, signal);
    }
  }

  /** A led shard has a follower newly in sync: its replica report goes out soon. */
  reportSoon(): void {
    this.reporter.nudge();
  }

  /**
   * Reads the address book now (sharing a read in flight); resolves when it is applied or
   * failed (a failed read keeps the previous book: refusals then name the leader without its
   * address, and a forward to a node not in it is refused as unreachable).
   */
  refreshBook(): Promise<void> {
    this.bookRefresh ??= (async () => {
      try {
        const nodes = await this.cp.nodes(this.stopBook.signal);
        this.table.nodeAddresses = new Map(nodes.map((n) => [n.nodeId, n.clientAddr]));
        this.table.nodeLifecycles = new Map(nodes.map((n) => [n.nodeId, n.lifecycle]));
        this.table.peerAddresses = new Map(nodes.map((n) => [n.nodeId, n.advertiseAddr]));
        this.peers.setNodes(nodes);
      } catch {
        // kept: the previous book (see above); the periodic refresh tries again
      } finally {
        this.bookRefresh = null;
      }
    })();
    return this.bookRefresh;
  }

  get nodeId(): string {
    return this.membership.spec.node_id;
  }

  /** Serving: both snapshots applied and reconciled, and registered with the control plane. */
  get ready(): boolean {
    if (!this.readied && this.feeds.every((f) => f.synced) && this.membership.isRegistered)
      this.readied = true;
    return this.readied;
  }

  /**
   * SIGTERM, before `leave`: hands the shards this broker leads to level followers (bounded by
   * `budgetMs`; cluster/handoff.ts). Heartbeats, reports and feeds keep running meanwhile, except
   * the periodic report, which the hand-off's final one replaces.
   */
  /** Whether this broker ships any shard it leads (something a hand-off could move). */
  get leadsReplicated(): boolean {
    return (this.table.replication?.replicator.reports().length ?? 0) > 0;
  }

  async handOff(
    budgetMs: number,
    followerCopy: HandoffDeps['followerCopy'],
  ): Promise<HandoffOutcome> {
    await this.reporter.stop();
    return handOff(
      {
        client: this.cp,
        membership: this.membership,
        replicator: () => this.table.replication?.replicator,
        followerCopy,
        configOf: (r) =>
          r.kind === 'stream'
            ? this.table.streamConfig(r.tenant_id, r.namespace, r.stream)
            : this.table.cacheOf(r),
        log: this.log,
      },
      budgetMs,
    );
  }

  /** SIGTERM: deregister (bounded), then stop following the feeds and reconciling. */
  async leave(): Promise<void> {
    await this.reporter.stop();
    await this.membership.leave(CONTROLPLANE_DEREGISTER_MS_MAX);
    this.peers.stop();
    this.stopBook.abort();
    await this.book;
    await Promise.all(this.feeds.map((f) => f.stop()));
    await this.table.close();
  }
}

/** The broker's lines about a control-plane outage (reachability.ts decides when). */
function logReachability(
  log: Logger,
  url: string,
  n: ReachabilityNotice,
  err: Error | undefined,
): void {
  if (n.kind === 'lost')
    log.warn(
      { control_plane: url, call: n.call, reason: err?.message },
      'control plane not answering; calls are retried (reads keep being served; writes to the shards this broker leads stop when its lease lapses)',
    );
  else if (n.kind === 'still')
    log.warn(
      {
        control_plane: url,
        calls: n.calls,
        away_ms: Math.round(n.awayMs),
        failed_calls: n.failedCalls,
        reason: err?.message,
      },
      'control plane still not answering',
    );
  else
    log.info(
      {
        control_plane: url,
        calls: n.calls,
        away_ms: Math.round(n.awayMs),
        failed_calls: n.failedCalls,
      },
      'control plane answering again',
    );
}
