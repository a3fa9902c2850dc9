/**
 * The broker process in one object: catalog, client listeners (QUIC and TLS over TCP), the HTTP
 * listener, and the SIGTERM drain. `Broker.start` returns once every listener is up.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mkdir, readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import {
  type Connection,
  type Listener,
  type TlsMaterial,
  listen,
  loadOrCreateDevCertificate,
} from '@felix/transport';
import { type DirLock, type Io, lockDir, nodeIo } from '@felix/storage';
import { endFreshWait, freshStorageAtStart } from './cluster/fresh-storage.js';
import type { Logger } from 'pino';
import { Authenticator } from './session/authenticator.js';
import { Catalog } from './catalog/catalog.js';
import { checkYamlShardCounts } from './catalog/yaml-shard-counts.js';
import { NodeToken } from './cluster/node-token.js';
import type { BrokerConfig, TransportName } from './config/types.js';
import { ListenError } from './errors.js';
import { HANDOFF_TIMEOUT_MS } from './limits.js';
import { Partition, partitionedFetch } from './faults/partition.js';
import { storageIoFor } from './faults/storage-faults.js';
import { SyncWatchIo } from './util/sync-watch-io.js';
import { notReadyReason, startHttp } from './http/http-server.js';
import { BrokerMetrics } from './metrics.js';
import { CLOSE_SHUTDOWN, ClientSession } from './session/client-session.js';
import { openDurableStore } from './streams/durable-store.js';
import { BrokerRequests } from './requests.js';
import {
  ClusterNode,
  checkClusterConfig,
  controlPlaneUrl,
  nodeSpec,
} from './cluster/cluster-node.js';
import {
  type InternalNode,
  followerLogOptions,
  ownCapabilities,
  startInternalNode,
} from './cluster/internal-node.js';
import { Forwarder } from './cluster/forwarder.js';
import { ForwardServer } from './cluster/forward-server.js';
import { PeerPool } from './cluster/peer-pool.js';
import { Replicator } from './cluster/replicator.js';
import { registerDiscoveryHandlers } from './cluster/discovery-handlers.js';
import { ridingLogsOf } from './cluster/riding-logs.js';
import { DeletedShards, sweepDeletedShards } from './cluster/deleted-shards.js';
import type { ShardKind, ShardTable } from './cluster/shard-table.js';
import type { OpenStore } from './catalog/catalog.js';
import type { ShardHooks } from './streams/shard.js';

/** Transport timeouts for client connections: notice a dead peer within ~15 s. */
const IDLE_TIMEOUT_MS = 15_000;
const KEEPALIVE_INTERVAL_MS = 5_000;
const CLOSE_TIMEOUT_MS = 2_000;

export interface BrokerAddresses {
  quic: number | null;
  tls: number | null;
  http: number;
  fingerprint: string | null;
  certPem: string;
}

export class Broker {
  private draining = false;
  private ready = false;
  private readonly sessions = new Set<ClientSession>();
  /** Open client connections per remote IP (broker.connections_per_ip_max). */
  private readonly perIp = new Map<string, number>();
  private authenticator: Authenticator | null = null;
  private readonly nodeToken: NodeToken;
  private readonly bearer = () => this.nodeToken.get();
  private listeners: Listener[] = [];
  /** The broker-to-broker listener, when `cluster.internal_bind` is set. */
  internal: InternalNode | null = null;
  /** The leader's side of replication (with an internal listener and a control plane). */
  private replicator: Replicator | null = null;
  /** The one link per peer broker, shared by replication and forwarding. */
  private peerPool: PeerPool | null = null;
  private http: Server | null = null;
  private catalog: Catalog | null = null;
  private requests: BrokerRequests | null = null;
  /** The data directory's lock, held from start until every log is closed. */
  private dataDirLock: DirLock | null = null;
  /** The data dir was absent or empty at start (cluster/fresh-storage.ts). */
  private freshStorage = false;
  /** Test-only fault seams (docs/reliability.md): both absent unless their variable is set. */
  private storageIo: Io | undefined;
  private partition: Partition | null = null;
  /** Set when a control plane is configured (cluster.controlplane_url). */
  cluster: ClusterNode | null = null;
  readonly metrics = new BrokerMetrics();
  addresses: BrokerAddresses | null = null;

