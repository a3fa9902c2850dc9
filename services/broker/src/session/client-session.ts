/**
 * One client connection: the auth timeout, and one reader per stream the client opens. A stream
 * authenticates with `auth` before anything else (frames above the pre-auth bound are refused on
 * their header); after that every frame is one request, looked up once in the HandlerTable by
 * its type (or its binary layout), admitted (admission.ts) and handed to its handler with the
 * stream's RequestContext. A refusal is answered here as an `error`.
 * Bad input gets a typed answer and, when the stream can no longer be trusted, ends that stream;
 * it never reaches a log and never takes the broker down.
 *
 * Reading (chunk-reading.ts): through the iterator until `auth`, then chunk by chunk in the turn
 * each arrives, the stream paused while a chunk waits.
 *
 * Memory (byte-budget.ts): a stream that has not authenticated within `auth_timeout_ms` is
 * ended even when another stream of its connection has; the bytes held in partial frames count
 * against the connection's budget, and the stream whose read takes the connection past it is
 * refused (`limit_exceeded`) and ended: that stream is the one growing, so refusing it is
 * decided with what is in hand (no search for the greediest), and every stream of a connection
 * belongs to one client anyway. Complete requests pin their bytes until answered; past the
 * connection's answer budget its streams are not read until answers drain. A read that would
 * take the broker past its in-flight budget ends its stream with `overloaded` (retry after a
 * delay): shedding the new bytes costs nothing already served, where closing the greediest
 * connection would throw away work that is nearly done and punish one client for everyone's load.
 */
import type { Connection, TransportStream } from '@felix/transport';
import {
  CacheFrameReader,
  FEATURE_HI_CACHE_BINARY,
  FEATURE_HI_GROUP_BINARY,
  FEATURE_UNSUPPORTED,
  FLAG_BINARY_CACHE,
  FLAG_BINARY_GROUP,
  GroupFrameReader,
  type Message,
  encodeMessage,
} from '@felix/wire';
import { TOKEN_EXPIRY_NOTICE_MS_MAX } from '../limits.js';
import { type OpenedScope, openLongLived } from './opened-scopes.js';
import { ConnectionGrant, type Principal } from './grant.js';
import { admit, forwardable } from './admission.js';
import { AnswerPipe } from './answer-pipe.js';
import { authenticate } from './auth.js';
import { ConnectionBytes, type InflightBytes, brokerInflight } from './byte-budget.js';
import { type ChunkServer, readChunked, readIterated } from './chunk-reading.js';
import { FrameReader, type InboundFrame, layoutOf, readMessage } from './codec.js';
import type { SessionContext } from './context.js';
import type { FastReader, Outcome, RequestContext } from './handler.js';
import { type Negotiated, has } from './negotiation.js';
import { frameRefusal, pushChunk } from './frame-refusal.js';
import { PartialDeadline } from './partial-deadline.js';
import { type Finishable, StreamFinish } from './stream-finish.js';
import { Refusal, errorFrame } from './refusal.js';
import { loneSurrogateRefusal } from './well-formed.js';

/** Connection close codes (reference §1.1). */
export const CLOSE_SHUTDOWN = 0;
export const CLOSE_AUTH_TIMEOUT = 1;

/** What the session keeps for one stream it reads. */
interface StreamState extends Finishable {
  readonly reader: FrameReader;
  /** Set once the stream authenticates. */
  rc: StreamRequests | null;
  /** Bytes of its partial frame counted in the connection's ledger. */
  held: number;
  /** Ends the stream if it has not authenticated in time; cleared once its `auth` arrives. */
  authTimer: NodeJS.Timeout | null;
}

type ReauthMessage = Extract<Message, { type: 'reauth' }>;

/** The RequestContext of one authenticated stream. */
class StreamRequests implements RequestContext {
  readonly releases: Array<() => void> = [];
  ended = false;
  ending = false;
  /** It opened a subscription or a watch: it ends when the connection's token expires. */
  longLived = false;
  /** The scopes that opened them, checked again when the connection's token changes (a
   *  narrower token ends what it no longer allows); see openLongLived for its bound. */
  readonly opened: OpenedScope[] = [];

