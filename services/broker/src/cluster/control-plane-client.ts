/**
 * The broker's HTTP client of the control plane (`/v1`, docs/control-plane.md): registration,
 * heartbeats, deregistration, and the snapshot + long-poll change feeds. Built on the global
 * `fetch` (undici); every call carries a deadline. Answers are checked for the fields the broker
 * relies on, so a malformed answer is a typed error rather than a crash deeper in.
 */
import { errorReason } from '@felix/common';
import {
  ControlPlaneAnswerError,
  ControlPlaneRefusedError,
  ControlPlaneUnavailableError,
} from '../errors.js';
import {
  CONTROLPLANE_POLL_SLACK_MS,
  CONTROLPLANE_REQUEST_MS_MAX,
  CONTROLPLANE_SNAPSHOT_ITEMS_MAX,
  NODE_BOOK_NODES_MAX,
  REPLICA_REPORT_SHARDS_MAX,
} from '../limits.js';

/** A move the control plane asked for in its answer to a replica report (transfers.ts). */
export interface TransferRequest
  extends Pick<ShardReport, 'tenant_id' | 'namespace' | 'kind' | 'stream' | 'shard'> {
  /** The assignment's generation the control plane asked at. */
  generation: number;
  /** The member to move the shard to. */
  to: string;
}

export interface RegisterRequest {
  node_id: string;
  advertise_addr: string;
  client_addr: string;
  zone: string | null;
  labels: Record<string, string>;
  capacity: { max_shards: number; weight: number };
  /** A data dir: the cache shards it leads may hold data the control plane must not give away.
   *  Absent means true (the control plane's default). */
  durable_storage?: boolean;
  incarnation: number;
}

export interface Registered {
  lifecycle: string;
  heartbeatIntervalMs: number;
  expiryTimeoutMs: number;
  /** What the control plane reads beyond its first release (none from an older one). */
  controlPlaneFeatures?: readonly string[];
}

export interface HeartbeatReply {
  lifecycle: string;
  heartbeatIntervalMs: number;
  /** L, the lease length: the broker keeps 0.75 L from when it sent this heartbeat. */
  expiryTimeoutMs: number;
  controlPlaneFeatures?: readonly string[];
}

/**
 * A control plane that lists this reads `seq` in replica reports (services/control-plane's
 * CONTROL_PLANE_FEATURES); an older one refuses the field, so it is sent only when listed.
 */
export const FEATURE_REPLICA_REPORT_SEQ = 'replica_report_seq';
/** The control plane reads a replica report's `uid` (the shard's stream or cache creation). */
export const FEATURE_REPLICA_REPORT_UID = 'replica_report_uid';

/** The answer's `control_plane_features`: its strings, or none when absent (an older one). */
function featuresOf(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((f): f is string => typeof f === 'string') : [];
}

/** One shard's replica report (`POST /v1/nodes/{id}/replica-status`, docs/control-plane.md). */
export interface ShardReport {
  tenant_id: string;
  namespace: string;
  kind: 'stream' | 'cache';
  stream: string;
  shard: number;
  generation: number;
  leader_offset: number;
  commit_offset: number;
  replica_offsets: { node_id: string; durable_offset: number }[];
  halted: { node_id: string; reason: 'diverged' | 'needs_bootstrap' }[];
  /** Followers this leader rebuilt at this generation (their copy restarted at `base`): the
   *  control plane takes back their halt and the offset it held for them (sent only when
   *  there is one). */
  rebuilt?: { node_id: string; base: number }[];
  /** The followers that held the leader's whole log within its lag window (`leader` streams
   *  may fail over to the most caught up of them). */
  in_sync: string[];
  /** Only from a leaving leader: it admits no writes, every log is durable (hand-off). */
  drained?: boolean;
  /** With `drained`: the followers holding every log of the shard to its end. */
  caught_up?: string[];
  /** The catalog's creation id of the shard's stream or cache, to a control plane that reads
   *  it: only a report of the current creation may move a restored assignment forward. */
  uid?: string;
}

