/**
 * `startCluster`: a real control plane and N real brokers as child processes (never an import of
 * a service), with the process, network and storage faults of the `Cluster` contract (types.ts).
 */
import { mkdir, mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ConnectOptions, type FelixClient, connect } from '@felix/client';
import { Broker } from './cluster/broker.js';
import {
  clientToken,
  createCatalog,
  initOperator,
  initTenant,
  nodeToken,
} from './cluster/bootstrap.js';
import { ControlPlane } from './cluster/control-plane.js';
import { CONTROLPLANE, Partitions, StorageFaults, settle } from './cluster/faults.js';
import { PeerClient } from './cluster/peer.js';
import { type ClusterPki, type NodeTls, makeClusterPki } from './cluster/pki.js';
import type { ManagedProcess } from './cluster/process.js';
import { type Assignment, type ShardSet, unserved } from './cluster/served.js';
import { pollUntil, within } from './cluster/within.js';
import {
  BadClusterSpecError,
  ClusterClosedError,
  FaultTimeoutError,
  NodeStateError,
  NotServedError,
  UnknownNodeError,
} from './errors.js';
import {
  CLIENT_CONNECT_TIMEOUT_MS,
  CLIENT_IDLE_TIMEOUT_MS,
  CLIENT_RECONNECT_BASE_MS,
  CLIENT_RECONNECT_MAX_DELAY_MS,
  CLIENT_REQUEST_TIMEOUT_MS,
  CLUSTER_BROKERS_MAX,
  FAULT_DEADLINE_MS,
  LOG_TAILS_LINES_DEFAULT,
  LOG_TAIL_READ_BYTES_MAX,
  PROCESS_EXIT_DEADLINE_MS,
  PROCESS_LISTEN_DEADLINE_MS,
  PROCESS_STOP_GRACE_MS,
  SERVED_DEADLINE_MS,
  SERVED_POLL_MS,
  scaled,
} from './limits.js';
import type {
  Cluster,
  ClusterNode,
  ClusterSpec,
  FaultRecord,
  NodeRef,
  StreamSpec,
} from './types.js';

/** Refuses a spec the harness cannot run, naming the field. */
function checkSpec(spec: ClusterSpec): void {
  if (!Number.isInteger(spec.brokers) || spec.brokers < 1 || spec.brokers > CLUSTER_BROKERS_MAX) {
    throw new BadClusterSpecError(
      `brokers must be an integer in 1..${CLUSTER_BROKERS_MAX}, got ${spec.brokers}`,
    );
  }
  const cp = spec.controlPlane ?? 'sqlite';
  if (cp !== 'sqlite' && cp !== 'postgres') {
    throw new BadClusterSpecError(`controlPlane must be sqlite or postgres, got ${String(cp)}`);
  }
  const transport = spec.transport ?? 'quic';
  if (transport !== 'quic' && transport !== 'tls') {
    throw new BadClusterSpecError(`transport must be quic or tls, got ${String(transport)}`);
  }
  for (const s of spec.streams ?? []) {
    if (!Number.isInteger(s.shards) || s.shards < 1) {
      throw new BadClusterSpecError(`stream ${s.name}: shards must be a positive integer`);
    }
  }
  for (const c of spec.caches ?? []) {
    if (c.durable === false) {
      throw new BadClusterSpecError(
        `cache ${c.name}: durable false is not possible; a control-plane broker with a data dir ` +
          'keeps every cache in a log',
      );
    }
  }
  groupCursorEnv(spec.streams ?? []);
}

/** The brokers' FELIX_GROUP_CURSOR_FSYNC: with a control plane it is a broker setting, so the
 *  streams of one cluster must agree on it. */
