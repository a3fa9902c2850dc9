/**
 * One authenticated connection to one broker, and the one place the client meets it: a
 * RequestTable correlating every request with its answer, the publish stream (PublishPipe), the
 * request stream (RequestLane), the broker-opened event streams (EventStreams) and subscribe.
 * Each stream the client writes has one writer, flushed at the end of the turn on the client's
 * TurnBatcher. When the connection dies every unanswered request fails at once, an acked
 * publish as OutcomeUnknownError: it may or may not be in the log, and it is never re-sent.
 */
import { type Connection, type TransportStream, dial } from '@felix/transport';
import { FEATURE_HI_REAUTH, FEATURE_HI_STREAM_END_NOTICE } from '@felix/wire';
import { ConnectionLostError, ProtocolError, TimeoutError } from '../errors.js';
import {
  CLOSE_DRAIN_MS_MAX,
  CONNECTION_CHECK_MS,
  KEEPALIVE_INTERVAL_MS_MAX,
  PEER_SILENCE_MS,
  SILENCE_JUDGED_SENT_BYTES_MAX,
  REQUEST_TIMEOUT_MS_DEFAULT,
} from '../limits.js';
import { CheckTicks, type DueWatched } from '../util/check-ticks.js';
import { Deadline } from '../util/deadline.js';
import { type ConnectionOptions, authStream, withTimeout } from './auth.js';
import { type EventStreamReservation, EventStreams } from './event-streams.js';
import type { FrameStream } from './frame-stream.js';
import { CLIENT_FEATURES_SENT, CLIENT_FLAGS, type Negotiated, has } from './negotiation.js';
import { type PublishAnswer, type PublishCall, PublishPipe } from './publish-pipe.js';
import { RequestLane, UNREAD } from './request-lane.js';
import { RequestTable } from './request-table.js';
import { StreamWriter } from './stream-writer.js';
import {
  type OpenSubscription,
  type StartPosition,
  type SubscriptionHistory,
  openSubscription,
} from './subscribe.js';
import type { TurnBatcher } from './turn-batcher.js';

export type { ConnectionOptions } from './auth.js';
export type { OpenSubscription, StartPosition } from './subscribe.js';

export class BrokerConnection {
  /** Every request of this connection waiting for its answer. */
  readonly table = new RequestTable();
  /** Checks run so far (every CONNECTION_CHECK_MS): what requests are stamped with. */
  readonly ticks = new CheckTicks();
  /** Request streams besides the request lane (group polls') whose oldest answer is bounded. */
  private readonly dueWatched = new Set<DueWatched>();
  private readonly pipe: PublishPipe;
  private lane: RequestLane;
  private readonly events: EventStreams;
  private lostError: Error | null = null;
  readonly lost: Promise<Error>;
  private markLost!: (err: Error) => void;
  /** The broker ends a stream only after the answers of all it applied there
   *  (FEATURE_HI_STREAM_END_NOTICE): what waits at that end was not applied. */
  private readonly endIsNotice: boolean;

  private constructor(
    readonly server: string,
    readonly conn: Connection,
    private readonly opts: ConnectionOptions,
    pub: { stream: TransportStream; frames: FrameStream },
    readonly negotiated: Negotiated,
    /** The client's end-of-turn batcher, shared by every batch on this connection. */
    readonly turn: TurnBatcher,
  ) {
    this.endIsNotice = has(negotiated.featuresHi, FEATURE_HI_STREAM_END_NOTICE);
    this.lost = new Promise((resolve) => {
      this.markLost = resolve;
    });
    const writer = new StreamWriter(pub.stream, turn, this.writeFailed);
    this.pipe = new PublishPipe({
      server,
      tenant: opts.tenant,
      namespace: opts.namespace,
      frames: pub.frames,
      negotiated,
      table: this.table,
      writer,
      turn,
    });
    this.lane = this.newLane();
    this.events = new EventStreams(conn, this.lost, opts.eventStreamWaitMs);
  }