/** One registered node as `GET /v1/nodes` lists it. */
export interface NodeEntry {
  nodeId: string;
  clientAddr: string;
  /** Broker-internal address: where peers reach its internal listener (replication). */
  advertiseAddr: string;
  /** `joining`, `live`, `draining`, `down`, `left`, ... */
  lifecycle: string;
}

export interface FeedChange {
  seq: number;
  op: string;
  key: Record<string, string | number>;
  /** The item (catalog feeds call it `item`, the assignment feed `assignment`); absent on deletes. */
  value: unknown;
}

export interface FeedPage {
  items: FeedChange[];
  nextSeq: number;
}

export interface Snapshot {
  items: unknown[];
  nextSeq: number;
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function int(x: unknown, what: string, field: string): number {
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0)
    throw new ControlPlaneAnswerError(what, `${field} is not a non-negative integer`);
  return x;
}

/** The node credential sent on every call (cluster/node-token.ts); null sends none. */
export type Bearer = () => Promise<string | null>;

const noBearer: Bearer = () => Promise.resolve(null);

export interface ControlPlaneClientOptions {
  /** The fetch calls go through (the test partition's, faults/partition.ts); the global one. */
  fetch?: typeof fetch;
  /** Told after each call (named `what`: 'heartbeat', '<feed> changes', …) whether the control
   *  plane answered (false: network, timeout, 5xx, with the error). */
  onOutcome?: (reachable: boolean, what: string, err?: Error) => void;
}

export class ControlPlaneClient {
  private readonly base: string;
  private readonly fetchFn: typeof fetch;

  constructor(
    url: string,
    private readonly bearer: Bearer = noBearer,
    private readonly opts: ControlPlaneClientOptions = {},
  ) {
    this.base = url.replace(/\/+$/, '');
    this.fetchFn = opts.fetch ?? fetch;
  }

  get url(): string {
    return this.base;
  }

  private async call(
    what: string,
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    try {
      const answer = await this.send(what, method, path, body, timeoutMs, signal);
      this.opts.onOutcome?.(true, what);
      return answer;
    } catch (err) {
      // A call its caller abandoned (a stop, a resync) says nothing about the control plane.
      if (signal?.aborted) throw err;
      if (err instanceof ControlPlaneUnavailableError) this.opts.onOutcome?.(false, what, err);
      else this.opts.onOutcome?.(true, what);
      throw err;
    }
  }

