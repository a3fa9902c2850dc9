/**
 * One client connection: the auth timeout, and one reader per stream the client opens. A stream
 * authenticates with `auth` before anything else (frames above the pre-auth bound are refused on
 * their header), then carries publishes (answered in order, within the publish window),
 * subscribes (each served on a broker-opened uni stream), and `stream_shards` queries.
 * Bad input gets a typed answer and, when the stream can no longer be trusted, ends that stream;
 * it never reaches a log and never takes the broker down.
 */
import type { Connection, TransportStream } from '@felix/transport';
import {
  FEATURE_ERROR_CODES,
  FEATURE_SUBSCRIBE_QUEUE,
  FEATURE_SUBSCRIPTION_LAGGED,
  FEATURE_UNSUPPORTED,
  FLAG_BINARY_PUBLISH_ACK_OFFSET,
  FLAG_EVENT_BATCH_OFFSETS,
  type CacheGetMessage as GetRequest,
  GetRequestReader,
  type Message,
} from '@felix/wire';
import { IDENT_BYTES_MAX, SUBSCRIPTIONS_PER_CONNECTION_MAX, TOKEN_BYTES_MAX } from '../limits.js';
import { type Payloads, payloadCount } from '../streams/event-batch.js';
import type { StreamRuntime } from '../catalog/catalog.js';
import type { StartSpec } from '../streams/shard.js';
import { AnswerPipe } from './answer-pipe.js';
import {
  FrameReader,
  type InboundFrame,
  ackFrame,
  jsonFrame,
  layoutOf,
  readMessage,
  readPublish,
  routeKey,
} from './codec.js';
import type { SessionContext } from './context.js';
import {
  type Negotiated,
  SERVER_FEATURES,
  SERVER_FLAGS,
  authAnswer,
  has,
  negotiateAuth,
} from './negotiation.js';
import { Refusal } from './refusal.js';
import { SubscriptionWriter } from './subscription-writer.js';

/** Connection close codes (reference §1.1). */
export const CLOSE_SHUTDOWN = 0;
export const CLOSE_AUTH_TIMEOUT = 1;

interface PublishRequest {
  tenant: string;
  namespace: string;
  stream: string;
  key: Uint8Array | undefined;
  /** Views (JSON), or the binary frame's unsplit list (forwarded to subscribers as it is). */
  payloads: Payloads;
  /** Present when an answer is owed. */
  requestId: number | undefined;
  json: boolean;
}

/** A publish-only stream (a uni stream) carries only publishes: any request on it is refused. */
function uniRequest(): Refusal {
  return new Refusal(
    'invalid_request',
    'a publish-only stream carries only publishes',
    'uni_request',
    true,
  );
}

export class ClientSession {
  private authenticated = false;
  private authTimer: NodeJS.Timeout | null = null;
  private readonly subscriptions = new Map<number, SubscriptionWriter>();
  private nextSubscriptionId = 1;
  private readonly readers = new Set<Promise<void>>();
  private readonly pipes = new Set<AnswerPipe>();

  constructor(
    readonly conn: Connection,
    private readonly ctx: SessionContext,
  ) {}

  /** Serves the connection until it closes. */
  async run(): Promise<void> {
    this.authTimer = setTimeout(() => this.onAuthTimeout(), this.ctx.config.broker.auth_timeout_ms);
    try {
      for await (const stream of this.conn.incoming()) {
        const reader = this.serveStream(stream).catch((err: unknown) => {
          this.ctx.log.debug({ err, remote: this.conn.remote }, 'stream ended with an error');
        });
        this.readers.add(reader);
        void reader.finally(() => this.readers.delete(reader));
      }
    } catch (err) {
      this.ctx.log.debug({ err, remote: this.conn.remote }, 'connection ended');
    } finally {
      if (this.authTimer) clearTimeout(this.authTimer);
      for (const sub of this.subscriptions.values()) sub.stop();
      this.subscriptions.clear();
    }
  }