  static async open(
    server: string,
    opts: ConnectionOptions,
    turn: TurnBatcher,
  ): Promise<BrokerConnection> {
    const conn = await dial(server, {
      ...(opts.tls.ca !== undefined ? { ca: opts.tls.ca } : {}),
      ...(opts.tls.fingerprint !== undefined ? { fingerprint: opts.tls.fingerprint } : {}),
      ...(opts.tls.insecure ? { insecureSkipVerify: true } : {}),
      ...(opts.tls.serverName !== undefined ? { serverName: opts.tls.serverName } : {}),
      dialTimeoutMs: opts.connectTimeoutMs,
      idleTimeoutMs: opts.idleTimeoutMs,
      // Keep-alives well inside the idle bound so a quiet but live broker is never dropped, and
      // often enough that a silent one is told apart soon (watchSilence).
      keepAliveIntervalMs: Math.max(
        100,
        Math.min(KEEPALIVE_INTERVAL_MS_MAX, Math.floor(opts.idleTimeoutMs / 3)),
      ),
    });
    return BrokerConnection.over(server, conn, opts, turn);
  }

  /** Authenticates a connection already made (`open` after dialing; tests over a fake). */
  static async over(
    server: string,
    conn: Connection,
    opts: ConnectionOptions,
    turn: TurnBatcher,
  ): Promise<BrokerConnection> {
    try {
      const authed = await withTimeout(
        authStream(conn, opts),
        opts.connectTimeoutMs,
        `auth with ${server}`,
      );
      const c = new BrokerConnection(server, conn, opts, authed, authed.negotiated, turn);
      c.start();
      return c;
    } catch (err) {
      await conn.close().catch(() => undefined); // the auth failure is what the caller hears
      throw err;
    }
  }

  private start(): void {
    void this.pipe.readAnswers().then(
      () =>
        this.endIsNotice ? this.brokerEnded() : this.fail(new ConnectionLostError(this.server)),
      (err: unknown) => this.fail(new ConnectionLostError(this.server, { cause: err })),
    );
    void this.events.accept();
    this.check();
    void this.conn.closed.then((info) =>
      this.fail(
        new ConnectionLostError(this.server, { cause: info.error ?? new Error(info.reason) }),
      ),
    );
  }

  /**
   * Checks the connection every CONNECTION_CHECK_MS: that the broker was heard from (`silence`),
   * and that no request stream's oldest answer is overdue (its requests are stamped with the
   * tick it is due by, so this is their only timer). The timer holds no process open.
   */
  private check(): void {
    const silence = this.silenceCheck();
    const timer = setInterval(() => {
      const tick = ++this.ticks.count;
      silence?.();
      if (this.lostError !== null) return;
      this.lane.checkDue(tick);
      for (const w of this.dueWatched) w.checkDue(tick);
    }, CONNECTION_CHECK_MS);
    timer.unref?.();
    void this.lost.then(() => clearInterval(timer));
  }