function groupCursorEnv(streams: readonly StreamSpec[]): NodeJS.ProcessEnv {
  const modes = new Set(streams.flatMap((s) => (s.groupCursor ? [s.groupCursor] : [])));
  if (modes.size > 1) {
    throw new BadClusterSpecError(
      'streams name different groupCursor modes; with a control plane the mode is one broker ' +
        'setting (FELIX_GROUP_CURSOR_FSYNC) for every stream: start one cluster per mode',
    );
  }
  const [mode] = modes;
  return mode === undefined ? {} : { FELIX_GROUP_CURSOR_FSYNC: mode };
}

/** The last `lines` lines of a log file (read from its last LOG_TAIL_READ_BYTES_MAX bytes). */
async function fileTail(path: string, lines: number): Promise<string[]> {
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  try {
    fh = await open(path, 'r');
    const size = (await fh.stat()).size;
    const len = Math.min(size, LOG_TAIL_READ_BYTES_MAX);
    const buf = Buffer.alloc(len);
    await fh.read(buf, 0, len, size - len);
    const all = buf.toString('utf8').split('\n');
    if (all.at(-1) === '') all.pop();
    return all.slice(-lines);
  } catch {
    return ['(no log yet)']; // a process that never started has no file
  } finally {
    await fh?.close();
  }
}

export class FelixCluster implements Cluster {
  readonly dir: string;
  readonly tenant: string;
  readonly namespace: string;
  readonly brokers: Broker[] = [];
  /** Brokers started outside the cluster's membership (`startOutsider`), stopped at shutdown. */
  readonly outsiders: Broker[] = [];
  readonly faults: FaultRecord[] = [];
  readonly controlPlane: ControlPlane;
  private readonly transport: 'quic' | 'tls';
  private readonly partitions: Partitions;
  private readonly storage = new StorageFaults();
  private pki: ClusterPki | null = null;
  private issued = 0;
  private operatorToken = '';
  /** The tenant admin's token (the catalog of the cluster's namespace). */
  private adminToken = '';
  private token = '';
  private expected: ShardSet[] = [];
  private closed = false;

  constructor(
    private readonly spec: ClusterSpec,
    dir: string,
  ) {
    this.dir = dir;
    this.tenant = spec.tenant ?? 'campaign';
    this.namespace = spec.namespace ?? 'default';
    this.transport = spec.transport ?? 'quic';
    this.controlPlane = new ControlPlane({
      dir,
      backend: spec.controlPlane ?? 'sqlite',
      ...(spec.controlPlaneEnv ? { env: spec.controlPlaneEnv } : {}),
    });
    this.partitions = new Partitions(this.brokers);
  }

  get nodes(): readonly ClusterNode[] {
    return this.brokers;
  }

  get controlPlaneUrl(): string {
    return this.controlPlane.url;
  }

  /** The CA certificate (PEM) that signed the brokers' certificate. */
  get caPem(): string {
    return this.pki?.caPem ?? '';
  }

  /** The client token of the cluster's tenant (every data permission). */
  get clientToken(): string {
    return this.token;
  }

  /** A certificate of the cluster CA naming `name` (as a broker's: localhost, `name`). */
  async issueCertificate(name: string): Promise<NodeTls> {
    this.open();
    if (this.pki === null) throw new ClusterClosedError('the cluster has no CA before it boots');
    this.issued++;
    return this.pki.issue(name, `extra-${this.issued}-${name}`);
  }

  /**
   * The test speaking as broker `as` on `target`'s internal listener (a cluster started with
   * `replication: true`): by default with a certificate of the cluster CA naming `as`, so the
   * test may act as any member (a deposed leader); `tls` another certificate, `null` none.
   */
  async peer(
    target: NodeRef,
    as: string,
    tls?: { certPem: string; keyPem: string } | null,
  ): Promise<PeerClient> {
    const b = this.node(target);
    if (b.internalPort === 0) throw new NodeStateError(`${b.id} runs no internal listener`);
    let material = tls ?? undefined;
    if (tls === undefined) {
      const issued = await this.issueCertificate(as);
      const [certPem, keyPem] = await Promise.all([
        readFile(issued.certPath, 'utf8'),
        readFile(issued.keyPath, 'utf8'),
      ]);
      material = { certPem, keyPem };
    }
    return PeerClient.dial({
      address: `127.0.0.1:${b.internalPort}`,
      transport: 'tls',
      nodeId: b.id,
      selfId: as,
      ...(material === undefined ? {} : { tls: material }),
      ca: this.caPem,
    });
  }