  private constructor(
    readonly config: BrokerConfig,
    readonly log: Logger,
  ) {
    this.nodeToken = NodeToken.of(config);
  }

  static async start(config: BrokerConfig, log: Logger): Promise<Broker> {
    const broker = new Broker(config, log);
    try {
      await broker.startAll();
    } catch (err) {
      // The start failure is what the caller must hear; a failed cleanup would hide it.
      await broker.stop().catch(() => undefined);
      throw err;
    }
    return broker;
  }

  private async startAll(): Promise<void> {
    const cfg = this.config;
    const m = this.metrics;
    await this.prepare();
    const openStore: OpenStore = (s, i) => openDurableStore(cfg, s, i, m, this.storageIo);
    const hooks: ShardHooks = {
      onDrop: (n) => m.fanoutDropped.inc(n),
      onApply: (shard) => this.requests?.onApply(shard),
      onQuorumWait: (outcome) => m.quorumWaits.inc({ outcome }),
    };
    this.catalog = await Catalog.open(cfg, openStore, hooks);
    this.requests = new BrokerRequests({
      config: cfg,
      catalog: this.catalog,
      metrics: m,
      log: this.log,
      draining: () => this.draining,
      storageIo: this.storageIo,
    });
    this.countStreams();
    const tls = await this.tlsMaterial();
    const ports = await this.listenAll(tls);
    const selfId = nodeSpec(cfg, ports.quic ?? ports.tls ?? cfg.broker.port).node_id;
    this.internal = await startInternalNode(
      cfg,
      selfId,
      tls,
      this.log,
      (s, kind) =>
        this.cluster?.table.replicaRole(kind, s.tenantId, s.namespace, s.stream, s.shard),
      (s) => this.cluster?.table.streamConfig(s.tenantId, s.namespace, s.stream),
      this.storageIo,
    );
    const http = await startHttp(cfg.broker.http_host, cfg.broker.http_port, m, {
      notReady: () => this.notReady(),
      refreshGauges: () => this.refreshGauges(),
    }).catch((err: unknown) => {
      throw new ListenError(`http ${cfg.broker.http_host}:${cfg.broker.http_port}`, { cause: err });
    });
    this.http = http.server;
    this.addresses = {
      quic: ports.quic,
      tls: ports.tls,
      http: http.port,
      fingerprint: tls.fingerprint,
      certPem: tls.certPem,
    };
    if (controlPlaneUrl(cfg) !== null)
      this.joinCluster(openStore, hooks, ports.quic ?? ports.tls ?? cfg.broker.port, selfId, tls);
    this.ready = true;
    this.log.info(
      {
        quic_port: ports.quic,
        tls_port: ports.tls,
        http_port: http.port,
        host: cfg.broker.host,
        cert_fingerprint: tls.fingerprint,
        streams: cfg.streams.length,
        data_dir: cfg.durable.data_dir,
        ...(this.cluster ? { node_id: this.cluster.nodeId } : {}),
      },
      'listening',
    );
  }