  /** Waits (bounded by the caller) for every publish answer owed to be written. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pipes].map((p) => p.drain()));
  }

  private onAuthTimeout(): void {
    this.authTimer = null;
    if (this.authenticated) return;
    this.ctx.metrics.authTimeouts.inc();
    this.ctx.log.info(
      { remote: this.conn.remote },
      'closing a connection that never authenticated',
    );
    void this.conn
      .close({ code: CLOSE_AUTH_TIMEOUT, reason: 'authentication timeout' })
      .catch(() => {
        // the connection may already be gone; nothing else to do
      });
  }

  private async serveStream(stream: TransportStream): Promise<void> {
    const cfg = this.ctx.config.broker;
    const reader = new FrameReader(cfg.preauth_max_frame_bytes);
    let auth: Negotiated | null = null;
    const window = Math.max(1, cfg.publish_window);
    const answers = new AnswerPipe(stream, window);
    const gets = new GetRequestReader();
    this.pipes.add(answers);
    const owned: number[] = [];
    const quiet = stream.kind === 'uni'; // a publish-only stream: the broker never answers on it
    try {
      for await (const chunk of stream) {
        let frames: InboundFrame[];
        try {
          frames = reader.push(chunk);
        } catch (err) {
          await this.refuse(
            stream,
            auth,
            new Refusal('invalid_request', (err as Error).message, frameReason(err), true),
            quiet,
          );
          return;
        }
        for (const frame of frames) {
          if (!auth) {
            auth = await this.authenticate(stream, frame, quiet);
            if (!auth) return;
            reader.setMax(cfg.max_frame_bytes);
            continue;
          }
          // A get in the exact form our client writes skips the general decoder (the reader
          // declines anything else), and a hot one is answered in this turn.
          const get = frame.flags === 0 && !quiet ? gets.read(frame.payload) : undefined;
          if (get !== undefined && this.answerHotGet(auth, get, answers)) continue;
          const refusal =
            get !== undefined
              ? await this.dispatchMessage(stream, auth, get, answers, owned, quiet)
              : await this.dispatch(stream, auth, frame, answers, owned, quiet);
          if (refusal) {
            await answers.drain();
            await this.refuse(stream, auth, refusal, quiet);
            if (refusal.fatalToStream) return;
          }
        }
      }
      await answers.drain();
      if (!quiet) await stream.end();
    } finally {
      this.pipes.delete(answers);
      for (const id of owned) {
        this.subscriptions.get(id)?.stop();
        this.subscriptions.delete(id);
      }
    }
  }

  private async authenticate(
    stream: TransportStream,
    frame: InboundFrame,
    quiet: boolean,
  ): Promise<Negotiated | null> {
    let msg: Message;
    try {
      if (frame.flags !== 0) throw new Error('the first frame on a stream must be a JSON auth');
      msg = readMessage(frame.payload);
    } catch (err) {
      await this.refuse(
        stream,
        null,
        new Refusal('unauthenticated', (err as Error).message, 'preauth_frame', true),
        quiet,
      );
      return null;
    }
    if (msg.type !== 'auth') {
      await this.refuse(
        stream,
        null,
        new Refusal('unauthenticated', `expected auth, got ${msg.type}`, 'preauth_message', true),
        quiet,
      );
      return null;
    }
    if (
      msg.tenant_id === '' ||
      Buffer.byteLength(msg.tenant_id) > IDENT_BYTES_MAX ||
      msg.token.length > TOKEN_BYTES_MAX
    ) {
      await this.refuse(
        stream,
        null,
        new Refusal('unauthenticated', 'bad tenant or token', 'auth_fields', true),
        quiet,
      );
      return null;
    }
    if (this.ctx.draining()) {
      await this.refuse(
        stream,
        null,
        new Refusal('draining', 'broker is shutting down', 'draining', true),
        quiet,
      );
      return null;
    }
    // Until the authorization issue lands, a token is accepted as given.
    const offered = SERVER_FEATURES | (this.ctx.projections?.features ?? 0);
    const offeredHi = this.ctx.projections?.featuresHi ?? 0;
    const negotiated = negotiateAuth(
      msg.tenant_id,
      msg.client_flags,
      msg.client_features,
      offered,
      msg.client_features_hi,
      offeredHi,
    );
    this.authenticated = true;
    if (this.authTimer) {
      clearTimeout(this.authTimer);
      this.authTimer = null;
    }
    if (!quiet) {
      await stream.write(
        jsonFrame(authAnswer(negotiated, Math.max(1, this.ctx.config.broker.publish_window))),
      );
    }
    return negotiated;
  }

  private async refuse(
    stream: TransportStream,
    auth: Negotiated | null,
    refusal: Refusal,
    quiet: boolean,
  ): Promise<void> {
    this.ctx.metrics.badInput.inc({ reason: refusal.reason });
    this.ctx.log.debug(
      { remote: this.conn.remote, reason: refusal.reason, msg: refusal.message },
      'refused client input',
    );
    try {
      if (!quiet) {
        const withCodes = auth !== null && has(auth.features, FEATURE_ERROR_CODES);
        await stream.write(
          jsonFrame(
            withCodes
              ? {
                  type: 'error',
                  message: refusal.message,
                  code: refusal.code,
                  retry: refusal.retry,
                }
              : { type: 'error', message: refusal.message },
          ),
        );
      }
      if (refusal.fatalToStream) await stream.end();
    } catch {
      // the peer already went away; the refusal is counted
    }
  }

  /**
   * A `cache_get` answered in this turn when its key is hot, as `dispatchMessage` would answer it
   * (same ownership check, same answer or refusal); false when that must take it.
   */
  private answerHotGet(auth: Negotiated, msg: GetRequest, answers: AnswerPipe): boolean {
    const projections = this.ctx.projections;
    if (!projections || this.ctx.ownership?.refuseMessage(msg)) return false;
    return projections.answerHotGet(auth, msg, answers);
  }