  /**
   * The check that declares the connection lost when nothing at all has arrived from the broker
   * for PEER_SILENCE_MS (or the idle bound, when shorter): with a keep-alive at least every
   * KEEPALIVE_INTERVAL_MS_MAX a live broker's transport answers several times within it, so only
   * a silent one (stopped, its host dead, cut off) gets here. Its waiting publishes fail as
   * OutcomeUnknownError and the rest with ConnectionLostError, whose retry finds the new owner.
   * A connection with no request waiting is checked too: its subscriptions, watches and parked
   * group polls wait for the broker as much as a request does (they waited for the idle bound,
   * 15 s, before resuming elsewhere). Over QUIC a live broker's stack acknowledges every packet
   * as it comes. Over TLS its keep-alive answer queues behind whatever this client wrote before
   * it (100,000 unacked publishes in one loop: seconds), so such a connection is judged only
   * while this client has sent at most SILENCE_JUDGED_SENT_BYTES_MAX since it last heard from
   * the broker and holds nothing unsent; a killed broker's socket closes at once there, a
   * stopped or cut-off one's not.
   * Undefined on a transport that counts no packets (a test fake).
   */
  private silenceCheck(): (() => void) | undefined {
    const first = this.conn.stats();
    if (typeof first.packetsReceived !== 'number') return undefined;
    const silenceMs = Math.min(PEER_SILENCE_MS, this.opts.idleTimeoutMs);
    let received = first.packetsReceived;
    let sentAtHeard = first.bytesSent ?? 0;
    let heardMs = Date.now();
    let tickMs = heardMs;
    return () => {
      const nowMs = Date.now();
      const stats = this.conn.stats();
      // A late tick means this process stalled (a long GC, a busy turn): packets that came
      // meanwhile may not be counted yet, so the silence is measured again from now.
      if (stats.packetsReceived !== received || nowMs - tickMs > 2 * CONNECTION_CHECK_MS) {
        received = stats.packetsReceived;
        sentAtHeard = stats.bytesSent ?? 0;
        heardMs = nowMs;
      }
      tickMs = nowMs;
      if (nowMs - heardMs < silenceMs) return;
      const waiting = this.awaitsAnswers();
      const wroteLittle =
        (stats.bytesSent ?? 0) - sentAtHeard <= SILENCE_JUDGED_SENT_BYTES_MAX &&
        (stats.sendBufferedBytes ?? 0) === 0;
      if (!waiting && this.conn.transport !== 'quic' && !wroteLittle) return;
      const waited = waiting ? ' while requests waited' : '';
      this.fail(
        new ConnectionLostError(this.server, {
          cause: new Error(`nothing received for ${nowMs - heardMs} ms${waited}`),
        }),
      );
    };
  }

  /** Bounds the oldest answer of a request stream of its own (a group poll's) while it is open. */
  watchDue(w: DueWatched): void {
    this.dueWatched.add(w);
  }

  unwatchDue(w: DueWatched): void {
    this.dueWatched.delete(w);
  }

  /** Requests on this connection wait for the broker's answer. */
  private awaitsAnswers(): boolean {
    return this.table.size > 0 || this.lane.unanswered > 0;
  }

  get isLost(): boolean {
    return this.lostError !== null;
  }

  private readonly writeFailed = (err: unknown): void => {
    this.fail(new ConnectionLostError(this.server, { cause: err }));
  };

  private fail(err: Error): void {
    if (this.lostError) return;
    this.lostError = err;
    this.pipe.fail(err);
    this.lane.fail(err);
    this.table.failAll(err);
    this.events.fail();
    this.markLost(err);
    void this.conn.close().catch(() => undefined); // already lost: nothing more to report
  }

  /**
   * The broker ended the publish stream, which it does (stream-finish.ts in the broker) only when
   * it stops, after answering every publish it applied there: the publishes still waiting were
   * not applied and fail with ConnectionLostError, which a call retries elsewhere. New calls go
   * to a new connection at once; the request streams get the broker's end too, each telling its
   * own waiting requests the same (request-lane.ts), so the connection is closed only once the
   * request lane has nothing waiting (bounded by CLOSE_DRAIN_MS_MAX).
   */
  private brokerEnded(): void {
    if (this.lostError) return;
    const err = new ConnectionLostError(this.server, { cause: new Error(UNREAD) });
    this.lostError = err;
    this.pipe.fail(err);
    this.table.failAll(err, true);
    this.events.fail();
    this.markLost(err);
    const lane = this.lane;
    void withTimeout(lane.idle(), CLOSE_DRAIN_MS_MAX, 'the request stream')
      .catch(() => undefined) // still waiting at the bound: failed below, as a loss
      .then(() => {
        lane.fail(err);
        return this.conn.close();
      })
      .catch(() => undefined); // the broker closed it first: nothing more to report
  }

