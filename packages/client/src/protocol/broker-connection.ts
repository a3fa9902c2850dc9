/**
 * One authenticated connection to one broker: the pipelined publish stream (answers in request
 * order, at most `window` unanswered), `stream_shards` queries on it, and subscriptions (a bidi
 * stream each, events on the uni stream the broker opens and names in `event_stream_hello`).
 * Acked single publishes (`gather`) to the same stream and key made in one turn of the event loop
 * go out as one batch frame (one append and one ack at the broker); each caller still gets its
 * own offset. Batches the caller formed itself (`publishBatch`, `publisher()`) go out as formed.
 * When the connection dies every unanswered acked publish fails with OutcomeUnknownError:
 * it may or may not be in the log, and it is never silently re-sent.
 */
import { type Connection, type TransportStream, dial } from '@felix/transport';
import {
  FLAG_BINARY_PUBLISH_ACK,
  FLAG_BINARY_PUBLISH_ACKED,
  FLAG_EVENT_BATCH_TIMESTAMPS,
  type Message,
  decodeMessage,
  decodePublishAck,
  encodeMessage,
  encodePublishBatch,
} from '@felix/wire';
import {
  ConnectionLostError,
  CursorInFutureError,
  CursorTooOldError,
  OutcomeUnknownError,
  ProtocolError,
  TimeoutError,
  UnauthenticatedError,
  brokerError,
} from '../errors.js';
import {
  PUBLISH_COALESCE_BYTES_MAX,
  PUBLISH_COALESCE_RECORDS_MAX,
  UNCLAIMED_EVENT_STREAMS_MAX,
  WRITE_QUEUE_BYTES_MAX,
} from '../limits.js';
import { FrameStream } from './frame-stream.js';
import {
  CLIENT_FEATURES_HI,
  CLIENT_FEATURES_SENT,
  CLIENT_FLAGS,
  type Negotiated,
  has,
  negotiateAnswer,
} from './negotiation.js';

export interface TlsOptions {
  /** PEM CA bundle that signed the broker's certificate. */
  ca?: string;
  /** SHA-256 fingerprint of the broker's certificate (hex). */
  fingerprint?: string;
  /** Accept any certificate: development only. */
  insecure?: boolean;
  serverName?: string;
}

export interface ConnectionOptions {
  tenant: string;
  token: string;
  namespace: string;
  tls: TlsOptions;
  connectTimeoutMs: number;
  /** Declare the broker dead after this long without hearing from it. */
  idleTimeoutMs: number;
}

export type StartPosition = 'latest' | 'earliest' | { offset: number };

export interface OpenSubscription {
  events: FrameStream;
  startOffset: number | undefined;
  liveOffset: number | undefined;
  close(): void;
}

/** Acked publishes to one stream and key waiting for the end of this turn to go out together. */
interface Gather {
  stream: string;
  key: Uint8Array | undefined;
  payloads: Uint8Array[];
  bytes: number;
  /** The ack deadline of every caller, kept by one timer for the batch (the shortest asked). */
  timeoutMs: number;
  /** Each caller and the index of its first record in `payloads`. */
  callers: Array<{
    index: number;
    resolve(r: { offset: number | undefined }): void;
    reject(err: Error): void;
  }>;
}

interface Pending {
  resolve(value: Message | { offset: number | undefined }): void;
  reject(err: Error): void;
  stream: string;
  publish: boolean;
}

export class BrokerConnection {
  private readonly pending = new Map<number, Pending>();
  private nextRequestId = 1;
  private nextSubscriptionId = 1;
  private windowWaiters: Array<() => void> = [];
  /** Publish frames sent or gathering whose answer has not come: bounded by the window. */
  private publishesInFlight = 0;
  private readonly gathers = new Map<string, Gather>();
  private gatherScheduled = false;
  private readonly eventWaiters = new Map<number, (fs: FrameStream) => void>();
  private readonly unclaimed = new Map<number, FrameStream>();
  private lostError: Error | null = null;
  private out: Uint8Array[] = [];
  private outBytes = 0;
  private outDone: Array<{ resolve(): void; reject(err: Error): void }> = [];
  private flushing: Promise<void> | null = null;
  private flushScheduled = false;
  readonly lost: Promise<Error>;
  private markLost!: (err: Error) => void;

  private constructor(
    readonly server: string,
    readonly conn: Connection,
    private readonly opts: ConnectionOptions,
    private readonly pub: TransportStream,
    private readonly pubFrames: FrameStream,
    readonly negotiated: Negotiated,
  ) {
    this.lost = new Promise((resolve) => {
      this.markLost = resolve;
    });
  }