  /** Handles one authenticated frame; returns a refusal to answer with, if any. */
  private async dispatch(
    stream: TransportStream,
    auth: Negotiated,
    frame: InboundFrame,
    answers: AnswerPipe,
    owned: number[],
    quiet: boolean,
  ): Promise<Refusal | null> {
    let layout: string;
    try {
      layout = layoutOf(frame.flags);
    } catch (err) {
      return new Refusal('invalid_request', (err as Error).message, 'unknown_flag', true);
    }
    if (layout === 'publish_batch') {
      if ((frame.flags & ~SERVER_FLAGS) !== 0) {
        return new Refusal(
          'invalid_request',
          `publish flags 0x${frame.flags.toString(16)} not supported`,
          'unsupported_flag',
          true,
        );
      }
      let req: PublishRequest;
      try {
        const p = readPublish(frame);
        req = { ...p, json: false };
      } catch (err) {
        return new Refusal('invalid_request', (err as Error).message, 'malformed_publish', true);
      }
      if (quiet) req.requestId = undefined;
      await answers.room();
      answers.push(this.publish(auth, req));
      return null;
    }
    if (layout !== 'json') {
      return new Refusal(
        'invalid_request',
        `a client may not send ${layout} frames`,
        'wrong_direction',
        true,
      );
    }
    let msg: Message;
    try {
      msg = readMessage(frame.payload);
    } catch (err) {
      return new Refusal('invalid_request', (err as Error).message, 'malformed_json', true);
    }
    return this.dispatchMessage(stream, auth, msg, answers, owned, quiet);
  }