  private async send(
    what: string,
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const deadline = AbortSignal.timeout(timeoutMs);
    let res: Response;
    let token: string | null = null;
    try {
      token = await this.bearer();
      const headers: Record<string, string> = {};
      if (body !== undefined) headers['content-type'] = 'application/json';
      // The control plane requires the node credential on every call (issue 21).
      if (token !== null) headers.authorization = `Bearer ${token}`;
      res = await this.fetchFn(`${this.base}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: signal ? AbortSignal.any([deadline, signal]) : deadline,
      });
    } catch (err) {
      // fetch says only "fetch failed": the reason is its cause's (refused, unresolvable, "bad
      // port", a certificate).
      throw new ControlPlaneUnavailableError(what, errorReason(err), { cause: err });
    }
    let parsed: unknown;
    try {
      parsed = await res.json();
    } catch (err) {
      if (res.status >= 500)
        throw new ControlPlaneUnavailableError(what, `HTTP ${res.status}`, { cause: err });
      throw new ControlPlaneAnswerError(what, `HTTP ${res.status} without a JSON body`);
    }
    if (res.status >= 500) {
      const msg = isObject(parsed) && typeof parsed.message === 'string' ? parsed.message : '';
      throw new ControlPlaneUnavailableError(what, `HTTP ${res.status} ${msg}`);
    }
    if (res.status >= 400) {
      const code = isObject(parsed) && typeof parsed.code === 'string' ? parsed.code : 'unknown';
      const msg = isObject(parsed) && typeof parsed.message === 'string' ? parsed.message : '';
      throw new ControlPlaneRefusedError(what, res.status, code, msg + credentialHint(res, token));
    }
    return parsed;
  }

  async register(req: RegisterRequest): Promise<Registered> {
    const a = await this.call('register', 'POST', '/v1/nodes', req, CONTROLPLANE_REQUEST_MS_MAX);
    if (!isObject(a) || !isObject(a.node) || !isObject(a.node.status))
      throw new ControlPlaneAnswerError('register', 'no node');
    return {
      lifecycle: String(a.node.status.lifecycle),
      heartbeatIntervalMs: int(a.heartbeat_interval_ms, 'register', 'heartbeat_interval_ms'),
      expiryTimeoutMs: int(a.expiry_timeout_ms, 'register', 'expiry_timeout_ms'),
      controlPlaneFeatures: featuresOf(a.control_plane_features),
    };
  }

  async heartbeat(nodeId: string, incarnation: number, timeoutMs: number): Promise<HeartbeatReply> {
    const a = await this.call(
      'heartbeat',
      'POST',
      `/v1/nodes/${encodeURIComponent(nodeId)}/heartbeat`,
      { incarnation },
      timeoutMs,
    );
    if (!isObject(a) || typeof a.lifecycle !== 'string')
      throw new ControlPlaneAnswerError('heartbeat', 'no lifecycle');
    return {
      lifecycle: a.lifecycle,
      heartbeatIntervalMs: int(a.heartbeat_interval_ms, 'heartbeat', 'heartbeat_interval_ms'),
      expiryTimeoutMs: int(a.expiry_timeout_ms, 'heartbeat', 'expiry_timeout_ms'),
      controlPlaneFeatures: featuresOf(a.control_plane_features),
    };
  }

  /**
   * Reports what the replicas of the shards this node leads hold. Resolves when every report was
   * accepted; a 409 naming some shard's outcome (a deposed leader's report, a generation the
   * control plane has moved past) is a ControlPlaneRefusedError like any refusal.
   */
  async replicaStatus(
    nodeId: string,
    incarnation: number,
    shards: readonly ShardReport[],
    timeoutMs: number,
    seq?: number,
  ): Promise<TransferRequest[]> {
    const a = await this.call(
      'replica status',
      'POST',
      `/v1/nodes/${encodeURIComponent(nodeId)}/replica-status`,
      seq === undefined ? { incarnation, shards } : { incarnation, seq, shards },
      timeoutMs,
    );
    return transfersOf(a);
  }

  /** Marks this node draining: it keeps its shards and is given no new ones (hand-off). */
  async drain(nodeId: string, timeoutMs: number): Promise<void> {
    await this.call(
      'drain',
      'POST',
      `/v1/nodes/${encodeURIComponent(nodeId)}/drain`,
      {},
      timeoutMs,
    );
  }

  async deregister(nodeId: string, timeoutMs: number): Promise<void> {
    await this.call(
      'deregister',
      'POST',
      `/v1/nodes/${encodeURIComponent(nodeId)}/deregister`,
      {},
      timeoutMs,
    );
  }

  /** The registered nodes (one page of `GET /v1/nodes`): the address book and the peers. */
  async nodes(signal?: AbortSignal): Promise<NodeEntry[]> {
    const a = await this.call(
      'nodes',
      'GET',
      `/v1/nodes?limit=${NODE_BOOK_NODES_MAX}`,
      undefined,
      CONTROLPLANE_REQUEST_MS_MAX,
      signal,
    );
    if (!isObject(a) || !Array.isArray(a.items))
      throw new ControlPlaneAnswerError('nodes', 'no items');
    const out: NodeEntry[] = [];
    for (const v of a.items) {
      if (!isObject(v) || !isObject(v.node) || !isObject(v.node.spec)) continue;
      const { node_id: nodeId } = v.node;
      const { client_addr: clientAddr, advertise_addr: advertiseAddr } = v.node.spec;
      const status = isObject(v.node.status) ? v.node.status : {};
      if (typeof nodeId !== 'string' || typeof clientAddr !== 'string') continue;
      out.push({
        nodeId,
        clientAddr,
        advertiseAddr: typeof advertiseAddr === 'string' ? advertiseAddr : clientAddr,
        lifecycle: typeof status.lifecycle === 'string' ? status.lifecycle : 'unknown',
      });
    }
    return out;
  }

  /** `feed` is the path under /v1: `streams`, `caches` or `shard-assignments`. */
  async snapshot(feed: string, signal?: AbortSignal): Promise<Snapshot> {
    const what = `${feed} snapshot`;
    const a = await this.call(
      what,
      'GET',
      `/v1/${feed}/snapshot`,
      undefined,
      CONTROLPLANE_REQUEST_MS_MAX,
      signal,
    );
    if (!isObject(a) || !Array.isArray(a.items))
      throw new ControlPlaneAnswerError(what, 'no items');
    if (a.items.length > CONTROLPLANE_SNAPSHOT_ITEMS_MAX)
      throw new ControlPlaneAnswerError(what, `${a.items.length} items exceed the bound`);
    return { items: a.items, nextSeq: int(a.next_seq, what, 'next_seq') };
  }

  async changes(
    feed: string,
    since: number,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<FeedPage> {
    const what = `${feed} changes`;
    const a = await this.call(
      what,
      'GET',
      `/v1/${feed}/changes?since=${since}&wait_ms=${waitMs}`,
      undefined,
      waitMs + CONTROLPLANE_POLL_SLACK_MS,
      signal,
    );
    if (!isObject(a) || !Array.isArray(a.items))
      throw new ControlPlaneAnswerError(what, 'no items');
    const items: FeedChange[] = a.items.map((c: unknown) => {
      if (!isObject(c) || !isObject(c.key) || typeof c.op !== 'string')
        throw new ControlPlaneAnswerError(what, 'a change without op or key');
      return {
        seq: int(c.seq, what, 'seq'),
        op: c.op,
        key: c.key as Record<string, string | number>,
        value: c.item ?? c.assignment,
      };
    });
    return { items, nextSeq: int(a.next_seq, what, 'next_seq') };
  }
}

/** What an operator should check when the control plane refused the broker's credential. */
function credentialHint(res: Response, token: string | null): string {
  if (res.status !== 401) return '';
  return token === null
    ? ' (this broker sends no node credential: set FELIX_NODE_TOKEN or FELIX_NODE_TOKEN_FILE to one minted for its node id, docs/security.md)'
    : ' (the node credential FELIX_NODE_TOKEN or FELIX_NODE_TOKEN_FILE gives was refused: expired, minted for another node id, or by another control plane)';
}

/** The shard moves a replica-status answer asks for (transfers.ts); malformed entries are
 *  skipped (an older control plane sends none). */
function transfersOf(a: unknown): TransferRequest[] {
  if (!isObject(a) || !Array.isArray(a.transfers)) return [];
  const out: TransferRequest[] = [];
  for (const t of a.transfers.slice(0, REPLICA_REPORT_SHARDS_MAX)) {
    if (!isObject(t)) continue;
    const { tenant_id, namespace, kind, stream, shard, generation, to } = t;
    if (
      typeof tenant_id !== 'string' ||
      typeof namespace !== 'string' ||
      (kind !== 'stream' && kind !== 'cache') ||
      typeof stream !== 'string' ||
      typeof to !== 'string' ||
      !Number.isSafeInteger(shard) ||
      (shard as number) < 0 ||
      !Number.isSafeInteger(generation)
    )
      continue;
    out.push({
      tenant_id,
      namespace,
      kind,
      stream,
      shard: shard as number,
      generation: generation as number,
      to,
    });
  }
  return out;
}