  /**
   * Starts one more broker (`n<N>`, with a node credential of the control plane like any
   * member) whose internal listener has no cluster certificate: it is not a member of the
   * cluster's internal network. It is stopped at shutdown; a start that fails throws
   * ProcessStartError (its log says why).
   */
  async startOutsider(env: NodeJS.ProcessEnv = {}): Promise<Broker> {
    this.open();
    const index = this.brokers.length + this.outsiders.length;
    const id = `n${index}`;
    const dir = join(this.dir, id);
    await mkdir(dir, { recursive: true });
    const b = new Broker({
      index,
      dir,
      tls: await this.issueCertificate(id),
      env: {
        FELIX_CONTROLPLANE_URL: this.controlPlane.url,
        FELIX_NODE_TOKEN: await nodeToken(this.controlPlane, id),
        ...this.spec.env,
        ...env,
      },
      internalUncertified: true,
    });
    this.outsiders.push(b);
    await b.firstStart();
    return b;
  }

  /** Starts everything, in order; the caller shuts down on a failure. */
  async boot(): Promise<void> {
    const ids = Array.from({ length: this.spec.brokers }, (_, i) => `n${i}`);
    const nodeDirs = ids.map((id) => ({ id, dir: join(this.dir, id) }));
    await Promise.all(nodeDirs.map((n) => mkdir(n.dir, { recursive: true })));
    this.pki = await makeClusterPki(this.dir);
    const cp = this.controlPlane;
    await cp.start();
    this.operatorToken = await initOperator(cp);
    const admin = await initTenant(cp, this.operatorToken, this.tenant, this.namespace);
    this.adminToken = admin;
    const cursorEnv = groupCursorEnv(this.spec.streams ?? []);
    const pki = this.pki;
    // Each broker's certificate and token at once: one by one they took ~150 ms per broker.
    const made = await Promise.all(
      nodeDirs.map(async (n) => ({ tls: await pki.issue(n.id), token: await nodeToken(cp, n.id) })),
    );
    for (const [i, n] of nodeDirs.entries()) {
      const { tls, token } = made[i] as (typeof made)[number];
      const env = {
        FELIX_CONTROLPLANE_URL: cp.url,
        FELIX_NODE_TOKEN: token,
        ...cursorEnv,
        ...this.spec.env,
      };
      this.brokers.push(
        new Broker({
          index: i,
          dir: n.dir,
          tls,
          env,
          ...(this.spec.replication === true ? { internalCaPath: this.pki.caPath } : {}),
        }),
      );
    }
    // Empty fault files from the start: a broker reads "no fault" rather than a missing file.
    await this.partitions.heal();
    await Promise.all(this.brokers.map((b) => this.storage.heal(b)));
    await Promise.all(this.brokers.map((b) => b.firstStart()));
    // Every broker live before the catalog exists, so placement spreads shards over all of them.
    await this.waitLive();
    this.expected = await createCatalog(
      cp,
      admin,
      { tenant: this.tenant, namespace: this.namespace },
      this.spec.streams ?? [],
      this.spec.caches ?? [],
    );
    this.token = await clientToken(cp, this.tenant);
    await this.waitServed();
  }