  private async dispatchMessage(
    stream: TransportStream,
    auth: Negotiated,
    msg: Message,
    answers: AnswerPipe,
    owned: number[],
    quiet: boolean,
  ): Promise<Refusal | null> {
    switch (msg.type) {
      case 'publish':
      case 'publish_batch': {
        const payloads = msg.type === 'publish' ? [msg.payload] : msg.payloads;
        const acked = msg.ack !== undefined && msg.ack !== 'none';
        if (acked && msg.request_id === undefined) {
          return new Refusal(
            'invalid_request',
            'an acked publish needs a request_id',
            'missing_request_id',
          );
        }
        this.ctx.metrics.publishes.inc({ frame: 'json' });
        await answers.room();
        answers.push(
          this.publish(auth, {
            tenant: msg.tenant_id,
            namespace: msg.namespace,
            stream: msg.stream,
            key: msg.key,
            payloads,
            requestId: acked && !quiet ? msg.request_id : undefined,
            json: true,
          }),
        );
        return null;
      }
      case 'subscribe':
        if (quiet) return uniRequest();
        await answers.drain();
        return this.subscribe(stream, auth, msg, owned);
      case 'stream_shards': {
        if (quiet) return uniRequest();
        await answers.drain();
        const s =
          msg.tenant_id === auth.tenant
            ? this.ctx.catalog.get(msg.tenant_id, msg.namespace, msg.stream)
            : undefined;
        const view: Message = {
          type: 'stream_shards_view',
          shards: s ? s.shards.length : 0,
          request_id: msg.request_id,
          ...(s?.config.routing === 'jump_hash' ? { routing: 'jump_hash' as const } : {}),
        };
        await stream.write(jsonFrame(view));
        return null;
      }
      case 'offset_for_time': {
        if (quiet) return uniRequest();
        await answers.drain();
        return this.offsetForTime(stream, auth, msg);
      }
      case 'auth':
        return new Refusal('invalid_request', 'a second auth on one stream', 'second_auth', true);
      default:
        if (!quiet && this.ctx.projections?.handles(msg)) {
          const unheld = this.ctx.ownership?.refuseMessage(msg);
          if (unheld) {
            await answers.drain();
            return unheld;
          }
          await this.ctx.projections.serve({ conn: this.conn, stream, auth, msg, answers });
          return null;
        }
        if (!quiet && has(auth.features, FEATURE_UNSUPPORTED) && 'request_id' in msg) {
          await stream.write(
            jsonFrame({
              type: 'unsupported',
              request_type: msg.type,
              request_id: msg.request_id as number,
            }),
          );
          this.ctx.metrics.badInput.inc({ reason: 'unsupported_request' });
          return null;
        }
        return new Refusal(
          'invalid_request',
          `unsupported request ${msg.type}`,
          'unsupported_request',
          true,
        );
    }
  }

