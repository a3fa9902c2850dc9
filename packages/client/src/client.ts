/**
 * `connect()` and the Felix client: one live broker connection at a time, chosen from the seed
 * list, replaced after a loss with full-jitter exponential backoff. Calls made while it is
 * reconnecting wait (bounded by `requestTimeoutMs` and their AbortSignal). Subscriptions resume
 * on the new connection; acked publishes caught by the loss fail with OutcomeUnknownError.
 */
import { BINARY_STRING_BYTES_MAX, PUBLISH_BATCH_RECORDS_MAX, shardForKey } from '@felix/wire';
import { ClusterRouter } from './cluster/router.js';
import { retryKindOf } from './cluster/routing.js';
import {
  AbortedError,
  ClientClosedError,
  ConnectError,
  InvalidArgumentError,
  ShardUnavailableError,
  TimeoutError,
  UnauthenticatedError,
  UnknownStreamError,
  lossReason,
  notBytes,
  retryCannotHelp,
} from './errors.js';
import { bytesOf, wellFormedBytes } from './projections/host.js';
import { isByteView } from './util/bytes.js';
import {
  CONNECT_TIMEOUT_MS_DEFAULT,
  EVENT_STREAM_WAIT_MS_MAX,
  IDLE_TIMEOUT_MS_DEFAULT,
  PAYLOAD_BYTES_MAX,
  RECONNECT_ATTEMPTS_MAX_DEFAULT,
  RECONNECT_BASE_MS_DEFAULT,
  RECONNECT_DELAY_MS_MAX_DEFAULT,
  RECONNECT_FULL_DIAL_EVERY,
  PUBLISH_ROUTE_ATTEMPTS_MAX,
  REQUEST_TIMEOUT_MS_DEFAULT,
  SHARD_CACHE_STREAMS_MAX,
  SUBSCRIBE_QUEUE_CAPACITY_DEFAULT,
  SUBSCRIPTION_BUFFER_BATCHES_DEFAULT,
  UNREACHED_DIAL_TIMEOUT_MS,
} from './limits.js';
import { BrokerConnection, type ConnectionOptions } from './protocol/broker-connection.js';
import type { PublishAnswer, PublishCall } from './protocol/publish-pipe.js';
import { TurnBatcher } from './protocol/turn-batcher.js';
import { microsOf, offsetForTimeOn } from './offset-for-time.js';
import { GatheringPublishers, Publisher } from './publisher.js';
import {
  type RoutedPublishHost,
  publishRetryDelayMs,
  publishWithin,
  sendRouted,
} from './routed-publish.js';
import { RECORD_LENGTH_BYTES, streamNameBytes } from './util/batch-bytes.js';
import { Cache } from './projections/cache.js';
import { Counter } from './projections/counter.js';
import { Group, type GroupOptions, type StreamGroupOptions } from './projections/group.js';
import { StreamGroup } from './projections/stream-group.js';
import type { ProjectionHost } from './projections/host.js';
import { cacheKeyRoute } from './projections/key-routes.js';
import { type StatusEvent, StatusHub } from './status.js';
import { type KeeperClock, type Presented, REAL_CLOCK, TokenKeeper } from './token/keeper.js';
import { type ReaderRoute, Subscription } from './subscription.js';
import { subscriptionReaders } from './subscription-readers.js';
import { LeavingWork, quietController } from './util/close-waits.js';
import type {
  ConnectOptions,
  PublishOptions,
  PublishResult,
  PublisherOptions,
  SubscribeOptions,
} from './types.js';
import { backoffDelayMs, sleep } from './util/backoff.js';
import { abortable } from './util/abortable.js';
import { checkWellFormed, illFormed, notString } from './util/well-formed.js';
import { checkConnectOptions, checkStreamName, checkSubscribeOptions } from './arguments.js';

/** What tests replace: how a connection is made (a fake broker) and the token keeper's clock. */
export interface ClientInternals {
  open?: (server: string, opts: ConnectionOptions, turn: TurnBatcher) => Promise<BrokerConnection>;
  clock?: KeeperClock;
}