  private async waitLive(): Promise<void> {
    const want = new Set(this.brokers.map((b) => b.id));
    const ok = await pollUntil(
      async () => {
        const page = (await this.controlPlane.api(
          this.operatorToken,
          'GET',
          '/v1/nodes?limit=1000',
        )) as { items: { node: { node_id: string; status: { lifecycle: string } } }[] };
        const live = page.items.filter((n) => n.node.status.lifecycle === 'live');
        return [...want].every((id) => live.some((n) => n.node.node_id === id));
      },
      scaled(SERVED_DEADLINE_MS),
      SERVED_POLL_MS,
    );
    if (!ok) throw new NotServedError(`not every broker registered live within the deadline`);
  }

  /** Every shard assignment of the control plane (all tenants). */
  async assignments(): Promise<Assignment[]> {
    this.open();
    const page = (await this.controlPlane.api(
      this.operatorToken,
      'GET',
      '/v1/shard-assignments?limit=10000',
    )) as { items: Assignment[] };
    return page.items;
  }

  /**
   * A tenant admin's call on the catalog of the cluster's namespace (`path` under
   * `/v1/tenants/<tenant>/namespaces/<namespace>`, e.g. `DELETE /streams/orders`), its parsed
   * body; a status of 400 or more throws.
   */
  async catalogCall(method: string, path: string, body?: unknown): Promise<unknown> {
    this.open();
    const base = `/v1/tenants/${this.tenant}/namespaces/${this.namespace}`;
    return this.controlPlane.api(this.adminToken, method, `${base}${path}`, body);
  }

  /** An operator's GET of the control plane's API (`/v1/...`), its parsed body. */
  async operatorGet(path: string): Promise<unknown> {
    return this.operatorCall('GET', path);
  }

  /** An operator's call on the control plane's API (`/v1/...`), its parsed body; a status of
   *  400 or more throws. */
  async operatorCall(method: string, path: string, body?: unknown): Promise<unknown> {
    this.open();
    return this.controlPlane.api(this.operatorToken, method, path, body);
  }

  /**
   * The broker the control plane names leader of a shard of the cluster's namespace, or
   * undefined. The client does not follow `not_leader` refusals yet: a workload on several
   * brokers connects to the leader of what it uses (`connect({ servers: [leader.url()] })`).
   */
  async leaderOf(name: string, shard = 0, kind: 'stream' | 'cache' = 'stream') {
    const a = (await this.assignments()).find(
      (x) =>
        x.tenant_id === this.tenant &&
        x.namespace === this.namespace &&
        x.kind === kind &&
        x.stream === name &&
        x.shard === shard,
    );
    return a === undefined ? undefined : this.brokers.find((b) => b.id === a.leader);
  }

  async waitServed(deadlineMs = scaled(SERVED_DEADLINE_MS)): Promise<void> {
    this.open();
    let why: string | null = 'not asked yet';
    const where = { tenant: this.tenant, namespace: this.namespace };
    const ok = await pollUntil(
      async () => {
        why = await unserved(this.expected, await this.assignments(), where, this.brokers);
        return why === null;
      },
      deadlineMs,
      SERVED_POLL_MS,
    );
    if (!ok) throw new NotServedError(`cluster not served within ${deadlineMs} ms: ${why}`);
  }

  clientOptions(extra: Partial<ConnectOptions> = {}): ConnectOptions {
    return {
      servers: this.brokers.map((b) => b.url(this.transport)),
      tenant: this.tenant,
      namespace: this.namespace,
      token: this.token,
      // Every broker by the cluster's CA; the name is the certificates' SAN.
      tls: { ca: this.caPem, serverName: 'localhost' },
      reconnect: { baseMs: CLIENT_RECONNECT_BASE_MS, maxDelayMs: CLIENT_RECONNECT_MAX_DELAY_MS },
      connectTimeoutMs: scaled(CLIENT_CONNECT_TIMEOUT_MS),
      requestTimeoutMs: scaled(CLIENT_REQUEST_TIMEOUT_MS),
      idleTimeoutMs: scaled(CLIENT_IDLE_TIMEOUT_MS),
      ...extra,
    };
  }

  connect(extra: Partial<ConnectOptions> = {}): Promise<FelixClient> {
    this.open();
    return connect(this.clientOptions(extra));
  }