  // Plain fields, not getters over `state`: handlers read them on every request.
  readonly stream: TransportStream;
  readonly answers: AnswerPipe;
  readonly quiet: boolean;
  /** Reads the stream's binary cache requests (made on the first one). */
  private cacheReader: CacheFrameReader | null = null;
  /** Reads the stream's binary group requests (made on the first one). */
  private groupReader: GroupFrameReader | null = null;

  constructor(
    readonly auth: Negotiated,
    readonly grant: ConnectionGrant,
    readonly state: StreamState,
    readonly conn: Connection,
    private readonly session: ClientSession,
  ) {
    this.stream = state.stream;
    this.answers = state.answers;
    this.quiet = state.quiet;
  }

  get principal(): string {
    return this.grant.subject;
  }

  onStreamEnd(release: () => void): void {
    this.releases.push(release);
  }

  reauthenticate(msg: ReauthMessage): Promise<Outcome> {
    return this.session.reauthenticate(this, msg);
  }

  /**
   * A binary cache request (flag word 0x8001) as the message its JSON form decodes to, or the
   * refusal that ends the stream: the client did not negotiate the exchange, or the bytes are bad.
   */
  readCache(frame: InboundFrame): Message | Refusal {
    if ((this.auth.featuresHi & FEATURE_HI_CACHE_BINARY) === 0) {
      return invalid('binary cache frames were not negotiated', 'cache_binary_not_negotiated');
    }
    try {
      this.cacheReader ??= new CacheFrameReader();
      return this.cacheReader.request(frame.payload);
    } catch (err) {
      return invalid((err as Error).message, 'malformed_frame');
    }
  }

  /**
   * A binary group request (flag word 0x8002) as the message its JSON form decodes to, or the
   * refusal that ends the stream: the client did not negotiate the exchange, or the bytes are bad.
   */
  readGroup(frame: InboundFrame): Message | Refusal {
    if ((this.auth.featuresHi & FEATURE_HI_GROUP_BINARY) === 0) {
      return invalid('binary group frames were not negotiated', 'group_binary_not_negotiated');
    }
    try {
      this.groupReader ??= new GroupFrameReader();
      return this.groupReader.request(frame.payload);
    } catch (err) {
      return invalid((err as Error).message, 'malformed_frame');
    }
  }
}

export class ClientSession {
  private authenticated = false;
  /** The connection's principal, set by its first stream's `auth`. */
  private grant: ConnectionGrant | null = null;
  private authTimer: NodeJS.Timeout | null = null;
  private readonly readers = new Set<Promise<void>>();
  private readonly pipes = new Set<AnswerPipe>();
  /** Streams being served: what they opened is released when the connection ends. */
  private readonly open = new Set<StreamRequests>();
  private readonly inflight: InflightBytes;
  /** Bytes this connection's streams pin: partial frames and unanswered requests. */
  readonly bytes: ConnectionBytes;
  /** The broker's stop: nothing read is handed on, request streams end (stream-finish.ts). */
  private readonly ending = new StreamFinish();