/** What every unacked publish resolves with: shared by the callers of a frame, so frozen. */
const WRITTEN_RESULT: PublishResult = Object.freeze({ offset: null, shard: 0 });
const writtenResult = (): PublishResult => WRITTEN_RESULT;
/** An unkeyed acked publish's answer, made by the pipe (no promise on top of its own). */
const unkeyedResult = (offset: number | undefined): PublishResult => ({
  offset: offset ?? null,
  shard: 0,
});

export class FelixClient {
  private current: BrokerConnection | null = null;
  /** Shard lookups under way, by stream (bounded as the cache is). */
  private readonly shardLookups = new Map<
    string,
    Promise<{ shards: number; routing: 'modulo' | 'jump_hash' }>
  >();
  /** The options of every unkeyed single publish, made once (the pipe never changes them). */
  private readonly ackedCall: PublishCall;
  private readonly unackedCall: PublishCall;
  /** The last unacked publish's frame promise and its callers' shared result promise. */
  private lastUnacked: { sent: Promise<unknown> | null; result: Promise<PublishResult> } = {
    sent: null,
    result: Promise.resolve(WRITTEN_RESULT),
  };
  private connectedWaiters: Array<() => void> = [];
  private isClosed = false;
  private terminal: Error | null = null;
  /** Why the last reconnect failed (the cause a call timed out waiting for one is given). */
  private reconnectFailure: unknown;
  private serverIndex = 0;
  /** Reconnect dials per server since the last connection (reconnectDialMs). */
  private readonly reconnectDials = new Map<string, number>();
  private readonly hub = new StatusHub();
  private readonly shardCache = new Map<
    string,
    { shards: number; routing: 'modulo' | 'jump_hash' }
  >();
  /** Aborted on close. Every reader in a backoff listens on it (one each), so many readers
   *  waiting at once are no listener leak: no warning past Node's default of ten. */
  private readonly leavingWork = new LeavingWork();
  /** The publishers holding records not yet sent (closed with the client). */
  private readonly publishers = new GatheringPublishers();
  private readonly closeController = quietController();
  /** The end of the turn, shared by every batch this client makes (publishes, writes, settles). */
  private readonly turn = new TurnBatcher();
  readonly namespace: string;
  /** The token (fixed, or refreshed from the provider) every stream authenticates with. */
  private readonly keeper: TokenKeeper;
  /** Discovery and routing to each shard's owner (on while the broker answers `shard_owners`). */
  private readonly router: ClusterRouter;
  private routedHostMade: RoutedPublishHost | undefined;

  private constructor(
    private readonly opts: ConnectOptions,
    private readonly internals: ClientInternals,
  ) {
    this.namespace = opts.namespace ?? 'default';
    this.keeper = new TokenKeeper(
      opts.token ?? '',
      { present: (token) => this.present(token), emit: (e) => this.hub.emit(e) },
      internals.clock ?? REAL_CLOCK,
    );
    const timeoutMs = opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
    this.ackedCall = { ack: true, gather: true, timeoutMs, shape: unkeyedResult };
    this.unackedCall = { ack: false, gather: true, timeoutMs };
    this.router = new ClusterRouter({
      entry: (signal) => this.connection(signal),
      liveEntry: () => this.liveEntry(),
      open: (addr, connectTimeoutMs) => this.open(addr, connectTimeoutMs),
      enabled: opts.routing !== false,
      brokerLost: (server, err) =>
        this.hub.emit({ type: 'broker_lost', server, reason: lossReason(err) }),
    });
  }

  private liveEntry(): BrokerConnection | undefined {
    const c = this.current;
    return c !== null && !c.isLost && !this.isClosed ? c : undefined;
  }