  /** What must hold before anything listens or opens a log. */
  private async prepare(): Promise<void> {
    const cfg = this.config;
    checkClusterConfig(cfg);
    await this.nodeToken.verify();
    // Every log opens through it: a failed fsync is logged and counted when it happens.
    this.storageIo = new SyncWatchIo(
      (await storageIoFor(cfg.testing.storage_fault_file, this.log)) ?? nodeIo,
      { log: this.log, counted: () => this.metrics.storageSyncFailures.inc() },
    );
    this.partition = Partition.fromConfig(cfg.testing.partition_file, this.log);
    const fetchFn = this.partition ? partitionedFetch(this.partition) : undefined;
    // A `tokens` broker without a key source refuses to start (never a silent dev mode).
    this.authenticator = await Authenticator.create(cfg, this.log, this.bearer, fetchFn);
    if (cfg.durable.data_dir !== null) {
      // Before anything opens a log: a second broker on this directory stops here, naming the
      // holder, instead of appending to the same segments.
      // Before the lock and every other file: whether it starts without its shard logs.
      if (controlPlaneUrl(cfg) !== null)
        this.freshStorage = await freshStorageAtStart(cfg.durable.data_dir, nodeIo);
      await mkdir(cfg.durable.data_dir, { recursive: true });
      this.dataDirLock = await lockDir(cfg.durable.data_dir);
      // A YAML catalog whose shard counts changed is refused before any log opens.
      if (controlPlaneUrl(cfg) === null)
        await checkYamlShardCounts(cfg, cfg.durable.data_dir, this.storageIo ?? nodeIo, (f, msg) =>
          this.log.warn(f, msg),
        );
      // Files of deleted shards a crash left aside (cluster/deleted-shards.ts): no log opens them.
      void sweepDeletedShards(cfg.durable.data_dir, this.storageIo ?? nodeIo, this.log);
    }
  }

  /** Why /ready answers 503 now; null when the broker is ready. */
  private notReady(): string | null {
    const c = this.cluster;
    return notReadyReason({
      started: this.ready,
      draining: this.draining,
      cluster: c === null ? null : { ready: c.ready, lease: c.table.lease },
    });
  }

  /** felix_broker_streams reads the catalog at each scrape: a control plane's feed changes it. */
  private countStreams(): void {
    this.metrics.streamsServed = () => this.catalog?.all() ?? [];
  }

  /** Starts the configured client listeners (TLS first: with port 0 it picks the number QUIC
   *  then shares); answers the port of each. */
  private async listenAll(tls: {
    certPem: string;
    keyPem: string;
  }): Promise<Record<TransportName, number | null>> {
    const cfg = this.config;
    const ports: Record<TransportName, number | null> = { quic: null, tls: null };
    for (const transport of ['tls', 'quic'] as const) {
      if (!cfg.broker.transports.includes(transport)) continue;
      const explicit = transport === 'quic' ? cfg.broker.quic_port : cfg.broker.tls_port;
      const port =
        explicit ?? (cfg.broker.port === 0 && ports.tls !== null ? ports.tls : cfg.broker.port);
      let listener: Listener;
      try {
        listener = await listen({
          transport,
          host: cfg.broker.host,
          port,
          tls: { certPem: tls.certPem, keyPem: tls.keyPem },
          idleTimeoutMs: IDLE_TIMEOUT_MS,
          keepAliveIntervalMs: KEEPALIVE_INTERVAL_MS,
          closeTimeoutMs: CLOSE_TIMEOUT_MS,
          // Never stricter than the session limit (an empty broker still takes that many
          // reconnects at once); so a listener holds at most twice it in connections.
          handshakesInFlightMax: cfg.broker.max_client_connections,
          onHandshakeRefused: () => this.metrics.connectionsRefused.inc({ reason: 'handshakes' }),
        });
      } catch (err) {
        throw new ListenError(`${transport} ${cfg.broker.host}:${port}`, { cause: err });
      }
      this.listeners.push(listener);
      ports[transport] = listener.port;
      void this.acceptLoop(listener);
    }
    return ports;
  }

  /** Follows the control plane's feeds, serving and shipping what they assign this broker. */
  private joinCluster(
    openStore: OpenStore,
    hooks: ShardHooks,
    clientPort: number,
    selfId: string,
    tls: TlsMaterial,
  ): void {
    this.cluster = new ClusterNode({
      config: this.config,
      catalog: this.catalog!,
      openStore,
      hooks,
      metrics: this.metrics,
      log: this.log,
      clientPort,
      caches: this.requests!.caches,
      bearer: this.bearer,
      partition: this.partition,
      freshStorage: this.freshStorage,
      freshWaitEnded: () => endFreshWait(this.config.durable.data_dir!, nodeIo),
    });
    this.requests!.ownership = this.cluster.table;
    this.cluster.table.draining = () => this.draining;
    this.cluster.table.shardFiles = new DeletedShards({
      cfg: this.config,
      io: this.storageIo ?? nodeIo,
      log: this.log,
      riding: ridingLogsOf(this.requests!.caches, this.requests!.groups),
      releaseFollower: this.internal
        ? (ref, log) => this.internal!.replicas.release(ref, log)
        : null,
    });
    registerDiscoveryHandlers(this.requests!.table, {
      table: this.cluster.table,
      width: (kind, t, ns, name) => this.widthOf(kind, t, ns, name),
    });
    // Set before the first feed snapshot arrives: every shard opened from it ships.
    if (this.internal === null) return;
    this.peerPool = this.peerLinks(selfId, tls);
    this.cluster.table.replication = this.replication(selfId, tls);
    this.forwarding(selfId);
  }