  /** Appends and builds the answer bytes (or null when none is owed). */
  private async publish(auth: Negotiated, req: PublishRequest): Promise<Uint8Array | null> {
    const m = this.ctx.metrics;
    const answerError = (refusal: Refusal): Uint8Array | null => {
      m.publishErrors.inc({ code: refusal.code });
      if (req.requestId === undefined) return null;
      const withCodes = has(auth.features, FEATURE_ERROR_CODES);
      if (req.json) {
        return jsonFrame({
          type: 'publish_error',
          request_id: req.requestId,
          message: refusal.message,
          ...(withCodes ? { code: refusal.code, retry: refusal.retry } : {}),
        });
      }
      return ackFrame(auth.flags, {
        ok: false,
        requestId: req.requestId,
        message: refusal.message,
        code: refusal.code,
        retry: refusal.retry,
      });
    };
    if (this.ctx.draining())
      return answerError(new Refusal('draining', 'broker is shutting down', 'draining'));
    if (req.tenant !== auth.tenant) {
      return answerError(
        new Refusal('forbidden', `stream authenticated for tenant ${auth.tenant}`, 'wrong_tenant'),
      );
    }
    const stream = this.ctx.catalog.get(req.tenant, req.namespace, req.stream);
    if (!stream) {
      return answerError(
        new Refusal(
          'not_found',
          `stream ${req.namespace}/${req.stream} not found`,
          'unknown_stream',
        ),
      );
    }
    const { records, bytes } = payloadCount(req.payloads);
    if (records === 0)
      return answerError(new Refusal('invalid_request', 'empty publish batch', 'empty_batch'));
    const shardIndex = req.key ? routeKey(req.key, stream.shards.length, stream.config.routing) : 0;
    const unheld = this.ctx.ownership?.refuse(
      'stream',
      req.tenant,
      req.namespace,
      req.stream,
      shardIndex,
    );
    if (unheld) return answerError(unheld);
    const shard = stream.shards[shardIndex]!;
    if (!req.json) m.publishes.inc({ frame: 'binary' });
    const started = process.hrtime.bigint();
    let result: { first: number; next: number };
    try {
      result = await shard.publish(req.payloads, Date.now() * 1000);
    } catch (err) {
      this.ctx.log.error({ err, shard: shard.name }, 'append failed');
      return answerError(
        new Refusal('storage', `append failed: ${(err as Error).message}`, 'storage_error'),
      );
    }
    m.appendLatency.observe(
      { durable: String(shard.durable) },
      Number(process.hrtime.bigint() - started) / 1e9,
    );
    m.publishedRecords.inc(records);
    m.publishedBytes.inc(bytes);
    if (req.requestId === undefined) return null;
    const withOffset = has(auth.flags, FLAG_BINARY_PUBLISH_ACK_OFFSET);
    if (req.json) {
      return jsonFrame({
        type: 'publish_ok',
        request_id: req.requestId,
        ...(withOffset ? { offset: result.first } : {}),
      });
    }
    return ackFrame(auth.flags, {
      ok: true,
      requestId: req.requestId,
      offset: withOffset ? result.first : undefined,
    });
  }

  /** Answers `offset_for_time` on the shard's leader: `offset_value`, or a refusal. */
  private async offsetForTime(
    stream: TransportStream,
    auth: Negotiated,
    msg: Extract<Message, { type: 'offset_for_time' }>,
  ): Promise<Refusal | null> {
    const served = this.servedShard(auth, msg, msg.shard);
    if (served instanceof Refusal) return served;
    const { shard } = served;
    let offset: number | undefined;
    try {
      offset = await shard.offsetForTime(msg.at_micros);
    } catch (err) {
      this.ctx.log.error({ err, shard: shard.name }, 'offset_for_time failed');
      return new Refusal('storage', `read failed: ${(err as Error).message}`, 'storage_error');
    }
    await stream.write(
      jsonFrame({
        type: 'offset_value',
        request_id: msg.request_id,
        ...(offset !== undefined ? { offset } : {}),
      }),
    );
    return null;
  }

  /**
   * The shard of a stream this broker serves to this connection (`subscribe`, `offset_for_time`),
   * or the refusal: another tenant's stream, an unknown stream, a shard out of range, or a shard
   * this broker does not hold.
   */
  private servedShard(
    auth: Negotiated,
    msg: { tenant_id: string; namespace: string; stream: string },
    index: number,
  ): { stream: StreamRuntime; shard: StreamRuntime['shards'][number] } | Refusal {
    if (msg.tenant_id !== auth.tenant) {
      return new Refusal(
        'forbidden',
        `stream authenticated for tenant ${auth.tenant}`,
        'wrong_tenant',
      );
    }
    const s = this.ctx.catalog.get(msg.tenant_id, msg.namespace, msg.stream);
    if (!s)
      return new Refusal(
        'not_found',
        `stream ${msg.namespace}/${msg.stream} not found`,
        'unknown_stream',
      );
    const shard = s.shards[index];
    if (!shard) {
      return new Refusal(
        'invalid_request',
        `shard ${index} out of range (stream has ${s.shards.length})`,
        'shard_out_of_range',
      );
    }
    return (
      this.ctx.ownership?.refuse('stream', msg.tenant_id, msg.namespace, msg.stream, index) ?? {
        stream: s,
        shard,
      }
    );
  }