  constructor(
    readonly conn: Connection,
    private readonly ctx: SessionContext,
  ) {
    const b = ctx.config.broker;
    this.inflight = brokerInflight(ctx);
    this.bytes = new ConnectionBytes(
      b.connection_partial_frame_bytes,
      b.connection_answer_bytes,
      this.inflight,
    );
  }

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
      this.grant?.stop();
      for (const rc of this.open) release(rc);
      this.open.clear();
    }
  }

  /** Waits (bounded by the caller) for every publish answer owed to be written. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pipes].map((p) => p.drain()));
  }

  /**
   * The broker stops: from now on nothing read is applied, and each request stream is ended once
   * what it read is answered, so the client knows the rest was not applied (stream-finish.ts).
   * Resolves once the client closed those streams, or after `peerCloseMs`.
   */
  quiesce(peerCloseMs: number): Promise<void> {
    return this.ending.begin(peerCloseMs);
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
    const answers = new AnswerPipe(stream, Math.max(1, cfg.publish_window), this.bytes);
    this.pipes.add(answers);
    const quiet = stream.kind === 'uni'; // a publish-only stream: the broker never answers on it
    const fast = quiet ? undefined : this.ctx.handlers.fastReader();
    const st: StreamState = newStreamState(stream, reader, answers, quiet);
    const deadline = new PartialDeadline(cfg.partial_frame_deadline_ms, () => this.expire(st));
    const serve: ChunkServer = (chunk) => {
      const served = this.serveChunk(st, chunk, deadline, fast);
      if (served instanceof Promise) st.busy = served; // what a stop's finish waits for
      return served;
    };
    st.authTimer = setTimeout(() => this.authExpired(st), cfg.auth_timeout_ms).unref();
    this.ending.track(st);
    try {
      const iterated = await readIterated(stream, () => st.rc !== null, serve);
      if (iterated === 'done_with') return;
      if (iterated === 'handed_over' && !(await readChunked(stream, serve))) return;
      await answers.drain();
      if (!quiet) await stream.end();
    } finally {
      this.ending.untrack(st);
      deadline.stop();
      if (st.authTimer !== null) clearTimeout(st.authTimer);
      this.letGo(st);
      this.pipes.delete(answers);
      if (st.rc !== null) {
        this.open.delete(st.rc);
        release(st.rc);
      }
    }
  }

  /**
   * Serves one chunk: true to read on, false when the stream is done with (refused, shed or
   * expired). A promise only when the chunk had to wait (an `auth`, a request whose outcome is
   * a promise, a refusal, the answer budget): a chunk of requests answered in the turn they are
   * read costs no promise and no turn.
   */
  private serveChunk(
    st: StreamState,
    chunk: Uint8Array,
    deadline: PartialDeadline,
    fast: FastReader | undefined,
  ): boolean | Promise<boolean> {
    if (st.expired) return false;
    // A stream still to authenticate reads on: its `auth` is refused `draining`, and answered.
    if (this.ending.active && st.rc !== null) return this.stopReading(st);
    const shed = this.inflight.wouldExceed(chunk.length) ? this.overloaded() : null;
    if (shed !== null) return this.shed(st, shed).then(stop);
    deadline.begin();
    if (st.rc === null) {
      return this.readFirst(st, chunk).then((frames) =>
        this.serveFrames(st, frames, deadline, fast, false),
      );
    }
    return this.serveFrames(st, pushChunk(st.reader, chunk), deadline, fast, true);
  }

  /** Dispatches a chunk's frames in order, in this turn until one has to wait. */
  private serveFrames(
    st: StreamState,
    frames: ReadOutcome,
    deadline: PartialDeadline,
    fast: FastReader | undefined,
    wasAuthed: boolean,
  ): boolean | Promise<boolean> {
    if (!Array.isArray(frames)) {
      if (frames === null) return false;
      // After the answers owed: an end must follow every answer of what was applied.
      return st.answers
        .drain()
        .then(() => this.refuse(st.stream, st.rc?.auth ?? null, frames, st.quiet))
        .then(stop);
    }
    const over = this.hold(st);
    if (over !== null) return this.shed(st, over).then(stop);
    const answers = st.answers;
    for (let i = 0; i < frames.length; i++) {
      if (this.ending.active || st.expired) return this.stopReading(st);
      const frame = frames[i]!;
      answers.chargeNext(frame.length);
      const outcome = this.dispatch(st.rc!, frame, fast);
      if (outcome !== null)
        return this.serveFramesAfter(st, frames, i, outcome, deadline, fast, wasAuthed);
      answers.chargeNext(0);
    }
    return this.chunkServed(st, frames.length, deadline, wasAuthed);
  }

  /** The rest of `serveFrames` once frame `at` has to wait: its outcome is a promise or a
   *  refusal; the frames after it are dispatched in order after it. */
  private async serveFramesAfter(
    st: StreamState,
    frames: InboundFrame[],
    at: number,
    first: Outcome | Promise<Outcome>,
    deadline: PartialDeadline,
    fast: FastReader | undefined,
    wasAuthed: boolean,
  ): Promise<boolean> {
    const answers = st.answers;
    let outcome = first;
    for (let i = at; ; ) {
      const refusal = outcome instanceof Promise ? await outcome : outcome;
      answers.chargeNext(0);
      if (refusal) {
        await answers.drain();
        await this.refuse(st.stream, st.rc!.auth, refusal, st.quiet);
        if (refusal.fatalToStream) return false;
      }
      if (++i >= frames.length) break;
      if (this.ending.active || st.expired) return this.stopReading(st);
      answers.chargeNext(frames[i]!.length);
      outcome = this.dispatch(st.rc!, frames[i]!, fast);
    }
    return await this.chunkServed(st, frames.length, deadline, wasAuthed);
  }

  /** The broker is stopping (the stream ends once its answers are written) or the stream is
   *  being ended: its reading ends here, and what it still gets is dropped, never applied. */
  private stopReading(st: StreamState): false {
    if (this.ending.active) void this.ending.finish(st);
    return false;
  }

  /** A chunk's frames are served: notes its partial frame and waits while answers are over
   *  the connection's budget. */
  private chunkServed(
    st: StreamState,
    framesRead: number,
    deadline: PartialDeadline,
    wasAuthed: boolean,
  ): boolean | Promise<boolean> {
    // The held frame is a new one when this chunk completed a frame (an `auth` included).
    deadline.note(st.reader.partial, framesRead > 0 || (!wasAuthed && st.rc !== null));
    if (this.bytes.answersOver) return this.answerRoom(deadline).then(go);
    return true;
  }

  /**
   * Reads a chunk that arrives before auth: its first frame is the `auth`, answered here, and
   * the rest of the chunk is read only once the bound is raised, so a large request in the
   * same read as `auth` is not held to the pre-auth bound. The frames to dispatch, the refusal
   * of a bad frame, or null when `auth` was refused (already answered).
   */
  private async readFirst(st: StreamState, chunk: Uint8Array): Promise<ReadOutcome> {
    let first: InboundFrame | null;
    try {
      first = st.reader.first(chunk);
    } catch (err) {
      return frameRefusal(err);
    }
    if (first === null) return [];
    if (st.authTimer !== null) clearTimeout(st.authTimer); // its `auth` came in time
    st.authTimer = null;
    const authed = await this.authenticate(st.stream, first, st.quiet);
    if (!authed) return null;
    st.reader.setMax(this.ctx.config.broker.max_frame_bytes);
    st.rc = new StreamRequests(authed.negotiated, authed.grant, st, this.conn, this);
    this.open.add(st.rc);
    try {
      return st.reader.rest();
    } catch (err) {
      return frameRefusal(err);
    }
  }

  /** A frame stayed partial past its deadline: let go of it, refuse, end the stream (its read
   *  loop returns at the peer's next chunk or end). */
  private expire(st: StreamState): void {
    st.expired = true;
    this.letGo(st);
    if (st.rc !== null) release(st.rc); // what the stream opened ends with it, not at its next read
    const refusal = invalid(
      `a frame stayed incomplete for over ${this.ctx.config.broker.partial_frame_deadline_ms} ms`,
      'partial_frame_deadline',
    );
    void st.answers
      .drain()
      .then(() => this.refuse(st.stream, st.rc?.auth ?? null, refusal, st.quiet));
  }

  /** The stream did not authenticate in time: it is ended, whatever its connection's others did. */
  private authExpired(st: StreamState): void {
    st.authTimer = null;
    if (st.rc !== null || st.expired) return;
    st.expired = true;
    this.letGo(st);
    const ms = this.ctx.config.broker.auth_timeout_ms;
    const refusal = new Refusal(
      'unauthenticated',
      `a stream must authenticate within ${ms} ms`,
      'stream_auth_timeout',
      { fatalToStream: true },
    );
    void this.refuse(st.stream, null, refusal, st.quiet);
  }

  /**
   * Counts what the stream's reader holds now in the connection's ledger; the refusal when that
   * takes the connection past its partial-frame budget.
   */
  private hold(st: StreamState): Refusal | null {
    const held = st.reader.heldBytes;
    if (held === st.held) return null;
    this.bytes.addPartial(held - st.held);
    st.held = held;
    if (!this.bytes.partialOver) return null;
    const budget = this.bytes.partialBudget;
    return new Refusal(
      'limit_exceeded',
      `a connection may hold at most ${budget} bytes in partially received frames; ` +
        `this stream's frame took it to ${this.bytes.partial}`,
      'connection_partial_frame_bytes',
      { fatalToStream: true },
    );
  }

  /** Lets go of the stream's partial frame and its count. */
  private letGo(st: StreamState): void {
    st.reader.drop();
    if (st.held !== 0) this.bytes.addPartial(-st.held);
    st.held = 0;
  }

  private overloaded(): Refusal {
    this.ctx.metrics.requestsOverloaded.inc();
    return new Refusal(
      'overloaded',
      `the broker holds ${this.inflight.bytes} request bytes in flight, ` +
        `its budget is ${this.inflight.budget}`,
      'overloaded',
      { fatalToStream: true },
    );
  }

  /** Ends a stream over a budget: what it holds is let go at once, then the refusal is written
   *  after the answers it is owed. */
  private async shed(st: StreamState, refusal: Refusal): Promise<void> {
    st.expired = true;
    this.letGo(st);
    await st.answers.drain();
    await this.refuse(st.stream, st.rc?.auth ?? null, refusal, st.quiet);
  }

  /** The connection is over its answer budget: reads wait (backpressure) until answers drain. */
  private async answerRoom(deadline: PartialDeadline): Promise<void> {
    deadline.begin();
    await this.bytes.answerRoom();
    deadline.resumed();
  }

  /**
   * The stream's first frame: an `auth`, answered here; null when the stream is refused. A
   * connection carries one principal: a later stream's token must name the same tenant and
   * subject, and (being newer) applies to every stream from then on, as a `reauth` does.
   */
  private async authenticate(
    stream: TransportStream,
    frame: InboundFrame,
    quiet: boolean,
  ): Promise<{ negotiated: Negotiated; grant: ConnectionGrant } | null> {
    const outcome = await authenticate(this.ctx, frame);
    const adopted = outcome.ok ? this.adopt(outcome.principal) : null;
    if (!outcome.ok || adopted instanceof Refusal) {
      const refusal = outcome.ok ? (adopted as Refusal) : outcome.refusal;
      this.ctx.metrics.authentications.inc({ kind: 'auth', outcome: refusal.reason });
      const offered = outcome.ok ? outcome.negotiated : (outcome.offered ?? null);
      await this.refuse(stream, offered, refusal, quiet);
      return null;
    }
    this.ctx.metrics.authentications.inc({ kind: 'auth', outcome: 'ok' });
    this.authenticated = true;
    if (this.authTimer) {
      clearTimeout(this.authTimer);
      this.authTimer = null;
    }
    if (!quiet) await stream.write(encodeMessage(outcome.answer));
    return { negotiated: outcome.negotiated, grant: adopted as ConnectionGrant };
  }

  /** The connection's grant for a verified principal, or the refusal of a second principal. */
  private adopt(p: Principal): ConnectionGrant | Refusal {
    if (this.grant === null) {
      this.grant = new ConnectionGrant(
        p,
        () => this.onTokenExpired(),
        (action) => this.ctx.metrics.requestsForbidden.inc({ action }),
      );
      return this.grant;
    }
    if (!this.grant.samePrincipal(p)) {
      return new Refusal(
        'unauthenticated',
        `this connection is authenticated as ${this.grant.subject} of tenant ` +
          `${this.grant.tenant}; every stream of a connection carries that principal`,
        'second_principal',
        { fatalToStream: true },
      );
    }
    this.grant.replace(p);
    this.recheckLongLived();
    return this.grant;
  }

  /**
   * `reauth`: a fresh token of the same tenant and subject, verified like `auth`, replaces the
   * connection's token for every stream; answered `reauth_ok` with its expiry, in order. A
   * refused reauth keeps the old token and the stream (the refusal is not fatal).
   */
  async reauthenticate(rc: StreamRequests, msg: ReauthMessage): Promise<Outcome> {
    const grant = rc.grant;
    let p: Principal;
    try {
      p = await this.ctx.authenticator.verify(msg.token, grant.tenant);
    } catch (err) {
      const r = err as Refusal;
      this.ctx.metrics.authentications.inc({ kind: 'reauth', outcome: r.reason });
      return new Refusal(r.wireCode, r.message, r.reason, { retry: r.wireRetry });
    }
    if (!grant.samePrincipal(p)) {
      this.ctx.metrics.authentications.inc({ kind: 'reauth', outcome: 'second_principal' });
      return new Refusal(
        'unauthenticated',
        `a reauth must name ${grant.subject} of tenant ${grant.tenant}`,
        'second_principal',
      );
    }
    grant.replace(p);
    this.recheckLongLived();
    this.ctx.metrics.authentications.inc({ kind: 'reauth', outcome: 'ok' });
    await rc.answers.drain();
    const expMs = grant.expMs;
    await rc.stream.write(
      encodeMessage({
        type: 'reauth_ok',
        request_id: msg.request_id,
        ...(expMs !== undefined ? { expires_at_ms: expMs } : {}),
      }),
    );
    return null;
  }

  /**
   * The connection's token expired: requests are refused `unauthenticated` from now on (the
   * grant says so), and each stream that opened a subscription or a watch is ended with that
   * refusal, which ends what it opened.
   */
  private onTokenExpired(): void {
    this.ctx.metrics.tokensExpired.inc();
    for (const rc of this.open) {
      if (!rc.longLived || rc.ended) continue;
      this.endLongLived(
        rc,
        new Refusal(
          'unauthenticated',
          'the connection token expired; its subscriptions and watches end',
          'token_expired',
          { fatalToStream: true },
        ),
      );
    }
  }

  /**
   * The connection's token changed (`reauth`, or a later stream's `auth`): a stream whose
   * subscription or watch the new token no longer allows is ended `forbidden`, as expiry ends
   * them all. Permissions reach a connection at its next token (docs/security.md).
   */
  private recheckLongLived(): void {
    for (const rc of this.open) {
      if (!rc.longLived || rc.ended) continue;
      for (const { access, msg } of rc.opened) {
        const refused = rc.grant.check(access, msg);
        if (refused === null) continue;
        this.endLongLived(
          rc,
          new Refusal(
            'forbidden',
            `${refused.message} by the connection's new token; the subscriptions and watches of this stream end`,
            'forbidden',
            {
              fatalToStream: true,
              ...(refused.detail !== undefined ? { detail: refused.detail } : {}),
            },
          ),
        );
        break;
      }
    }
  }

  /** Ends a stream that opened subscriptions or watches, with `refusal` as its reason. */
  private endLongLived(rc: StreamRequests, refusal: Refusal): void {
    const st = rc.state;
    if (st.expired) return; // already being ended (an expiry, or an earlier narrower token)
    st.expired = true;
    rc.ending = true;
    this.letGo(st);
    // The reason goes out on the control stream before the subscriptions' own streams are
    // reset, so the client reads why they end; a peer that does not read gets them reset anyway.
    const bound = setTimeout(() => release(rc), TOKEN_EXPIRY_NOTICE_MS_MAX).unref();
    // After the chunk being served (it stops at its next frame) and the answers owed.
    void Promise.resolve(st.busy)
      .catch(() => undefined) // its failure is its reader's to handle
      .then(() => st.answers.drain())
      .then(() => this.refuse(st.stream, rc.auth, refusal, st.quiet))
      .finally(() => {
        clearTimeout(bound);
        release(rc);
      });
  }

  private async refuse(
    stream: TransportStream,
    auth: Pick<Negotiated, 'features'> | null,
    refusal: Refusal,
    quiet: boolean,
  ): Promise<void> {
    // Shedding load is not bad input: it is counted in requestsOverloaded.
    if (refusal.reason !== 'overloaded') this.ctx.metrics.badInput.inc({ reason: refusal.reason });
    this.ctx.log.debug(
      { remote: this.conn.remote, reason: refusal.reason, msg: refusal.message },
      'refused client input',
    );
    try {
      if (!quiet) await stream.write(errorFrame(auth, refusal));
      if (refusal.fatalToStream) await stream.end();
    } catch {
      // the peer already went away; the refusal is counted
    }
  }

  /**
   * Routes one authenticated frame by its type, once: a JSON request (read by the fast reader
   * when it is in the exact form one registered, else decoded) or a binary cache or group request
   * to its handler, another binary frame to the handler of its layout.
   */
  private dispatch(
    rc: StreamRequests,
    frame: InboundFrame,
    fast: FastReader | undefined,
  ): Outcome | Promise<Outcome> {
    let msg: Message | Refusal;
    if (frame.flags === 0) msg = jsonRequest(frame, fast);
    else if (frame.flags === FLAG_BINARY_CACHE) msg = rc.readCache(frame);
    else if (frame.flags === FLAG_BINARY_GROUP) msg = rc.readGroup(frame);
    else return this.dispatchFrame(rc, frame);
    if (msg instanceof Refusal) return msg;
    const entry = this.ctx.handlers.entry(msg.type);
    if (entry === undefined) return this.unsupported(rc, msg);
    const handler = entry.handler;
    if (rc.quiet && handler.onPublishOnly !== 'serve') {
      return handler.onPublishOnly === 'refuse'
        ? invalid('a publish-only stream carries only publishes', 'uni_request')
        : unsupportedRefusal(msg);
    }
    const refused = admit(this.ctx, rc, entry, msg);
    if (refused !== null)
      return forwardable(entry, refused) ? handler.forward!(msg, rc, refused) : refused;
    if (entry.access?.longLived === true) {
      rc.longLived = true;
      return openLongLived(rc.opened, entry.access, msg, () => handler.handle(msg, rc));
    }
    return handler.handle(msg, rc);
  }

  private dispatchFrame(rc: StreamRequests, frame: InboundFrame): Outcome | Promise<Outcome> {
    let layout: string;
    try {
      layout = layoutOf(frame.flags);
    } catch (err) {
      return invalid((err as Error).message, 'unknown_flag');
    }
    const handler = this.ctx.handlers.frameHandler(layout);
    if (handler === undefined) {
      return invalid(`a client may not send ${layout} frames`, 'wrong_direction');
    }
    return handler.handle(frame, rc);
  }

  /** A request type no handler serves: `unsupported` when the client reads it, else refused. */
  private async unsupported(rc: StreamRequests, msg: Message): Promise<Outcome> {
    if (!rc.quiet && has(rc.auth.features, FEATURE_UNSUPPORTED) && 'request_id' in msg) {
      await rc.answers.drain(); // after the answers owed to earlier requests: request order
      await rc.stream.write(
        encodeMessage({
          type: 'unsupported',
          request_type: msg.type,
          request_id: msg.request_id as number,
        }),
      );
      this.ctx.metrics.badInput.inc({ reason: 'unsupported_request' });
      return null;
    }
    return unsupportedRefusal(msg);
  }
}