  /** The broker `ref` names: an index into `nodes` or a node id. */
  node(ref: NodeRef): Broker {
    const b = typeof ref === 'number' ? this.brokers[ref] : this.brokers.find((n) => n.id === ref);
    if (b === undefined) {
      throw new UnknownNodeError(
        `no broker ${JSON.stringify(ref)} in this cluster (n0..n${this.brokers.length - 1})`,
      );
    }
    return b;
  }

  private open(): void {
    if (this.closed) throw new ClusterClosedError(`cluster ${this.dir} was shut down`);
  }

  /** Runs one fault within `deadlineMs` and records it (only once it took effect). */
  private async fault(
    fault: FaultRecord['fault'],
    target: string,
    deadlineMs: number,
    run: () => Promise<void>,
    params?: FaultRecord['params'],
  ): Promise<void> {
    this.open();
    const startedAt = performance.now();
    await within(run(), deadlineMs, () => {
      return new FaultTimeoutError(`${fault} of ${target} did not take effect in ${deadlineMs} ms`);
    });
    const doneAt = performance.now();
    this.faults.push({ fault, target, ...(params ? { params } : {}), startedAt, doneAt });
  }

  async kill(ref: NodeRef): Promise<void> {
    const b = this.node(ref);
    return this.fault('kill', b.id, scaled(PROCESS_EXIT_DEADLINE_MS) * 2, () => b.proc.kill());
  }

  async stop(ref: NodeRef): Promise<void> {
    const b = this.node(ref);
    return this.fault('stop', b.id, stopDeadline(), () => b.proc.stop());
  }

  async start(ref: NodeRef, opts: { env?: NodeJS.ProcessEnv } = {}): Promise<void> {
    const b = this.node(ref);
    return this.fault('start', b.id, scaled(PROCESS_LISTEN_DEADLINE_MS) * 2, () => {
      if (b.state !== 'stopped') throw new NodeStateError(`cannot start ${b.id}: it is ${b.state}`);
      return b.start(opts.env);
    });
  }

  async restart(ref: NodeRef): Promise<void> {
    const b = this.node(ref);
    const deadline = stopDeadline() + scaled(PROCESS_LISTEN_DEADLINE_MS) * 2;
    return this.fault('restart', b.id, deadline, async () => {
      await b.proc.stop();
      await b.start();
    });
  }

  async pause(ref: NodeRef): Promise<void> {
    const b = this.node(ref);
    return this.fault('pause', b.id, scaled(FAULT_DEADLINE_MS) * 2, () => b.proc.pause());
  }

  async resume(ref: NodeRef): Promise<void> {
    const b = this.node(ref);
    return this.fault('resume', b.id, scaled(FAULT_DEADLINE_MS) * 2, () => {
      if (b.state !== 'paused') throw new NodeStateError(`cannot resume ${b.id}: it is ${b.state}`);
      return b.proc.resume();
    });
  }

  async partition(a: NodeRef, b: NodeRef | 'controlplane'): Promise<void> {
    const from = this.node(a);
    const to = b === CONTROLPLANE ? CONTROLPLANE : this.node(b);
    const target = `${from.id} | ${to === CONTROLPLANE ? CONTROLPLANE : to.id}`;
    if (to !== CONTROLPLANE && to === from) {
      throw new BadClusterSpecError(`cannot partition ${from.id} from itself`);
    }
    return this.fault('partition', target, scaled(FAULT_DEADLINE_MS), async () => {
      await this.partitions.cut(from, to);
    });
  }

  async heal(): Promise<void> {
    return this.fault('heal', 'all', scaled(FAULT_DEADLINE_MS), async () => {
      await this.partitions.heal();
    });
  }