  /** @internal use `connect()`. */
  static async create(opts: ConnectOptions, internals: ClientInternals = {}): Promise<FelixClient> {
    checkConnectOptions(opts);
    const client = new FelixClient(opts, internals);
    // A provider's first token (TokenProviderError when it fails: nothing to connect with).
    await client.keeper.start();
    const errors: unknown[] = [];
    for (let i = 0; i < opts.servers.length; i++) {
      if (opts.signal?.aborted) {
        client.keeper.stop();
        throw new AbortedError('connect', { cause: opts.signal.reason });
      }
      try {
        client.adopt(await client.openAbortable(client.nextServer(), opts.signal));
        return client;
      } catch (err) {
        if (err instanceof AbortedError) {
          client.keeper.stop();
          throw err;
        }
        errors.push(err);
      }
    }
    client.keeper.stop();
    // Every server failed in a way the same options meet again (the credentials refused, a
    // certificate not trusted): retrying cannot succeed.
    const fatal = errors.every(retryCannotHelp);
    throw new ConnectError(opts.servers, {
      cause: errors.length === 1 ? errors[0] : new AggregateError(errors),
      ...(fatal ? { retry: 'never' as const } : {}),
    });
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * The brokers of the cluster as the last `topology` answer named them (node id and the
   * address the client dials); empty against a single broker or one without discovery.
   */
  get brokers(): Array<{ nodeId: string; addr: string }> {
    return [...this.router.book.brokerIds].map(([nodeId, addr]) => ({ nodeId, addr }));
  }

  /** The seeds in turn, then the brokers a topology answer named (the seeds are never dropped:
   *  a client given one seed reconnects through the others once it has learned them). */
  private nextServer(): string {
    const order = this.router.reconnectOrder(this.opts.servers);
    const s = order[this.serverIndex % order.length]!;
    this.serverIndex++;
    return s;
  }

  /**
   * `open`, ended by `signal`: a dial to a server that takes the connection and never answers
   * waits out connectTimeoutMs, and the caller's abort must end `connect()` then, not that long
   * after. The transport's dial takes no signal, so it runs on; a connection it makes after the
   * abort is closed, never adopted.
   */
  private async openAbortable(server: string, signal?: AbortSignal): Promise<BrokerConnection> {
    const opening = this.open(server);
    if (signal === undefined) return opening;
    try {
      return await abortable(opening, signal, 'connect', false);
    } catch (err) {
      if (err instanceof AbortedError)
        opening.then(
          (conn) => conn.close(),
          () => undefined, // its failure after the abort has nobody to tell
        );
      throw err;
    }
  }

  private async open(server: string, connectTimeoutMs?: number): Promise<BrokerConnection> {
    const configuredMs = this.opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS_DEFAULT;
    const opts = {
      tenant: this.opts.tenant,
      // The newest token; a fresh one first when it is due or the broker refused it.
      token: await this.keeper.forConnect(),
      namespace: this.namespace,
      tls: this.opts.tls ?? {},
      connectTimeoutMs: Math.min(configuredMs, connectTimeoutMs ?? configuredMs),
      idleTimeoutMs: this.opts.idleTimeoutMs ?? IDLE_TIMEOUT_MS_DEFAULT,
      // An event stream is part of a subscribe's answer: never awaited longer than one is.
      eventStreamWaitMs: Math.min(
        EVENT_STREAM_WAIT_MS_MAX,
        this.opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT,
      ),
      requestTimeoutMs: this.opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT,
    };
    try {
      return await (this.internals.open ?? BrokerConnection.open)(server, opts, this.turn);
    } catch (err) {
      if (err instanceof UnauthenticatedError) this.keeper.markRefused();
      throw err;
    }
  }

  /**
   * Presents a provider's fresh token to the live connection (`reauth` when the broker offers
   * it). No live connection, or one lost under the `reauth`: the next one authenticates with it.
   */
  private async present(token: string): Promise<Presented> {
    const c = this.current;
    if (c === null || c.isLost || this.isClosed) return { reauthenticated: false };
    try {
      return await c.reauth(token, this.opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT);
    } catch (err) {
      if (c.isLost) return { reauthenticated: false };
      throw err;
    }
  }

  private adopt(conn: BrokerConnection): void {
    this.current = conn;
    this.reconnectDials.clear(); // bounded by the servers one outage dials
    this.hub.emit({ type: 'connected', server: conn.server, transport: conn.conn.transport });
    for (const w of this.connectedWaiters.splice(0)) w();
    // Discovery is best effort: without it every request goes to this broker, as before.
    this.router.discover(conn).catch(() => undefined);
    void conn.lost.then((err) => {
      this.router.lost(conn);
      if (this.current !== conn) return;
      this.current = null;
      if (this.isClosed) return;
      this.hub.emit({ type: 'disconnected', server: conn.server, reason: lossReason(err) });
      void this.reconnect();
    });
  }

  private async reconnect(): Promise<void> {
    const r = this.opts.reconnect ?? {};
    const attemptsMax = r.attemptsMax ?? RECONNECT_ATTEMPTS_MAX_DEFAULT;
    for (let attempt = 0; attempt < attemptsMax && !this.isClosed; attempt++) {
      const delayMs = backoffDelayMs(attempt, {
        baseMs: r.baseMs ?? RECONNECT_BASE_MS_DEFAULT,
        maxMs: r.maxDelayMs ?? RECONNECT_DELAY_MS_MAX_DEFAULT,
      });
      this.hub.emit({ type: 'reconnecting', attempt: attempt + 1, delayMs });
      try {
        await sleep(delayMs, this.closeController.signal);
      } catch {
        return; // closed while waiting
      }
      const server = this.nextServer();
      try {
        const conn = await this.open(server, this.reconnectDialMs(server));
        this.router.dialed(server, true);
        if (this.isClosed) {
          await conn.close();
          return;
        }
        this.reconnectFailure = undefined;
        this.adopt(conn);
        return;
      } catch (err) {
        // A silent broker is dialed briefly next time; the next seed is tried after the delay.
        this.router.dialed(server, false);
        this.reconnectFailure = err;
      }
    }
    if (!this.isClosed) {
      this.terminal = new ConnectError(this.opts.servers);
      await this.close();
    }
  }

  /** A reconnect's dial bound: short (most dials), or undefined (the connect timeout), counted
   *  per server (the seeds rotate: counted over all, the long dial kept landing on one). */
  private reconnectDialMs(server: string): number | undefined {
    const routed = this.router.dialTimeoutFor(server);
    if (routed !== undefined) return routed;
    const n = this.reconnectDials.get(server) ?? 0;
    this.reconnectDials.set(server, n + 1);
    const full = n % RECONNECT_FULL_DIAL_EVERY === RECONNECT_FULL_DIAL_EVERY - 1;
    return full ? undefined : UNREACHED_DIAL_TIMEOUT_MS;
  }

  /** The live connection, waiting for a reconnect if needed. */
  async connection(signal?: AbortSignal, untilMs?: number): Promise<BrokerConnection> {
    const timeoutMs = this.opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
    // A call that already spent part of its timeout waiting (`untilMs`) waits only the rest.
    const until = untilMs ?? Date.now() + timeoutMs;
    for (;;) {
      if (this.isClosed) throw this.terminal ?? new ClientClosedError();
      if (signal?.aborted) throw new AbortedError('the call', { cause: signal.reason });
      const c = this.current;
      if (c && !c.isLost) return c;
      const left = until - Date.now();
      if (left <= 0) {
        const what = 'waiting for a broker connection';
        throw new TimeoutError(what, timeoutMs, 'retry', this.reconnectFailure);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        const onAbort = () => done();
        function done() {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }
        this.connectedWaiters.push(done);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
  }

  /** Status events: connected, disconnected, reconnecting, lagged, gap, reset, closed. */
  status(opts: { signal?: AbortSignal } = {}): AsyncIterable<StatusEvent> {
    return this.hub.listen(opts.signal);
  }

  /** Shard count and routing of a stream (cached). Throws UnknownStreamError for 0 shards. */
  async shards(
    stream: string,
    signal?: AbortSignal,
  ): Promise<{ shards: number; routing: 'modulo' | 'jump_hash' }> {
    checkWellFormed(stream, 'the stream name');
    const cached = this.shardCache.get(stream);
    if (cached) return cached;
    // Concurrent lookups of one stream share one request (a burst of keyed publishes asks once).
    // The shared request takes no caller's signal, so one caller's abort fails only its own call.
    let lookup = this.shardLookups.get(stream);
    if (lookup === undefined) {
      const asking = this.lookUpShards(stream).finally(() => {
        if (this.shardLookups.get(stream) === asking) this.shardLookups.delete(stream);
      });
      lookup = asking;
      if (this.shardLookups.size < SHARD_CACHE_STREAMS_MAX) this.shardLookups.set(stream, asking);
    }
    return abortable(lookup, signal, `the shard lookup of ${stream}`, false);
  }

  private async lookUpShards(
    stream: string,
  ): Promise<{ shards: number; routing: 'modulo' | 'jump_hash' }> {
    const view = await (await this.connection()).streamShards(stream);
    if (view.shards === 0) throw new UnknownStreamError(stream, this.namespace);
    if (this.shardCache.size >= SHARD_CACHE_STREAMS_MAX) this.shardCache.clear();
    this.shardCache.set(stream, view);
    return view;
  }

  /**
   * Publishes one record; by default resolves with its offset once the broker acknowledged it.
   * Acked publishes to one stream and key made in the same turn share one frame and one append.
   */
  publish(
    stream: string,
    data: Uint8Array | string,
    opts: PublishOptions = {},
  ): Promise<PublishResult> {
    // Not async: an async wrapper around send's promise costs every publish extra turns.
    // A string is checked once, here (a lone surrogate would be sent as U+FFFD's bytes).
    if (typeof data === 'string') {
      if (!data.isWellFormed()) return Promise.reject(illFormed('the publish data'));
    } else if (!isByteView(data)) return Promise.reject(notBytes(data, 'the publish data'));
    if (typeof stream !== 'string') return Promise.reject(notString(stream, 'the stream name'));
    // Only a name that may be too long is measured (a UTF-16 unit is at most 3 UTF-8 bytes); one
    // that is not well-formed is refused there too.
    if (stream.length * 3 > BINARY_STRING_BYTES_MAX || !stream.isWellFormed())
      return this.send(stream, [data], opts, true);
    const routed = this.router.active;
    // Routed: the owner's live connection when a one-shard stream's owner is known and open.
    const current = routed ? this.ownerNow(stream) : this.current;
    if (opts.signal !== undefined || opts.key !== undefined || stream === '' || current === null)
      return this.send(stream, [data], opts, true);
    // Resent after a loss: the general path.
    if (opts.atLeastOnce === true) return this.send(stream, [data], opts, true);
    const payload =
      typeof data === 'string' ? wellFormedBytes(data) : bytesOf(data, 'the publish data');
    if (this.isClosed || current.isLost || payload.byteLength > PAYLOAD_BYTES_MAX)
      return this.send(stream, [data], opts, true);
    const ack = opts.ack ?? true;
    const sent = this.publishUnkeyed(current, stream, payload, ack);
    // The owner moved meanwhile: nothing was written, so the general path (redirects) sends it.
    if (!routed || !ack) return sent;
    return sent.catch((err: unknown) => {
      if (retryKindOf(err) !== 'redirect') throw err;
      return this.send(stream, [data], opts, true);
    });
  }

  /** The live connection to the owner of a one-shard stream, when known and open now. */
  private ownerNow(stream: string): BrokerConnection | null {
    if (this.shardCache.get(stream)?.shards !== 1) return null;
    return this.router.liveFor('stream', stream, 0) ?? null;
  }

  /**
   * The common publish (live connection, no key, no signal) without send's async frame and
   * per-call objects: unacked callers of one frame share one promise and one frozen result.
   */
  private publishUnkeyed(
    conn: BrokerConnection,
    stream: string,
    payload: Uint8Array,
    ack: boolean,
  ): Promise<PublishResult> {
    const sent = conn.publish(stream, [payload], ack ? this.ackedCall : this.unackedCall);
    // The acked call's shape made the answer a PublishResult (unkeyedResult).
    if (ack) return sent as Promise<PublishResult>;
    if (sent !== this.lastUnacked.sent)
      this.lastUnacked = { sent, result: sent.then(writtenResult) };
    return this.lastUnacked.result;
  }

  /** Publishes records as one batch (one append, contiguous offsets, one shard). */
  async publishBatch(
    stream: string,
    data: Array<Uint8Array | string>,
    opts: PublishOptions = {},
  ): Promise<PublishResult> {
    return this.send(stream, data, opts, false);
  }

  private async send(
    stream: string,
    data: Array<Uint8Array | string>,
    opts: PublishOptions,
    gather: boolean,
  ): Promise<PublishResult> {
    checkStreamName(stream);
    const payloads = data.map((d) => bytesOf(d, 'the publish data'));
    if (payloads.length === 0) throw new InvalidArgumentError('a batch needs at least one record');
    // The broker refuses a longer batch (its records, not its bytes, are what it builds).
    if (payloads.length > PUBLISH_BATCH_RECORDS_MAX) {
      throw new InvalidArgumentError(
        `a batch carries at most ${PUBLISH_BATCH_RECORDS_MAX} records, got ${payloads.length} (split it)`,
      );
    }
    // One batch is one frame: its records together, with their 4-byte lengths, the key and the
    // stream's name, are bounded as one payload is (the rest of the frame fits the headroom).
    const key = opts.key !== undefined ? bytesOf(opts.key, 'the publish key') : undefined;
    let total = key === undefined ? 0 : key.byteLength;
    total += streamNameBytes(stream);
    for (const p of payloads) total += p.byteLength + RECORD_LENGTH_BYTES;
    if (total > PAYLOAD_BYTES_MAX) {
      throw new InvalidArgumentError(
        payloads.length === 1
          ? `a payload exceeds ${PAYLOAD_BYTES_MAX} bytes`
          : `a batch's records total ${total} bytes, over ${PAYLOAD_BYTES_MAX} (split it)`,
      );
    }
    if (key !== undefined && key.byteLength > BINARY_STRING_BYTES_MAX)
      throw new InvalidArgumentError(`a key exceeds ${BINARY_STRING_BYTES_MAX} bytes`);
    const ack = opts.ack ?? true;
    const signal = opts.signal;
    // An ack that never comes is an unknown outcome, not a hang: the connection times it.
    const timeoutMs = this.opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
    const call: PublishCall = { ack, gather, timeoutMs, ...(key ? { key } : {}) };
    const sent =
      this.router.active || opts.atLeastOnce === true
        ? sendRouted(this.routedHost, stream, payloads, call, opts)
        : this.sendOnce(stream, payloads, call, signal);
    const r = await (signal === undefined ? sent : abortable(sent, signal, 'publish'));
    let shard: number | null = 0;
    if (key) {
      // The shard a key went to needs the stream's width: asked once per stream (then cached),
      // so the answer always names it, as unrouted publishes' answers did not.
      const view =
        this.shardCache.get(stream) ?? (await this.shards(stream, signal).catch(() => undefined));
      shard = view ? shardForKey(key, view.shards, view.routing) : null;
    }
    return { offset: r.offset ?? null, shard };
  }

  /**
   * A publish on the entry connection (no routing): never resent once it may have been written,
   * but a refusal of a shard still opening (a restarted broker's `not_ready`: nothing written)
   * is sent again after a short delay, within the publish's request timeout, which bounds the
   * wait for an attempt's ack too (publishWithin).
   */
  private async sendOnce(
    stream: string,
    payloads: Uint8Array[],
    call: PublishCall,
    signal: AbortSignal | undefined,
  ): Promise<PublishAnswer> {
    const untilMs = Date.now() + call.timeoutMs;
    let refusal: unknown;
    const unsent = () => refusal ?? new TimeoutError(`the publish to ${stream}`, call.timeoutMs);
    for (let attempt = 0; ; attempt++) {
      const current = this.current;
      // The live connection is taken as it is (no promise); otherwise wait for one.
      const conn =
        signal === undefined && !this.isClosed && current !== null && !current.isLost
          ? current
          : await this.connection(signal, untilMs);
      try {
        return await publishWithin(conn, stream, payloads, call, untilMs, unsent);
      } catch (err) {
        const leftMs = untilMs - Date.now();
        if (!(err instanceof ShardUnavailableError) || leftMs <= 0 || this.isClosed) throw err;
        if (attempt + 1 >= PUBLISH_ROUTE_ATTEMPTS_MAX) throw err;
        refusal = err;
        await sleep(publishRetryDelayMs(attempt, leftMs), signal);
      }
    }
  }

  /** What a routed publish needs of this client (routed-publish.ts). */
  private get routedHost(): RoutedPublishHost {
    const client = this;
    this.routedHostMade ??= {
      router: this.router,
      get closed() {
        return client.isClosed;
      },
      get reconnectFailure() {
        return client.reconnectFailure;
      },
      liveEntry: () => this.liveEntry(),
      connection: (signal, untilMs) => this.connection(signal, untilMs),
      shardOf: (stream, key, signal, untilMs) => this.shardOfPublish(stream, key, signal, untilMs),
    };
    return this.routedHostMade;
  }

  /** The shard a publish goes to when the client can tell (a key, or a one-shard stream). */
  private async shardOfPublish(
    stream: string,
    key: Uint8Array | undefined,
    signal: AbortSignal | undefined,
    untilMs: number,
  ): Promise<number | undefined> {
    let width: { shards: number; routing: 'modulo' | 'jump_hash' };
    try {
      // The lookup's wait for a connection is the publish's, not a timeout of its own.
      if (!this.shardCache.has(stream)) await this.connection(signal, untilMs);
      width = await this.shards(stream, signal);
    } catch {
      return undefined; // unknown here: the entry broker answers the publish (and refuses it)
    }
    if (key !== undefined) return shardForKey(key, width.shards, width.routing);
    return width.shards === 1 ? 0 : undefined;
  }

  /**
   * The first offset of a shard (default 0) whose record was appended at or after `at` (a Date,
   * or microseconds since the epoch, the broker's clock at append); undefined when no record is
   * that new yet. A binary search on the broker (bounded reads); an in-memory stream answers from
   * the records it still holds. FeatureUnsupportedError from a broker without
   * FEATURE_RECORD_TIMESTAMPS.
   */
  async offsetForTime(
    stream: string,
    at: Date | number,
    opts: { shard?: number; signal?: AbortSignal } = {},
  ): Promise<number | undefined> {
    if (stream === '') throw new InvalidArgumentError('stream must not be empty');
    checkWellFormed(stream, 'the stream name');
    const atMicros = microsOf(at);
    const shard = opts.shard ?? 0;
    if (!Number.isSafeInteger(shard) || shard < 0)
      throw new InvalidArgumentError('shard must be a non-negative integer');
    if (!this.router.active)
      return offsetForTimeOn(await this.connection(opts.signal), stream, shard, atMicros);
    // Answered by the shard's leader (its log): routed there, redirects followed.
    return this.router.request(
      'stream',
      stream,
      shard,
      (c) => offsetForTimeOn(c, stream, shard, atMicros),
      opts.signal,
    );
  }

  /** A batching publisher: many `publish()` calls, few frames. */
  publisher(stream: string, opts: PublisherOptions = {}): Publisher {
    checkWellFormed(stream, 'the stream name');
    const ack = opts.ack ?? true;
    const atLeastOnce = opts.atLeastOnce === true ? { atLeastOnce: true } : {};
    return new Publisher(
      stream,
      (payloads, key) =>
        this.publishBatch(stream, payloads, { ack, ...atLeastOnce, ...(key ? { key } : {}) }),
      opts,
      this.turn,
      this.publishers,
    );
  }

  /** Subscribes to a stream (every shard, merged) or one shard. A bounded async iterable. */
  subscribe(stream: string, opts: SubscribeOptions = {}): Subscription {
    checkWellFormed(stream, 'the stream name');
    checkSubscribeOptions(opts);
    const capacity = opts.queueCapacity ?? SUBSCRIBE_QUEUE_CAPACITY_DEFAULT;
    const client = this;
    const host = {
      connection: (signal?: AbortSignal) => this.connection(signal),
      emit: (e: StatusEvent) => this.hub.emit(e),
      get closed() {
        return client.isClosed;
      },
      get closedWith() {
        return client.terminal ?? undefined;
      },
      closing: this.closeController.signal,
      route: this.readerRoute(),
    };
    const shards = async (signal: AbortSignal) => (await this.shards(stream, signal)).shards;
    return new Subscription(
      (signal) => subscriptionReaders(host, stream, opts, shards, signal, capacity),
      opts.bufferBatches ?? SUBSCRIPTION_BUFFER_BATCHES_DEFAULT,
      opts.signal,
    );
  }

  /** What a shard reader needs of the router. */
  private readerRoute(): ReaderRoute {
    const router = this.router;
    return {
      get active() {
        return router.active;
      },
      request: (kind, name, shard, call, signal) => router.request(kind, name, shard, call, signal),
      refused: (kind, name, shard, err, from) => router.refused(kind, name, shard, err, from),
    };
  }

  /** A cache declared on the broker: put/get/delete and watch. */
  cache(name: string): Cache {
    return new Cache(this.projectionHost(), name);
  }

  /** Counters beside the cache `name` (durable brokers only). */
  counter(name: string): Counter {
    return new Counter(this.projectionHost(), name);
  }

  /**
   * A consumer group on one shard of a durable stream (default shard 0; on that shard's owner,
   * in a cluster), or with `shard: 'all'` on every shard of it (a StreamGroup: one `consume()`
   * loop over a Group per shard, each keeping its own cursor under the same group name).
   */
  group(stream: string, group: string, opts: StreamGroupOptions): StreamGroup;
  group(stream: string, group: string, opts?: GroupOptions): Group;
  group(
    stream: string,
    group: string,
    opts: GroupOptions | StreamGroupOptions = {},
  ): Group | StreamGroup {
    if (opts.shard === 'all') {
      const { shard: _all, ...each } = opts;
      this.shardGroup(stream, group, { ...each, shard: 0 }); // its names checked now
      return new StreamGroup(
        stream,
        group,
        async () => (await this.shards(stream)).shards,
        (shard) => this.shardGroup(stream, group, { ...each, shard }),
      );
    }
    return this.shardGroup(stream, group, opts);
  }

  private shardGroup(stream: string, group: string, opts: GroupOptions): Group {
    const shard = opts.shard ?? 0;
    return new Group(this.projectionHost({ name: stream, shard }), stream, group, opts);
  }

  /** What caches, counters and groups use; `owned` routes every request to that stream shard's
   *  owner while routing is on (a group's requests must reach the broker holding its claims). */
  private projectionHost(owned?: { name: string; shard: number }): ProjectionHost {
    const client = this;
    const router = this.router;
    return {
      connection: (signal?: AbortSignal) =>
        owned !== undefined && router.active
          ? router.connectionFor('stream', owned.name, owned.shard, signal)
          : client.connection(signal),
      live: () =>
        owned !== undefined && router.active
          ? router.liveFor('stream', owned.name, owned.shard)
          : client.liveEntry(),
      get closed() {
        return client.isClosed;
      },
      get closedWith() {
        return client.terminal ?? undefined;
      },
      closing: this.closeController.signal,
      emit: (e: StatusEvent) => this.hub.emit(e),
      leaving: (work) => this.leavingWork.add(work),
      route: {
        get active() {
          return router.active;
        },
        requestTimeoutMs: this.opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT,
        connectionFor: (kind, name, shard, signal) =>
          router.connectionFor(kind, name, shard, signal),
        widthOf: (kind, name, signal) => router.widthOf(kind, name, signal),
        refused: (kind, name, shard, err, from) => router.refused(kind, name, shard, err, from),
        request: (kind, name, shard, call, signal, tried) =>
          router.request(kind, name, shard, call, signal, tried),
      },
      ...(owned === undefined
        ? {
            keys: cacheKeyRoute(
              this.router,
              this.opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT,
            ),
          }
        : {}),
    };
  }

  /** Closes the connection; waiting calls fail with ClientClosedError. */
  async close(): Promise<void> {
    if (this.isClosed) return;
    // Records publishers still gather go now, so the drain below waits for them too; a routed
    // batch (still looking its owner up) is waited for as a hand-back is, bounded.
    for (const sent of this.publishers.closeAll()) this.leavingWork.add(sent);
    // Consume loops that just ended hand back what they held first (bounded).
    await this.leavingWork.settle();
    if (this.isClosed) return;
    this.isClosed = true;
    this.keeper.stop();
    this.closeController.abort();
    for (const w of this.connectedWaiters.splice(0)) w();
    const c = this.current;
    this.current = null;
    // What the close leaves waiting on a connection fails as a call made after it does, not
    // with the ConnectionLostError of a connection lost (which tells a caller to retry).
    const reason = this.terminal ?? new ClientClosedError();
    await Promise.all([c?.close(reason), this.router.close(reason)]);
    this.hub.emit({ type: 'closed' });
    this.hub.end();
  }
}

/** Connects to the first reachable server of `opts.servers`. */
export function connect(opts: ConnectOptions): Promise<FelixClient> {
  return FelixClient.create(opts);
}