  static async open(server: string, opts: ConnectionOptions): Promise<BrokerConnection> {
    const conn = await dial(server, {
      ...(opts.tls.ca !== undefined ? { ca: opts.tls.ca } : {}),
      ...(opts.tls.fingerprint !== undefined ? { fingerprint: opts.tls.fingerprint } : {}),
      ...(opts.tls.insecure ? { insecureSkipVerify: true } : {}),
      ...(opts.tls.serverName !== undefined ? { serverName: opts.tls.serverName } : {}),
      dialTimeoutMs: opts.connectTimeoutMs,
      idleTimeoutMs: opts.idleTimeoutMs,
      // Keep-alives well inside the idle bound so a quiet but live broker is never dropped.
      keepAliveIntervalMs: Math.max(100, Math.floor(opts.idleTimeoutMs / 3)),
    });
    try {
      const { stream, frames, negotiated } = await withTimeout(
        authStream(conn, opts),
        opts.connectTimeoutMs,
        `auth with ${server}`,
      );
      const c = new BrokerConnection(server, conn, opts, stream, frames, negotiated);
      c.start();
      return c;
    } catch (err) {
      await conn.close().catch(() => undefined);
      throw err;
    }
  }

  private start(): void {
    void this.readAnswers().then(
      () => this.fail(new ConnectionLostError(this.server)),
      (err: unknown) => this.fail(new ConnectionLostError(this.server, { cause: err })),
    );
    void this.acceptEventStreams();
    void this.conn.closed.then((info) =>
      this.fail(
        new ConnectionLostError(this.server, { cause: info.error ?? new Error(info.reason) }),
      ),
    );
  }

  get isLost(): boolean {
    return this.lostError !== null;
  }

  private fail(err: Error): void {
    if (this.lostError) return;
    this.lostError = err;
    for (const [, p] of this.pending) {
      p.reject(p.publish ? new OutcomeUnknownError(p.stream, { cause: err }) : err);
    }
    this.pending.clear();
    this.publishesInFlight = 0;
    for (const g of this.gathers.values()) for (const c of g.callers) c.reject(err);
    this.gathers.clear();
    for (const w of this.windowWaiters.splice(0)) w();
    for (const fs of this.unclaimed.values()) fs.stream.reset(0);
    this.unclaimed.clear();
    this.markLost(err);
    void this.conn.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.fail(new ConnectionLostError(this.server));
    await this.conn.close().catch(() => undefined);
  }

  private async readAnswers(): Promise<void> {
    for (;;) {
      const frame = await this.pubFrames.next();
      if (!frame) return;
      if (frame.flags & FLAG_BINARY_PUBLISH_ACK) {
        const ack = decodePublishAck(frame.flags, frame.payload);
        const p = this.take(ack.requestId);
        if (!p) throw new ProtocolError(`ack for unknown request ${ack.requestId}`);
        if (ack.status === 'ok') p.resolve({ offset: ack.offset });
        else {
          p.reject(
            brokerError({
              brokerCode: ack.code !== undefined ? codeName(ack.code) : 'unknown',
              message: ack.message,
              ...(ack.retry !== undefined ? { retry: ack.retry } : {}),
            }),
          );
        }
        continue;
      }
      if (frame.flags !== 0)
        throw new ProtocolError(`unexpected frame flags 0x${frame.flags.toString(16)}`);
      const msg = decodeMessage(frame.payload);
      if (msg.type === 'error') {
        throw brokerError({
          brokerCode: msg.code ?? 'unknown',
          message: msg.message,
          retry: msg.retry,
          detail: msg.detail,
        });
      }
      const id =
        'request_id' in msg && typeof msg.request_id === 'number' ? msg.request_id : undefined;
      const p = id !== undefined ? this.take(id) : undefined;
      if (!p) throw new ProtocolError(`unexpected ${msg.type} on the publish stream`);
      if (msg.type === 'publish_error') {
        p.reject(
          brokerError({
            brokerCode: msg.code ?? 'unknown',
            message: msg.message,
            retry: msg.retry,
            detail: msg.detail,
          }),
        );
      } else if (msg.type === 'publish_ok') {
        p.resolve({ offset: msg.offset });
      } else {
        p.resolve(msg);
      }
    }
  }