  async slowFsync(ref: NodeRef, ms: number): Promise<void> {
    const b = this.node(ref);
    if (!Number.isInteger(ms) || ms < 0) {
      throw new BadClusterSpecError(`slowFsync: ms must be an integer ≥ 0, got ${ms}`);
    }
    const run = async () => {
      await this.storage.slow(b, ms);
      await settle();
    };
    return this.fault('slow_fsync', b.id, scaled(FAULT_DEADLINE_MS), run, { ms });
  }

  async failFsync(ref: NodeRef, mode: 'always' | 'once'): Promise<void> {
    const b = this.node(ref);
    if (mode !== 'always' && mode !== 'once') {
      throw new BadClusterSpecError(`failFsync: mode must be always or once, got ${String(mode)}`);
    }
    const run = async () => {
      await this.storage.fail(b, mode);
      await settle();
    };
    return this.fault('fail_fsync', b.id, scaled(FAULT_DEADLINE_MS), run, { mode });
  }

  async healFsync(ref: NodeRef): Promise<void> {
    const b = this.node(ref);
    return this.fault('heal_fsync', b.id, scaled(FAULT_DEADLINE_MS), async () => {
      await this.storage.heal(b);
      await settle();
    });
  }

  async restartControlPlane(): Promise<void> {
    const deadline = stopDeadline() + scaled(PROCESS_LISTEN_DEADLINE_MS) * 2;
    return this.fault('restart_controlplane', CONTROLPLANE, deadline, () =>
      this.controlPlane.restart(),
    );
  }

  async logTails(lines = LOG_TAILS_LINES_DEFAULT): Promise<string> {
    const procs: ManagedProcess[] = [
      this.controlPlane.proc,
      ...[...this.brokers, ...this.outsiders].map((b) => b.proc),
    ];
    const parts = await Promise.all(
      procs.map(async (p) => {
        const pid = p.pid ? `, pid ${p.pid}` : '';
        const head = `===== ${p.name} (${p.state}${pid}) ${p.logPath} =====`;
        return [head, ...(await fileTail(p.logPath, lines))].join('\n');
      }),
    );
    return parts.join('\n');
  }

  /** Ends every process (brokers by SIGKILL unless `graceful`), removes the dir unless `keep`. */
  async shutdown(opts: { keep?: boolean; graceful?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Teardown kills the brokers: stopped together with SIGTERM, each leader waits out a
    // hand-off its stopping followers cannot take (about 4 s per cluster, the larger part of
    // a short test). `graceful` stops them with SIGTERM; a paused one gets SIGCONT first.
    const stops = await Promise.allSettled(
      [...this.brokers, ...this.outsiders].map((b) =>
        opts.graceful === true ? b.proc.stop() : b.proc.kill(),
      ),
    );
    const cp = await Promise.allSettled([this.controlPlane.shutdown()]);
    if (!opts.keep) await rm(this.dir, { recursive: true, force: true });
    const failed = [...stops, ...cp].find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }
}

function stopDeadline(): number {
  return scaled(PROCESS_STOP_GRACE_MS) + scaled(PROCESS_EXIT_DEADLINE_MS) * 2;
}

/**
 * Starts a control plane and `spec.brokers` brokers, makes the tenant, namespace, streams and
 * caches, and resolves once every shard is served. On a failure everything started is stopped
 * (the dir is kept, with the logs) and the error names the log tails.
 */
export async function startCluster(spec: ClusterSpec): Promise<FelixCluster> {
  checkSpec(spec);
  const dir = spec.dir ?? (await mkdtemp(join(tmpdir(), 'felix-cluster-')));
  await mkdir(dir, { recursive: true });
  const cluster = new FelixCluster(spec, dir);
  try {
    await cluster.boot();
  } catch (err) {
    const tails = await cluster.logTails();
    await cluster.shutdown({ keep: true }).catch(() => {
      // the start failure is the error to report; the stop failure's processes die with us
    });
    if (err instanceof Error) err.message = `${err.message}\n(cluster dir kept: ${dir})\n${tails}`;
    throw err;
  }
  return cluster;
}