  /** The links to other brokers, through the partition gate, at the node book's addresses. */
  private peerLinks(selfId: string, clientTls: TlsMaterial): PeerPool {
    const cluster = this.cluster!;
    const pool = new PeerPool({
      selfId,
      transport: this.config.cluster.internal_transport,
      cluster: this.internal!.material,
      clientTls,
      // A node the book does not name yet (a leader just placed): read the book once more.
      address: (nodeId) =>
        cluster.table.peerAddresses.get(nodeId) ??
        cluster.refreshBook().then(() => cluster.table.peerAddresses.get(nodeId)),
      dialAllowed: (nodeId) => cluster.peers.dialAllowed(nodeId),
      capabilities: ownCapabilities(this.config),
      log: this.log,
    });
    cluster.peers.onCut((nodeId) => pool.cut(nodeId));
    return pool;
  }

  /** Writes to shards other brokers lead are forwarded there; forwards to this one served. */
  private forwarding(selfId: string): void {
    const table = this.cluster!.table;
    this.requests!.forwarding = new Forwarder({
      selfId,
      pool: this.peerPool!,
      clientAddress: (nodeId) => table.clientAddress(nodeId),
      quorumTimeoutMs: this.config.broker.publish_quorum_timeout_ms,
      registry: this.metrics.registry,
      log: this.log,
    });
    this.internal!.forwards = new ForwardServer({
      selfId,
      authenticator: this.authenticator!,
      route: (kind, t, ns, name, shard) => table.routeView(kind, t, ns, name, shard),
      leaseGap: (key) => table.leaseRefusal('', key)?.reason ?? null,
      peerAddress: (nodeId) => table.peerAddresses.get(nodeId),
      streams: (t, ns, name) => this.catalog!.get(t, ns, name),
      caches: this.requests!.caches,
      metrics: this.metrics,
      draining: () => this.draining,
      log: this.log,
    });
  }

  /** Shards of a stream or cache this broker's catalog holds (the discovery answers' width). */
  private widthOf(kind: ShardKind, t: string, ns: string, name: string): number | undefined {
    if (kind === 'stream') return this.catalog!.get(t, ns, name)?.shards.length;
    try {
      return this.requests!.caches.lookup(t, ns, name).shards;
    } catch {
      return undefined; // not declared here: no owners to name
    }
  }

  /** The leader's shippers and the follower logs to release, over the internal network. */
  private replication(selfId: string, clientTls: TlsMaterial): ShardTable['replication'] {
    const internal = this.internal!;
    const table = this.cluster!.table;
    this.replicator = new Replicator({
      selfId,
      transport: this.config.cluster.internal_transport,
      cluster: internal.material,
      clientTls,
      address: (nodeId) => table.peerAddresses.get(nodeId),
      dialAllowed: (nodeId) => this.cluster!.peers.dialAllowed(nodeId),
      log: this.log,
      replicaLagMaxMs: this.config.cluster.replica_lag_max_ms,
      onInSyncJoined: () => this.cluster?.reportSoon(),
      onBackoff: () => this.metrics.replicationBackoffs.inc(),
      onRebuilt: (log) => {
        this.metrics.replicationRebuilds.inc({ log });
        // The control plane takes the follower's halt back only from a report: send one now.
        this.cluster?.reportSoon();
      },
      capabilities: ownCapabilities(this.config),
      ...(this.peerPool !== null ? { pool: this.peerPool } : {}),
    });
    return {
      replicator: this.replicator,
      releaseFollower: (ref, log) => internal.replicas.release(ref, log),
      // Each copy's failure is its own (refreshRetention keeps its old bounds): none escapes.
      refreshFollowerRetention: () => internal.replicas.refreshRetention().catch(() => 0),
      logOptions: (ref, log) =>
        followerLogOptions(
          this.config,
          ref,
          log,
          table.streamConfig(ref.tenantId, ref.namespace, ref.stream),
        ),
      riding: ridingLogsOf(this.requests!.caches, this.requests!.groups),
    };
  }