  /**
   * Closes after the broker has read what was published (bounded by CLOSE_DRAIN_MS_MAX). What
   * still waits then fails with `reason` (the client's close passes ClientClosedError; by
   * default ConnectionLostError, which a call retries elsewhere), a write already sent with
   * OutcomeUnknownError caused by it.
   */
  async close(reason?: Error): Promise<void> {
    if (this.lostError === null) {
      // A drain that fails or runs out of time (the connection is going) leaves nothing to wait for.
      await withTimeout(this.pipe.drain(), CLOSE_DRAIN_MS_MAX, 'close').catch(() => undefined);
    }
    this.fail(reason ?? new ConnectionLostError(this.server));
    await this.conn.close().catch(() => undefined); // closing a lost connection may fail
  }

  /** How long a request on this connection waits for its answer (requestTimeoutMs). */
  get requestTimeoutMs(): number {
    return this.opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
  }

  /** Tenant and namespace this connection authenticated for (requests name them). */
  get scope(): { tenant: string; namespace: string } {
    return { tenant: this.opts.tenant, namespace: this.opts.namespace };
  }

  /** Whether the broker takes a fresh token in band (`reauth`, FEATURE_HI_REAUTH). */
  get canReauth(): boolean {
    return has(this.negotiated.featuresHi, FEATURE_HI_REAUTH);
  }

  /**
   * Makes `token` this connection's token. Streams opened from now on authenticate with it; a
   * broker offering FEATURE_HI_REAUTH is sent `reauth` on the request stream, after whose
   * `reauth_ok` it checks every stream of the connection (subscriptions included) against it.
   * Answers whether that happened and the expiry the broker named; rejects with the broker's
   * refusal (UnauthenticatedError: it keeps the old token) or a TimeoutError.
   */
  async reauth(
    token: string,
    timeoutMs: number,
  ): Promise<{ reauthenticated: boolean; expiresAtMs?: number }> {
    if (this.lostError) throw this.lostError;
    // Set first: a request stream opened for the `reauth` itself must not present the old token
    // (it may have expired while the provider kept failing).
    this.opts.token = token;
    if (!this.canReauth) return { reauthenticated: false };
    const asked = this.requests.request((id) => ({ type: 'reauth', token, request_id: id }));
    const answer = await withTimeout(asked, timeoutMs, `reauth with ${this.server}`);
    if (answer.type !== 'reauth_ok')
      throw new ProtocolError(`expected reauth_ok, got ${answer.type}`);
    return answer.expires_at_ms !== undefined
      ? { reauthenticated: true, expiresAtMs: answer.expires_at_ms }
      : { reauthenticated: true };
  }

  /** Publishes one batch on the publish stream (see PublishPipe.publish). */
  publish(stream: string, payloads: Uint8Array[], opts: PublishCall): Promise<PublishAnswer> {
    if (this.lostError) return Promise.reject(this.lostError);
    return this.pipe.publish(stream, payloads, opts);
  }

  /**
   * The shard count of a stream (0: unknown stream) and its routing. Asked on the request stream,
   * whose answers come in order: a refusal there (`forbidden` without stream.subscribe or
   * stream.publish, `unauthenticated` after expiry) is an `error` with no request id, which on
   * the publish stream could belong to no request and would end the connection.
   */
  async streamShards(stream: string): Promise<{ shards: number; routing: 'modulo' | 'jump_hash' }> {
    if (this.lostError) throw this.lostError;
    const { tenant, namespace } = this.opts;
    // Bounded like every request on the request stream (request-lane.ts): unanswered, it fails
    // with TimeoutError once overdue and the stream is reset.
    const msg = await this.requests.request((id) => ({
      type: 'stream_shards',
      tenant_id: tenant,
      namespace,
      stream,
      request_id: id,
    }));
    if (msg.type !== 'stream_shards_view')
      throw new ProtocolError(`expected stream_shards_view, got ${msg.type}`);
    return { shards: msg.shards, routing: msg.routing ?? 'modulo' };
  }