  /**
   * Writes a frame on the publish stream. Frames queued in the same tick go out in one write;
   * past WRITE_QUEUE_BYTES_MAX queued bytes a caller first waits for the write in progress.
   */
  private async write(frame: Uint8Array): Promise<void> {
    while (this.outBytes >= WRITE_QUEUE_BYTES_MAX && this.flushing) await this.flushing;
    if (this.lostError) throw this.lostError;
    return new Promise<void>((resolve, reject) => {
      this.out.push(frame);
      this.outBytes += frame.byteLength;
      this.outDone.push({ resolve, reject });
      if (!this.flushing && !this.flushScheduled) {
        this.flushScheduled = true;
        queueMicrotask(() => {
          this.flushScheduled = false;
          void this.flush();
        });
      }
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing || this.out.length === 0) return;
    const parts = this.out.splice(0);
    const done = this.outDone.splice(0);
    const bytes = this.outBytes;
    this.outBytes = 0;
    let chunk: Uint8Array;
    if (parts.length === 1) chunk = parts[0]!;
    else {
      chunk = new Uint8Array(bytes);
      let at = 0;
      for (const p of parts) {
        chunk.set(p, at);
        at += p.byteLength;
      }
    }
    this.flushing = this.pub.write(chunk).then(
      () => {
        for (const d of done) d.resolve();
      },
      (err: unknown) => {
        for (const d of done) d.reject(err as Error);
      },
    );
    await this.flushing;
    this.flushing = null;
    if (this.out.length > 0) void this.flush();
  }

  private take(id: number): Pending | undefined {
    const p = this.pending.get(id);
    if (p) {
      this.pending.delete(id);
      if (p.publish) this.publishDone();
    }
    return p;
  }

  private publishDone(): void {
    this.publishesInFlight--;
    this.windowWaiters.shift()?.();
  }

  /** Waits for a window slot and takes it. */
  private async reserveWindow(): Promise<void> {
    while (this.publishesInFlight >= this.negotiated.window && !this.lostError) {
      await new Promise<void>((resolve) => this.windowWaiters.push(resolve));
    }
    if (this.lostError) throw this.lostError;
    this.publishesInFlight++;
  }

  /**
   * Publishes one batch; resolves with the first offset (when the broker sent one), or fails
   * with a TimeoutError of unknown outcome when no ack (or, unacked, no write) came within
   * `timeoutMs`. Gathered callers share their batch's timer, started when it is sent.
   */
  publish(
    stream: string,
    payloads: Uint8Array[],
    opts: { key?: Uint8Array; ack: boolean; gather?: boolean; timeoutMs: number },
  ): Promise<{ offset: number | undefined }> {
    if (this.lostError) return Promise.reject(this.lostError);
    if (opts.ack && opts.gather === true && has(this.negotiated.flags, FLAG_BINARY_PUBLISH_ACKED)) {
      // The common case joins this turn's batch with no promise but the caller's own.
      let bytes = 0;
      for (const p of payloads) bytes += p.byteLength;
      const key = opts.key;
      const id =
        key === undefined ? stream : `${stream}\u0000${Buffer.from(key).toString('latin1')}`;
      const g = this.gathers.get(id);
      if (g !== undefined) {
        if (fits(g, payloads.length, bytes)) return this.join(g, payloads, bytes, opts.timeoutMs);
        this.sendGather(id, g);
      }
      if (this.publishesInFlight < this.negotiated.window) {
        // A slot is free: open the batch in this call, so the rest of the turn joins it.
        this.publishesInFlight++;
        const opened = this.openGather(id, stream, key, opts.timeoutMs);
        return this.join(opened, payloads, bytes, opts.timeoutMs);
      }
      // Waiting for a window slot has a timer of its own.
      return ackWithin(
        this.gatherAfterWindow(id, stream, payloads, bytes, key, opts.timeoutMs),
        opts.timeoutMs,
        stream,
      );
    }
    return ackWithin(this.publishAlone(stream, payloads, opts), opts.timeoutMs, stream);
  }

  private async publishAlone(
    stream: string,
    payloads: Uint8Array[],
    opts: { key?: Uint8Array; ack: boolean },
  ): Promise<{ offset: number | undefined }> {
    const base = {
      tenantId: this.opts.tenant,
      namespace: this.opts.namespace,
      stream,
      payloads,
      ...(opts.key !== undefined ? { key: opts.key } : {}),
    };
    if (!opts.ack) {
      await this.write(encodePublishBatch(base));
      return { offset: undefined };
    }
    const binary = has(this.negotiated.flags, FLAG_BINARY_PUBLISH_ACKED);
    await this.reserveWindow();
    const requestId = this.nextRequestId++;
    const answer = new Promise<{ offset: number | undefined }>((resolve, reject) => {
      this.pending.set(requestId, {
        resolve: resolve as Pending['resolve'],
        reject,
        stream,
        publish: true,
      });
    });
    const bytes = binary
      ? encodePublishBatch({ ...base, requestId, ackMode: 'per_batch' })
      : encodeMessage({
          type: 'publish_batch',
          tenant_id: this.opts.tenant,
          namespace: this.opts.namespace,
          stream,
          payloads,
          ...(opts.key !== undefined ? { key: opts.key } : {}),
          request_id: requestId,
          ack: 'per_batch',
        });
    this.pub
      .write(bytes)
      .catch((err: unknown) => this.fail(new ConnectionLostError(this.server, { cause: err })));
    return answer;
  }

  /**
   * Joins the batch this turn gathers for `stream` and `key` once a window slot is free, opening
   * it when no other caller did meanwhile.
   */
  private async gatherAfterWindow(
    id: string,
    stream: string,
    payloads: Uint8Array[],
    bytes: number,
    key: Uint8Array | undefined,
    timeoutMs: number,
  ): Promise<{ offset: number | undefined }> {
    await this.reserveWindow();
    let g = this.gathers.get(id);
    if (g && !fits(g, payloads.length, bytes)) this.sendGather(id, g);
    else if (g) this.publishDone(); // another caller opened one while we waited: give ours back
    if (!g || !this.gathers.has(id)) g = this.openGather(id, stream, key, timeoutMs);
    return this.join(g, payloads, bytes, timeoutMs);
  }

  /**
   * Opens a batch on the window slot the caller took; it is sent once the turn's callbacks and
   * promise reactions have run, so publishes made together share one frame, one append and one
   * ack, and a lone publish waits for nothing.
   */
  private openGather(
    id: string,
    stream: string,
    key: Uint8Array | undefined,
    timeoutMs: number,
  ): Gather {
    const g: Gather = { stream, key, payloads: [], bytes: 0, timeoutMs, callers: [] };
    this.gathers.set(id, g);
    if (!this.gatherScheduled) {
      this.gatherScheduled = true;
      // Once this turn's callbacks and promise reactions have run, not in a later phase of the
      // event loop (setImmediate), which can come tens of microseconds later.
      process.nextTick(this.sendGathers);
    }
    return g;
  }

  private join(
    g: Gather,
    payloads: Uint8Array[],
    bytes: number,
    timeoutMs: number,
  ): Promise<{ offset: number | undefined }> {
    const index = g.payloads.length;
    for (const p of payloads) g.payloads.push(p);
    g.bytes += bytes;
    if (timeoutMs < g.timeoutMs) g.timeoutMs = timeoutMs;
    return new Promise((resolve, reject) => g.callers.push({ index, resolve, reject }));
  }

  private readonly sendGathers = (): void => {
    this.gatherScheduled = false;
    for (const [id, g] of this.gathers) this.sendGather(id, g);
  };

  /** Sends a gathered batch on the window slot its opener took, and starts its ack timer. */
  private sendGather(id: string, g: Gather): void {
    this.gathers.delete(id);
    if (this.lostError) {
      for (const c of g.callers) c.reject(this.lostError);
      return;
    }
    const requestId = this.nextRequestId++;
    const callers = g.callers;
    // An ack that never comes is an unknown outcome, not a hang: one timer for the batch. The
    // request stays pending (its window slot taken) until the ack or the connection's loss.
    const timer = setTimeout(() => {
      const err = new TimeoutError(
        `the ack of a publish to ${g.stream}`,
        g.timeoutMs,
        'unknown_outcome',
      );
      for (const c of callers) c.reject(err);
    }, g.timeoutMs);
    this.pending.set(requestId, {
      resolve: (r) => {
        clearTimeout(timer);
        const first = (r as { offset: number | undefined }).offset;
        for (const c of callers)
          c.resolve({ offset: first === undefined ? undefined : first + c.index });
      },
      reject: (err) => {
        clearTimeout(timer);
        for (const c of callers) c.reject(err);
      },
      stream: g.stream,
      publish: true,
    });
    const bytes = encodePublishBatch({
      tenantId: this.opts.tenant,
      namespace: this.opts.namespace,
      stream: g.stream,
      payloads: g.payloads,
      ...(g.key !== undefined ? { key: g.key } : {}),
      requestId,
      ackMode: 'per_batch',
    });
    this.pub
      .write(bytes)
      .catch((err: unknown) => this.fail(new ConnectionLostError(this.server, { cause: err })));
  }

  /** The shard count of a stream (0: unknown stream) and its routing. */
  async streamShards(stream: string): Promise<{ shards: number; routing: 'modulo' | 'jump_hash' }> {
    if (this.lostError) throw this.lostError;
    const requestId = this.nextRequestId++;
    const answer = new Promise<Message>((resolve, reject) => {
      this.pending.set(requestId, {
        resolve: resolve as Pending['resolve'],
        reject,
        stream,
        publish: false,
      });
    });
    await this.pub.write(
      encodeMessage({
        type: 'stream_shards',
        tenant_id: this.opts.tenant,
        namespace: this.opts.namespace,
        stream,
        request_id: requestId,
      }),
    );
    const msg = await answer;
    if (msg.type !== 'stream_shards_view')
      throw new ProtocolError(`expected stream_shards_view, got ${msg.type}`);
    return { shards: msg.shards, routing: msg.routing ?? 'modulo' };
  }

  private async acceptEventStreams(): Promise<void> {
    try {
      for await (const s of this.conn.incoming()) {
        if (s.kind !== 'uni') {
          s.reset(0);
          continue;
        }
        void this.claimEventStream(s);
      }
    } catch {
      // the connection ended; `fail` runs from `closed`
    }
  }

  private async claimEventStream(s: TransportStream): Promise<void> {
    const fs = new FrameStream(s);
    try {
      const first = await fs.next();
      if (first?.flags !== 0) throw new ProtocolError('event stream without a hello');
      const hello = decodeMessage(first.payload);
      if (hello.type !== 'event_stream_hello')
        throw new ProtocolError(`event stream opened with ${hello.type}`);
      const waiter = this.eventWaiters.get(hello.subscription_id);
      if (waiter) {
        this.eventWaiters.delete(hello.subscription_id);
        waiter(fs);
      } else if (this.unclaimed.size < UNCLAIMED_EVENT_STREAMS_MAX) {
        this.unclaimed.set(hello.subscription_id, fs);
      } else {
        s.reset(0);
      }
    } catch {
      s.reset(0);
    }
  }

  /** Tenant and namespace this connection authenticated for (requests name them). */
  get scope(): { tenant: string; namespace: string } {
    return { tenant: this.opts.tenant, namespace: this.opts.namespace };
  }

  /**
   * Opens a new stream and authenticates it (for requests that need a stream of their own).
   * `withoutFeatures` are left out of what the stream offers (a group poll stream offers
   * FEATURE_RECORD_TIMESTAMPS only when the group asked for record times).
   */
  async openStream(withoutFeatures = 0): Promise<{ stream: TransportStream; frames: FrameStream }> {
    if (this.lostError) throw this.lostError;
    const { stream, frames } = await authStream(
      this.conn,
      this.opts,
      CLIENT_FLAGS,
      (CLIENT_FEATURES_SENT & ~withoutFeatures) >>> 0,
    );
    return { stream, frames };
  }

  /**
   * Reserves an id for a broker-opened event stream (a subscription or a watch): `events`
   * resolves with the stream whose `event_stream_hello` names it; `cancel` drops the reservation.
   */
  reserveEventStream(): { id: number; events: Promise<FrameStream>; cancel(): void } {
    const id = this.nextSubscriptionId++;
    const events = new Promise<FrameStream>((resolve, reject) => {
      const early = this.unclaimed.get(id);
      if (early) {
        this.unclaimed.delete(id);
        resolve(early);
      } else this.eventWaiters.set(id, resolve);
      void this.lost.then(reject);
    });
    events.catch(() => undefined);
    return { id, events, cancel: () => this.eventWaiters.delete(id) };
  }

  /** Opens a subscription on one shard. Cursor errors throw CursorTooOld/InFutureError. */
  async subscribe(
    stream: string,
    shard: number,
    start: StartPosition,
    queueCapacity: number,
    /** Offer the timestamped event layout (0x4000) on this subscription's stream. */
    timestamps = false,
  ): Promise<OpenSubscription> {
    if (this.lostError) throw this.lostError;
    const id = this.nextSubscriptionId++;
    const events = new Promise<FrameStream>((resolve) => {
      const early = this.unclaimed.get(id);
      if (early) {
        this.unclaimed.delete(id);
        resolve(early);
      } else this.eventWaiters.set(id, resolve);
    });
    let control: Awaited<ReturnType<typeof authStream>> | null = null;
    try {
      control = await authStream(
        this.conn,
        this.opts,
        timestamps ? CLIENT_FLAGS | FLAG_EVENT_BATCH_TIMESTAMPS : CLIENT_FLAGS,
      );
      await control.stream.write(
        encodeMessage({
          type: 'subscribe',
          tenant_id: this.opts.tenant,
          namespace: this.opts.namespace,
          stream,
          subscription_id: id,
          start,
          shard,
          queue_capacity: queueCapacity,
        }),
      );
      const frame = await control.frames.next();
      if (!frame) throw new ConnectionLostError(this.server);
      const msg = decodeMessage(frame.payload);
      if (msg.type === 'subscribe_cursor_error') {
        throw msg.reason === 'too_old'
          ? new CursorTooOldError(msg.requested, msg.available)
          : new CursorInFutureError(msg.requested, msg.available);
      }
      if (msg.type === 'error') {
        throw brokerError({
          brokerCode: msg.code ?? 'unknown',
          message: msg.message,
          retry: msg.retry,
          detail: msg.detail,
        });
      }
      if (msg.type !== 'subscribed')
        throw new ProtocolError(`expected subscribed, got ${msg.type}`);
      const fs = await Promise.race([events, this.lost.then((err) => Promise.reject(err))]);
      const ctl = control;
      return {
        events: fs,
        startOffset: msg.start_offset,
        liveOffset: msg.live_offset,
        close: () => {
          ctl.stream.end().catch(() => undefined);
          fs.stream.reset(0);
        },
      };
    } catch (err) {
      this.eventWaiters.delete(id);
      control?.stream.reset(0);
      throw err;
    }
  }
}

const CODE_NAMES: Record<number, string> = {
  1: 'unauthenticated',
  2: 'forbidden',
  3: 'not_found',
  4: 'invalid_request',
  5: 'shard_unavailable',
  6: 'not_leader',
  7: 'quorum_timeout',
  8: 'leadership_lost',
  9: 'unacknowledged',
  10: 'overloaded',
  11: 'limit_exceeded',
  12: 'draining',
  13: 'internal',
  14: 'storage',
  15: 'stale_claim',
};

function fits(g: Gather, records: number, bytes: number): boolean {
  return (
    g.payloads.length + records <= PUBLISH_COALESCE_RECORDS_MAX &&
    g.bytes + bytes <= PUBLISH_COALESCE_BYTES_MAX
  );
}

function codeName(code: number): string {
  return CODE_NAMES[code] ?? `code_${code}`;
}

async function authStream(
  conn: Connection,
  opts: ConnectionOptions,
  /** The layouts offered on this stream (a subscription may add the timestamped events). */
  flags: number = CLIENT_FLAGS,
  features: number = CLIENT_FEATURES_SENT,
): Promise<{ stream: TransportStream; frames: FrameStream; negotiated: Negotiated }> {
  const stream = await conn.openBidi();
  const frames = new FrameStream(stream);
  await stream.write(
    encodeMessage({
      type: 'auth',
      tenant_id: opts.tenant,
      token: opts.token,
      client_flags: flags,
      client_features: features,
      client_features_hi: CLIENT_FEATURES_HI,
    }),
  );
  const frame = await frames.next();
  if (!frame) throw new ProtocolError('the broker closed the stream during auth');
  const msg = decodeMessage(frame.payload);
  if (msg.type === 'auth_ok' || msg.type === 'ok') {
    return { stream, frames, negotiated: negotiateAnswer(msg, flags, features) };
  }
  if (msg.type === 'error') {
    throw new UnauthenticatedError({
      brokerCode: msg.code ?? 'unauthenticated',
      message: msg.message,
      retry: msg.retry,
    });
  }
  throw new ProtocolError(`expected auth_ok, got ${msg.type}`);
}

/** `p`, or a TimeoutError of unknown outcome once `ms` pass: a publish's ack that never came. */
function ackWithin<T>(p: Promise<T>, ms: number, stream: string): Promise<T> {
  return withTimeout(p, ms, `the ack of a publish to ${stream}`, 'unknown_outcome');
}

async function withTimeout<T>(
  p: Promise<T>,
  ms: number,
  what: string,
  retry: 'retry' | 'unknown_outcome' = 'retry',
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TimeoutError(what, ms, retry)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