  private async tlsMaterial(): Promise<{
    certPem: string;
    keyPem: string;
    fingerprint: string | null;
  }> {
    const b = this.config.broker;
    if (b.tls_cert && b.tls_key) {
      return {
        certPem: await readFile(b.tls_cert, 'utf8'),
        keyPem: await readFile(b.tls_key, 'utf8'),
        fingerprint: null,
      };
    }
    const dir = this.config.durable.data_dir ?? join(tmpdir(), 'felix-broker-dev-cert');
    const dev = await loadOrCreateDevCertificate(dir);
    return { certPem: dev.certPem, keyPem: dev.keyPem, fingerprint: dev.fingerprint };
  }

  private async acceptLoop(listener: Listener): Promise<void> {
    const m = this.metrics;
    try {
      for await (const conn of listener.connections()) {
        const refused = this.refusal(conn);
        if (refused !== null) {
          m.connectionsRefused.inc({ reason: refused.reason });
          void conn
            .close({ code: CLOSE_SHUTDOWN, reason: refused.message })
            // A refused connection that is already gone needs no close.
            .catch(() => undefined);
          continue;
        }
        void this.serve(conn);
      }
    } catch (err) {
      if (!this.draining) this.log.error({ err, transport: listener.transport }, 'listener failed');
    }
  }

  /** Why a new connection is closed on arrival, before it may authenticate; null to serve it. */
  private refusal(conn: Connection): { reason: string; message: string } | null {
    if (this.draining) return { reason: 'draining', message: 'broker shutting down' };
    if (this.sessions.size >= this.config.broker.max_client_connections) {
      return { reason: 'limit', message: 'too many connections' };
    }
    const perIp = this.config.broker.connections_per_ip_max;
    if (perIp > 0 && (this.perIp.get(ipOf(conn.remote)) ?? 0) >= perIp) {
      return { reason: 'per_ip', message: `at most ${perIp} connections from one address` };
    }
    return null;
  }

  private async serve(conn: Connection): Promise<void> {
    const ip = ipOf(conn.remote);
    this.perIp.set(ip, (this.perIp.get(ip) ?? 0) + 1);
    const session = new ClientSession(conn, {
      config: this.config,
      metrics: this.metrics,
      log: this.log,
      draining: () => this.draining,
      handlers: this.requests!.table,
      authenticator: this.authenticator!,
      ...(this.cluster ? { ownership: this.cluster.table } : {}),
    });
    this.sessions.add(session);
    this.metrics.connections.inc({ transport: conn.transport });
    try {
      await session.run();
    } finally {
      this.sessions.delete(session);
      const left = (this.perIp.get(ip) ?? 1) - 1;
      if (left <= 0) this.perIp.delete(ip);
      else this.perIp.set(ip, left);
      this.metrics.connections.dec({ transport: conn.transport });
    }
  }

  /** Per led shard gauges, rebuilt at each scrape so a shard no longer led drops out. */
  private refreshShardHealth(): void {
    this.metrics.replicationExposed.reset();
    this.metrics.replicationInSync.reset();
    for (const h of this.replicator?.shardHealth() ?? []) {
      const labels = {
        kind: h.kind,
        tenant: h.ref.tenantId,
        namespace: h.ref.namespace,
        stream: h.ref.stream,
        shard: String(h.ref.shard),
      };
      this.metrics.replicationExposed.set(labels, h.exposedRecords);
      this.metrics.replicationInSync.set(labels, h.inSync);
    }
  }