  /** The shard count of a cache (0: unknown cache), asked on the request stream as `streamShards`
   *  is (a refusal there is an `error` a request of its own can take). */
  async cacheShards(cache: string): Promise<number> {
    if (this.lostError) throw this.lostError;
    const { tenant, namespace } = this.opts;
    const msg = await this.requests.request((id) => ({
      type: 'cache_shards',
      tenant_id: tenant,
      namespace,
      cache,
      request_id: id,
    }));
    if (msg.type !== 'cache_shards_view')
      throw new ProtocolError(`expected cache_shards_view, got ${msg.type}`);
    return msg.shards;
  }

  /** The request stream (opened on first use; a new one after a failure of the stream alone). */
  get requests(): RequestLane {
    if (this.lane.broken && this.lostError === null) this.lane = this.newLane();
    return this.lane;
  }

  private newLane(): RequestLane {
    return new RequestLane({
      server: this.server,
      table: this.table,
      turn: this.turn,
      ticks: this.ticks,
      timeoutMs: this.requestTimeoutMs,
      open: () => this.openStream(),
      endIsNotice: this.endIsNotice,
    });
  }

  /**
   * Opens a new stream and authenticates it (for requests that need a stream of their own).
   * `withoutFeatures` are left out of what the stream offers (a group poll stream offers
   * FEATURE_RECORD_TIMESTAMPS only when the group asked for record times).
   */
  async openStream(
    withoutFeatures = 0,
    /** Ends the wait for the stream's `auth_ok` (AbortedError). */
    signal?: AbortSignal,
  ): Promise<{ stream: TransportStream; frames: FrameStream }> {
    if (this.lostError) throw this.lostError;
    const features = (CLIENT_FEATURES_SENT & ~withoutFeatures) >>> 0;
    // A live broker that never answers the `auth` held the stream's first request (and every
    // request behind it on the request stream) for as long as the connection lived: bounded,
    // and the stream reset at the bound as at an abort.
    const deadline = new Deadline(this.requestTimeoutMs, signal);
    try {
      const authed = await authStream(
        this.conn,
        this.opts,
        CLIENT_FLAGS,
        features,
        deadline.signal,
      );
      const { stream, frames } = authed;
      return { stream, frames };
    } catch (err) {
      if (deadline.expired && !signal?.aborted)
        throw new TimeoutError(`the auth of a stream to ${this.server}`, deadline.ms);
      throw err;
    } finally {
      deadline.dispose();
    }
  }

  /**
   * Reserves an id for a broker-opened event stream (a subscription or a watch): `events`
   * resolves with the stream whose `event_stream_hello` names it; `cancel` drops the reservation.
   */
  reserveEventStream(): EventStreamReservation {
    return this.events.reserve();
  }

  /** Opens a subscription on one shard. Cursor errors throw CursorTooOld/InFutureError. */
  async subscribe(
    stream: string,
    shard: number,
    start: StartPosition,
    queueCapacity: number,
    /** Offer the timestamped event layout (0x4000) on this subscription's stream. */
    timestamps = false,
    /** The history an offset `start` belongs to (a replicated shard's, from `subscribed`). */
    history?: SubscriptionHistory,
    /** Ends the opening at whatever step it waits (AbortedError). */
    signal?: AbortSignal,
  ): Promise<OpenSubscription> {
    if (this.lostError) throw this.lostError;
    const at = { server: this.server, conn: this.conn, opts: this.opts, events: this.events };
    return openSubscription(
      at,
      {
        stream,
        shard,
        start,
        queueCapacity,
        timestamps,
        ...(history === undefined ? {} : { history }),
      },
      signal,
    );
  }
}