function newStreamState(
  stream: TransportStream,
  reader: FrameReader,
  answers: AnswerPipe,
  quiet: boolean,
): StreamState {
  return {
    stream,
    reader,
    answers,
    quiet,
    rc: null,
    expired: false,
    held: 0,
    authTimer: null,
    busy: null,
    finishing: null,
  };
}

/** A JSON request: by the stream's fast reader when it takes the form, else the codec. */
function jsonRequest(frame: InboundFrame, fast: FastReader | undefined): Message | Refusal {
  const msg = fast?.read(frame.payload);
  if (msg !== undefined) return msg;
  let decoded: Message;
  try {
    decoded = readMessage(frame.payload);
  } catch (err) {
    return invalid((err as Error).message, 'malformed_json');
  }
  // An escape may hold a lone surrogate, which no UTF-8 bytes carry: refused, not stored as U+FFFD.
  return loneSurrogateRefusal(decoded) ?? decoded;
}

function invalid(message: string, reason: string): Refusal {
  return new Refusal('invalid_request', message, reason, { fatalToStream: true });
}

function unsupportedRefusal(msg: Message): Refusal {
  return invalid(`unsupported request ${msg.type}`, 'unsupported_request');
}

/** Releases what the stream's requests opened (each release runs once). */
function release(rc: StreamRequests): void {
  rc.ended = true;
  for (const r of rc.releases.splice(0)) r();
}

const stop = (): boolean => false;
const go = (): boolean => true;

/** What reading a chunk gives: frames, the refusal of a bad one, or null (already answered). */
type ReadOutcome = InboundFrame[] | Refusal | null;