  private async subscribe(
    stream: TransportStream,
    auth: Negotiated,
    msg: Extract<Message, { type: 'subscribe' }>,
    owned: number[],
  ): Promise<Refusal | null> {
    if (this.ctx.draining()) return new Refusal('draining', 'broker is shutting down', 'draining');
    const shardIndex = msg.shard ?? 0;
    const served = this.servedShard(auth, msg, shardIndex);
    if (served instanceof Refusal) return served;
    const { stream: s, shard } = served;
    if (this.subscriptions.size >= SUBSCRIPTIONS_PER_CONNECTION_MAX) {
      return new Refusal(
        'limit_exceeded',
        `at most ${SUBSCRIPTIONS_PER_CONNECTION_MAX} subscriptions per connection`,
        'subscription_limit',
      );
    }
    const id = msg.subscription_id ?? this.allocateSubscriptionId();
    if (this.subscriptions.has(id))
      return new Refusal(
        'invalid_request',
        `subscription id ${id} is in use`,
        'duplicate_subscription',
      );
    const start: StartSpec =
      msg.start === undefined || msg.start === 'latest'
        ? { kind: 'latest' }
        : msg.start === 'earliest'
          ? { kind: 'earliest' }
          : { kind: 'offset', offset: msg.start.offset };
    const cfg = this.ctx.config.broker;
    const capacity =
      has(auth.features, FEATURE_SUBSCRIBE_QUEUE) && msg.queue_capacity !== undefined
        ? Math.min(Math.max(1, msg.queue_capacity), cfg.subscriber_queue_capacity)
        : cfg.subscriber_queue_capacity;
    const endOnLag =
      has(auth.features, FEATURE_SUBSCRIPTION_LAGGED) && has(auth.flags, FLAG_EVENT_BATCH_OFFSETS);
    const outcome = shard.subscribe(start, capacity, endOnLag);
    if (!outcome.ok) {
      this.ctx.metrics.badInput.inc({ reason: `cursor_${outcome.reason}` });
      await stream.write(
        jsonFrame({
          type: 'subscribe_cursor_error',
          reason: outcome.reason,
          requested: outcome.requested,
          available: outcome.available,
        }),
      );
      return null;
    }
    const withOffsets = has(auth.flags, FLAG_EVENT_BATCH_OFFSETS);
    await stream.write(
      jsonFrame({
        type: 'subscribed',
        subscription_id: id,
        ...(withOffsets
          ? { start_offset: outcome.sub.startOffset, live_offset: outcome.sub.liveOffset }
          : {}),
        ...(has(auth.features, FEATURE_SUBSCRIBE_QUEUE) ? { queue_capacity: capacity } : {}),
      }),
    );
    const writer = new SubscriptionWriter(
      this.conn,
      this.ctx,
      auth,
      id,
      s.config,
      shardIndex,
      outcome.sub,
    );
    this.subscriptions.set(id, writer);
    owned.push(id);
    void writer.run().finally(() => {
      if (this.subscriptions.get(id) === writer) this.subscriptions.delete(id);
    });
    return null;
  }

  private allocateSubscriptionId(): number {
    while (this.subscriptions.has(this.nextSubscriptionId)) this.nextSubscriptionId++;
    return this.nextSubscriptionId++;
  }
}

function frameReason(err: unknown): string {
  const code = (err as { code?: string }).code ?? '';
  if (code.includes('TOO_LARGE')) return 'frame_too_large';
  if (code.includes('UNKNOWN_FLAGS')) return 'unknown_flag';
  if (code.includes('FLAG_COMBINATION')) return 'invalid_flags';
  if (code.includes('MAGIC')) return 'bad_magic';
  if (code.includes('VERSION')) return 'bad_version';
  return 'malformed_frame';
}
