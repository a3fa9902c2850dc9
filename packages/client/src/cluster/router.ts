/**
 * Cluster routing of one client: discovery (`topology`, `shard_owners`) through the entry broker
 * (the client's main connection, chosen from the seeds and the brokers discovered), one
 * connection per other broker a shard is led by (opened on first use, at most
 * CLUSTER_CONNECTIONS_MAX, the least recently used closed past it), and the redirect walk of a
 * request to a shard's owner. A broker whose connection is lost is suspect for BROKER_SUSPECT_MS
 * and the owners it held are asked again. Routing is on only while the entry broker offers
 * FEATURE_SHARD_OWNERS (a control-plane broker); otherwise everything goes to the entry broker,
 * as before.
 */
import { FEATURE_SHARD_OWNERS, FEATURE_TOPOLOGY } from '@felix/wire';
import {
  ConnectError,
  ConnectionLostError,
  ProtocolError,
  UnauthenticatedError,
} from '../errors.js';
import {
  BROKER_SUSPECT_MS,
  CLUSTER_BROKERS_MAX,
  CLUSTER_CONNECTIONS_MAX,
  TOPOLOGY_REFRESH_MS,
  UNREACHED_DIAL_TIMEOUT_MS,
} from '../limits.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import { has } from '../protocol/negotiation.js';
import { abortable } from '../util/abortable.js';
import { type OwnerKind, OwnerBook, type ShardOwnerEntry } from './owner-book.js';
import { dialAddress, followRedirects, redirectTargetOf } from './routing.js';

export interface RouterHost {
  /** The entry connection, waiting through a reconnect (bounded by the request timeout). */
  entry(signal?: AbortSignal): Promise<BrokerConnection>;
  /** The live entry connection now, if any. */
  liveEntry(): BrokerConnection | undefined;
  /** Opens and authenticates a connection to one broker (within `connectTimeoutMs` when given
   *  and shorter than the client's connect timeout). */
  open(addr: string, connectTimeoutMs?: number): Promise<BrokerConnection>;
  /** False: never route (the caller's `routing: false`). */
  readonly enabled?: boolean;
  /** A connection to a broker routed to (not the entry) was lost, not closed on purpose. */
  brokerLost?(server: string, err: Error): void;
  /** Milliseconds now (tests pin it). */
  now?(): number;
}

interface Pooled {
  opening: Promise<BrokerConnection>;
  conn: BrokerConnection | null;
  usedAt: number;
}