  private refreshGauges(): void {
    this.metrics.replicationLag.set(this.replicator?.lagRecords() ?? 0);
    this.metrics.replicationUnsynced.set(this.replicator?.unsyncedFollowers() ?? 0);
    this.refreshShardHealth();
    let max = 0;
    let total = 0;
    let bytesMax = 0;
    let bytes = 0;
    for (const s of this.catalog?.all() ?? []) {
      for (const sh of s.shards) {
        for (const q of sh.subscribers) {
          max = Math.max(max, q.depth);
          total += q.depth;
          bytesMax = Math.max(bytesMax, q.bytes);
          bytes += q.bytes;
        }
      }
    }
    this.metrics.fanoutQueueDepth.set(max);
    this.metrics.fanoutQueued.set(total);
    this.metrics.fanoutQueuedBytesMax.set(bytesMax);
    this.metrics.fanoutQueuedBytes.set(bytes);
  }

  /**
   * SIGTERM hand-off (docs/replication.md): new writes are already refused (`draining`); let the
   * in-flight ones settle, then hand the led shards to level followers, all within a bound.
   */
  private async handOff(): Promise<void> {
    if (this.cluster === null || !this.cluster.leadsReplicated) return;
    const budget = Math.min(HANDOFF_TIMEOUT_MS, this.config.broker.drain_timeout_ms / 2);
    const start = performance.now();
    const settled = (async () => {
      await this.catalog?.settle();
      await Promise.allSettled([...this.sessions].map((s) => s.settled()));
    })();
    await Promise.race([settled, new Promise((r) => setTimeout(r, budget / 2).unref())]);
    const left = Math.max(0, budget - (performance.now() - start));
    const outcome = await this.cluster.handOff(left, (ref, log) =>
      this.internal?.replicas.status(ref, log),
    );
    this.log.info({ outcome, ms: Math.round(performance.now() - start) }, 'hand-off finished');
  }

  /**
   * Drains: refuse new work, stop reading requests, let in-flight appends and their acks finish
   * and end each request stream after its answers (bounded by `drain_timeout_ms`), close client
   * connections with code 0, close logs and listeners.
   */
  async stop(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    this.log.info({ connections: this.sessions.size }, 'draining');
    await this.handOff();
    // Leave the cluster first, so placement stops counting this node before its shards close.
    await this.cluster?.leave();
    // Waiting group polls answer (empty) now instead of holding the drain for their wait.
    this.requests?.drain();
    const bound = new Promise<'timeout'>((resolve) => {
      setTimeout(() => resolve('timeout'), this.config.broker.drain_timeout_ms).unref();
    });
    const inFlight = (async () => {
      // Nothing read from now on is applied; each request stream ends once answered, which tells
      // its client that what it sent there unanswered was not applied (stream-finish.ts).
      const peerCloseMs = this.config.broker.drain_peer_close_ms;
      await Promise.allSettled([...this.sessions].map((s) => s.quiesce(peerCloseMs)));
      await this.catalog?.settle();
      await Promise.allSettled([...this.sessions].map((s) => s.settled()));
    })();
    const outcome = await Promise.race([inFlight.then(() => 'settled' as const), bound]);
    if (outcome === 'timeout') this.log.warn('drain bound reached with work in flight');
    await Promise.allSettled(
      [...this.sessions].map((s) =>
        s.conn.close({ code: CLOSE_SHUTDOWN, reason: 'broker shutting down' }),
      ),
    );
    await Promise.allSettled(this.listeners.map((l) => l.close()));
    await this.replicator?.close();
    await this.peerPool?.close();
    await this.internal?.close();
    await this.requests?.close();
    await this.catalog?.close();
    await this.dataDirLock?.release();
    this.partition?.stop();
    await new Promise<void>((resolve) => {
      if (!this.http) resolve();
      else {
        this.http.closeAllConnections();
        this.http.close(() => resolve());
      }
    });
    this.log.info('stopped');
  }
}

/** The address part of a transport's `host:port` (IPv6 addresses keep their colons). */
export function ipOf(remote: string): string {
  const at = remote.lastIndexOf(':');
  const host = at < 0 ? remote : remote.slice(0, at);
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