export class ClusterRouter {
  readonly book = new OwnerBook();
  private readonly pool = new Map<string, Pooled>();
  private readonly suspectUntil = new Map<string, number>();
  /** Brokers lost (or failed to dial) and not reached since: dialed within
   *  UNREACHED_DIAL_TIMEOUT_MS, so a silent one holds a request seconds, not the connect timeout. */
  private readonly unreached = new Set<string>();
  private readonly refreshing = new Map<string, Promise<void>>();
  private readonly evicted = new WeakSet<BrokerConnection>();
  private routing = false;
  /** The entry broker's address: the scheme a learned owner is dialed with when a refusal does
   *  not say which broker answered. */
  private entryServer = '';
  private closed = false;
  private refreshTimer: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly host: RouterHost) {}

  private now(): number {
    return this.host.now?.() ?? Date.now();
  }

  /** Routing by owner is on: the entry broker answers `shard_owners`. */
  get active(): boolean {
    return this.routing && !this.closed;
  }

  /**
   * Called on every new entry connection (connect and each reconnect): learns the brokers of the
   * cluster when the broker offers `topology`, and whether it answers `shard_owners`.
   */
  async discover(conn: BrokerConnection): Promise<void> {
    this.entryServer = conn.server;
    this.routing =
      this.host.enabled !== false && has(conn.negotiated.features, FEATURE_SHARD_OWNERS);
    if (!has(conn.negotiated.features, FEATURE_TOPOLOGY)) return;
    if (this.routing) this.refreshEvery(TOPOLOGY_REFRESH_MS);
    const answer = await conn.requests.request(() => ({ type: 'topology' }));
    if (answer.type !== 'topology_view')
      throw new ProtocolError(`expected topology_view, got ${answer.type}`);
    this.book.learnBrokers(
      answer.brokers.map((b) => ({ nodeId: b.node_id, addr: dialAddress(b.addr, conn.server) })),
    );
  }

  /** Asks the live entry broker for the topology every `ms` (the timer holds no process open). */
  private refreshEvery(ms: number): void {
    if (this.refreshTimer !== null || this.closed) return;
    this.refreshTimer = setInterval(() => {
      const conn = this.host.liveEntry();
      // A failed refresh keeps the brokers known; the next interval asks again.
      if (conn !== undefined) this.discover(conn).catch(() => undefined);
    }, ms);
    this.refreshTimer.unref?.();
  }

  /** Every broker to reconnect through: the seeds first (never dropped), then those discovered;
   *  brokers just lost are left out while another remains. */
  reconnectOrder(seeds: readonly string[]): string[] {
    const out = [...seeds];
    for (const a of this.book.brokerAddresses) if (!out.includes(a)) out.push(a);
    const trusted = out.filter((a) => !this.isSuspect(a));
    return trusted.length > 0 ? trusted : out;
  }

  isSuspect(addr: string): boolean {
    const until = this.suspectUntil.get(addr);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.suspectUntil.delete(addr);
    return false;
  }

  /** A connection was lost: its broker is suspect and the owners it held are asked again. */
  lost(conn: BrokerConnection): void {
    this.suspectUntil.set(conn.server, this.now() + BROKER_SUSPECT_MS);
    this.markUnreached(conn.server);
    this.book.forgetAddress(conn.server);
    const p = this.pool.get(conn.server);
    if (p !== undefined && p.conn === conn) this.pool.delete(conn.server);
  }

  /** Asks the entry broker for the owners of every shard of `name` (one question at a time,
   *  taking no caller's signal: one caller's abort ends its own wait, not the others'). */
  refreshOwners(kind: OwnerKind, name: string, signal?: AbortSignal): Promise<void> {
    const key = `${kind}\u0000${name}`;
    let p = this.refreshing.get(key);
    if (p === undefined) {
      p = this.askOwners(kind, name).finally(() => this.refreshing.delete(key));
      this.refreshing.set(key, p);
    }
    return abortable(p, signal, `the owner lookup of ${name}`, false);
  }

  private async askOwners(kind: OwnerKind, name: string): Promise<void> {
    const conn = await this.host.entry();
    if (!has(conn.negotiated.features, FEATURE_SHARD_OWNERS)) return;
    const { tenant, namespace } = conn.scope;
    const answer = await conn.requests.request((id) => ({
      type: 'shard_owners',
      tenant_id: tenant,
      namespace,
      name,
      kind,
      request_id: id,
    }));
    if (answer.type !== 'shard_owners_view')
      throw new ProtocolError(`expected shard_owners_view, got ${answer.type}`);
    // The owners may name brokers the last topology answer did not (a book loaded since).
    if (answer.owners.some((o) => o.node_id !== undefined && !this.book.brokerIds.has(o.node_id)))
      await this.discover(conn);
    if (answer.owners.length > 0) this.book.learnWidth(kind, name, answer.owners.length);
    for (const o of answer.owners) {
      const entry: ShardOwnerEntry = { generation: o.generation };
      if (o.node_id !== undefined) entry.nodeId = o.node_id;
      if (o.addr !== undefined) entry.addr = dialAddress(o.addr, conn.server);
      if (o.unavailable !== undefined) entry.unavailable = o.unavailable;
      this.book.learnOwner(kind, name, o.shard, entry);
    }
  }

  /** The address a shard's requests go to first: its owner when known and reachable, else the
   *  entry broker's (which serves it, or redirects). */
  async firstAddress(
    kind: OwnerKind,
    name: string,
    shard: number,
    signal?: AbortSignal,
  ): Promise<string> {
    if (this.active && this.book.ownerOf(kind, name, shard) === undefined)
      await this.refreshOwners(kind, name, signal);
    const owner = this.book.ownerOf(kind, name, shard);
    if (owner?.addr !== undefined && owner.unavailable === undefined && !this.isSuspect(owner.addr))
      return owner.addr;
    return (await this.host.entry(signal)).server;
  }

  /** The connection to a shard's owner as known (a long-lived reader retries through
   *  `refused` on a redirect rather than walk). */
  async connectionFor(
    kind: OwnerKind,
    name: string,
    shard: number,
    signal?: AbortSignal,
  ): Promise<BrokerConnection> {
    return this.connectionTo(await this.firstAddress(kind, name, shard, signal), signal);
  }

  /** Shards of a stream or cache as the last owners answer counted them (undefined: not
   *  asked, or a broker without discovery). */
  async widthOf(kind: OwnerKind, name: string, signal?: AbortSignal): Promise<number | undefined> {
    if (!this.active) return undefined;
    if (this.book.widthOf(kind, name) === undefined) await this.refreshOwners(kind, name, signal);
    return this.book.widthOf(kind, name);
  }

  /** Shards of a stream or cache as known now, without asking (undefined: not known yet). */
  widthNow(kind: OwnerKind, name: string): number | undefined {
    return this.active ? this.book.widthOf(kind, name) : undefined;
  }

  /** The owner book's version (OwnerBook.version). */
  get ownersVersion(): number {
    return this.book.version;
  }

  /** The live connection to a shard's owner now, without waiting; undefined when there is
   *  none open (the caller takes the entry broker's). */
  liveFor(kind: OwnerKind, name: string, shard: number): BrokerConnection | undefined {
    if (!this.active) return undefined;
    const addr = this.book.ownerOf(kind, name, shard)?.addr;
    if (addr === undefined) return undefined;
    const entry = this.host.liveEntry();
    if (entry !== undefined && entry.server === addr) return entry;
    const p = this.pool.get(addr);
    if (p?.conn == null || p.conn.isLost) return undefined;
    p.usedAt = this.now();
    return p.conn;
  }

  /** The connection to `addr`: the entry's when it is that broker, else a pooled one. */
  async connectionTo(addr: string, signal?: AbortSignal): Promise<BrokerConnection> {
    const entry = this.host.liveEntry();
    if (entry !== undefined && entry.server === addr) return entry;
    if (this.closed) return this.host.entry(signal);
    const p = this.pool.get(addr);
    if (p !== undefined && (p.conn === null || !p.conn.isLost)) {
      p.usedAt = this.now();
      return p.conn === null ? this.dialing(addr, p.opening, signal) : p.opening;
    }
    this.evictIfFull();
    const pooled: Pooled = { opening: this.dial(addr), conn: null, usedAt: this.now() };
    this.pool.set(addr, pooled);
    pooled.opening.then(
      (conn) => {
        pooled.conn = conn;
      },
      () => {
        if (this.pool.get(addr) === pooled) this.pool.delete(addr);
      },
    );
    return this.dialing(addr, pooled.opening, signal);
  }

  /** A dial under way, waited for until `signal` aborts (the dial runs on for the pool: a
   *  broker that takes the connection and never answers holds it the connect timeout). */
  private dialing(
    addr: string,
    opening: Promise<BrokerConnection>,
    signal: AbortSignal | undefined,
  ): Promise<BrokerConnection> {
    return abortable(opening, signal, `the connection to ${addr}`, false);
  }

  /** The connect bound of a dial to `addr`: UNREACHED_DIAL_TIMEOUT_MS for a broker lost and not
   *  reached since while the cluster has others to turn to, else undefined (the client's own:
   *  a lone broker slow to handshake, a restart's crowd of reconnects, must still be reached). */
  dialTimeoutFor(addr: string): number | undefined {
    if (!this.unreached.has(addr) || this.book.brokerAddresses.length < 2) return undefined;
    return UNREACHED_DIAL_TIMEOUT_MS;
  }

  /** A dial to `addr` (the entry's reconnect) succeeded or failed. */
  dialed(addr: string, ok: boolean): void {
    if (ok) this.unreached.delete(addr);
    else this.markUnreached(addr);
  }

  private markUnreached(addr: string): void {
    // Bounded like the broker book: past it the oldest mark goes (a full dial timeout again).
    if (this.unreached.size >= CLUSTER_BROKERS_MAX)
      this.unreached.delete(this.unreached.values().next().value!);
    this.unreached.add(addr);
  }

  private async dial(addr: string): Promise<BrokerConnection> {
    let conn: BrokerConnection;
    try {
      conn = await this.host.open(addr, this.dialTimeoutFor(addr));
      this.unreached.delete(addr);
    } catch (err) {
      this.suspectUntil.set(addr, this.now() + BROKER_SUSPECT_MS);
      this.markUnreached(addr);
      // Refused credentials stay fatal; an unreachable owner is retried (a failover under way).
      if (err instanceof UnauthenticatedError) throw err;
      throw new ConnectError([addr], { cause: err, learned: true });
    }
    // An evicted connection is closed on purpose: its broker is not suspect.
    void conn.lost.then((err) => {
      if (this.evicted.has(conn)) return;
      this.lost(conn);
      if (!this.closed) this.host.brokerLost?.(conn.server, err);
    });
    if (this.closed) {
      await conn.close();
      throw new ConnectionLostError(addr);
    }
    return conn;
  }

  /** At CLUSTER_CONNECTIONS_MAX (the entry's counted), the least recently used one goes. */
  private evictIfFull(): void {
    if (this.pool.size + 1 < CLUSTER_CONNECTIONS_MAX) return;
    let oldest: [string, Pooled] | undefined;
    for (const e of this.pool)
      if (oldest === undefined || e[1].usedAt < oldest[1].usedAt) oldest = e;
    if (oldest === undefined) return;
    this.pool.delete(oldest[0]);
    void oldest[1].opening.then(
      (c) => {
        this.evicted.add(c);
        return c.close();
      },
      () => undefined, // it failed to open: nothing to close
    );
  }

  /** A shard's request refused with a redirect-class answer: learn the owner it names, or drop
   *  the one held so the next attempt asks again. */
  refused(kind: OwnerKind, name: string, shard: number, err: unknown, from: string): void {
    const target = redirectTargetOf(err);
    const known = this.book.ownerOf(kind, name, shard);
    // Without the answering broker, the entry's scheme: a TLS client dialed owners over QUIC.
    const like = from !== '' ? from : this.entryServer;
    const addr =
      target?.addr !== undefined
        ? dialAddress(target.addr, like)
        : target?.nodeId !== undefined
          ? this.book.addressOf(target.nodeId)
          : undefined;
    if (target === undefined || addr === undefined || addr === from) {
      this.book.forgetOwner(kind, name, shard);
      return;
    }
    const entry: ShardOwnerEntry = {
      generation: target.generation ?? known?.generation ?? 0,
      addr,
    };
    if (target.nodeId !== undefined) entry.nodeId = target.nodeId;
    this.book.learnOwner(kind, name, shard, entry);
  }

  /**
   * Runs `call` on the shard's owner, following `not_leader` redirects (routing.ts's walk: at
   * most REDIRECT_HOPS_MAX hops, never back to a broker already tried, nor to a suspect one).
   * `tried`: brokers that refused this request before (a caller's own first attempt).
   */
  async request<T>(
    kind: OwnerKind,
    name: string,
    shard: number,
    call: (conn: BrokerConnection) => Promise<T>,
    signal?: AbortSignal,
    tried?: readonly string[],
  ): Promise<T> {
    return followRedirects({
      ...(tried === undefined ? {} : { tried }),
      first: await this.firstAddress(kind, name, shard, signal),
      attempt: async (addr) => call(await this.connectionTo(addr, signal)),
      next: (err, tried) => {
        const from = tried[tried.length - 1]!;
        this.refused(kind, name, shard, err, from);
        const addr = this.book.ownerOf(kind, name, shard)?.addr;
        return addr !== undefined && !this.isSuspect(addr) ? addr : undefined;
      },
    });
  }

  /** Closes every pooled connection (the entry's is the client's to close); what waits on one
   *  fails with `reason`. */
  async close(reason?: Error): Promise<void> {
    this.closed = true;
    if (this.refreshTimer !== null) clearInterval(this.refreshTimer);
    const all = [...this.pool.values()];
    this.pool.clear();
    await Promise.allSettled(all.map(async (p) => (await p.opening).close(reason)));
  }
}
