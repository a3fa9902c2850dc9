/**
 * `felix.cache(name)`: put/get/delete over the connection's request stream, and `watch()`, an
 * async iterable of a key's or prefix's changes that survives reconnects and lag by re-watching
 * from the next offset it has not seen. A retained watch first yields each current value, then a
 * `state_complete` marker, then live changes. A prefix watch that names no shard of a multi-shard
 * cache watches them all (watch-span.ts).
 */
import {
  BINARY_STRING_BYTES_MAX,
  FEATURE_CACHE_DELETE,
  FEATURE_CACHE_SHARDS,
  FEATURE_CACHE_WATCH,
  FEATURE_CACHE_WATCH_RETAINED,
  FEATURE_HI_CACHE_BINARY,
  FEATURE_TOPOLOGY,
  FLAG_BINARY_CACHE,
  type GetPrefix,
  type Message,
  type PutPrefix,
  cacheScopeBytes,
  decodeCacheAnswer,
  decodeMessage,
  encodeCacheGet,
  encodeCachePut,
  encodeGetRequest,
  encodeMessage,
  encodePutRequest,
  getRequestPrefix,
  putRequestPrefix,
  readOkAnswer,
  readValueAnswer,
} from '@felix/wire';
import {
  ConnectionLostError,
  CursorInFutureError,
  InvalidArgumentError,
  ProtocolError,
  SubscribeTimeoutError,
  TimeoutError,
  isStreamGone,
  notLeaderOf,
  refusalOf,
} from '../errors.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import { cacheShardOf } from '../cluster/routing.js';
import { KeyRoutes } from './key-routes.js';
import { CACHE_KEY_BYTES_MAX, CACHE_TTL_MS_MAX } from '../limits.js';
import { resetOnAbort } from '../protocol/auth.js';
import { has } from '../protocol/negotiation.js';
import { Deadline } from '../util/deadline.js';
import { abortable } from '../util/abortable.js';
import { checkWellFormed } from '../util/well-formed.js';
import { utf8Over } from '../util/bytes.js';
import {
  ReaderRetry,
  type ProjectionHost,
  type ProjectionRoute,
  bytesOf,
  requireFeature,
} from './host.js';
import type { CacheWatchEvent, CacheWatchOptions, WatchFilterSpec } from './watch-events.js';
import {
  CurrentValues,
  type WatchState,
  endingOf,
  givesUpOn,
  historyOf,
  watchEvents,
} from './watch-state.js';
import { watchAcross } from './watch-span.js';

export interface CachePutOptions {
  /** Time to live in ms; absent: the cache's default (or never). */
  ttlMs?: number;
  signal?: AbortSignal;
}

export type { CacheWatchEvent, CacheWatchOptions, WatchFilterSpec } from './watch-events.js';

/** A put's result from its answer: nothing (a refusal rejects before it). */
const putDone = (): undefined => undefined;

/** The connection negotiated the binary cache exchange (flag word 0x8001). */
function binaryCache(bc: BrokerConnection): boolean {
  return (bc.negotiated.featuresHi & FEATURE_HI_CACHE_BINARY) !== 0;
}

type Answer<T extends Message['type']> = Extract<Message, { type: T }>;

/** A cache's `cache_put` start and scope fields on one tenant and namespace. */
interface PutMemo {
  tenant: string;
  namespace: string;
  prefix: PutPrefix;
  scope: { tenant_id: string; namespace: string; cache: string };
}

/** A cache's binary scope (tenant, namespace, cache) on one tenant and namespace. */
interface ScopeMemo {
  tenant: string;
  namespace: string;
  bytes: Uint8Array;
}

export class Cache {
  /** What a write whose answer never comes names in its OutcomeUnknownError. */
  private readonly writeWhat: string;
  private getPrefixMemo: { tenant: string; namespace: string; prefix: GetPrefix } | null = null;
  private putPrefixMemo: PutMemo | null = null;
  private scopeMemo: ScopeMemo | null = null;
  /** Routing by key in a cluster (null: the client has no router). */
  private readonly keys: KeyRoutes | null;

  constructor(
    private readonly host: ProjectionHost,
    readonly name: string,
  ) {
    if (name === '') throw new InvalidArgumentError('cache name must not be empty');
    checkWellFormed(name, 'the cache name');
    this.keys = host.keys === undefined ? null : new KeyRoutes(host.keys, name, () => host.closed);
    // The binary scope carries the name behind a u16 length (see checkKey).
    if (utf8Over(name, BINARY_STRING_BYTES_MAX))
      throw new InvalidArgumentError(`a cache name exceeds ${BINARY_STRING_BYTES_MAX} bytes`);
    this.writeWhat = `cache ${name}`;
  }

  /** What an aborted call names in its AbortedError. */
  private what(call: string): string {
    return `cache ${this.name} ${call}`;
  }

  private scope(bc: BrokerConnection) {
    const s = bc.scope;
    return { tenant_id: s.tenant, namespace: s.namespace, cache: this.name };
  }

  put(key: string, value: Uint8Array | string, opts: CachePutOptions = {}): Promise<void> {
    // Not an async function (as `get`): on a live connection the promise returned is the
    // request's own with one step that maps its outcome (no await, no turn of its own per put).
    try {
      checkKey(key);
      const ttl = opts.ttlMs;
      if (ttl !== undefined && !(Number.isSafeInteger(ttl) && ttl >= 0 && ttl <= CACHE_TTL_MS_MAX))
        throw new InvalidArgumentError(
          `ttlMs must be a whole number of ms from 0 to ${CACHE_TTL_MS_MAX} (2^45), got ${ttl}`,
        );
      const bytes = bytesOf(value, 'the cache value');
      // A put stores the value as it was at the call. Sent now (a live connection), it is encoded
      // in this turn; one that may be encoded later (routed: after an owner lookup or a redirect;
      // or once connected) takes a copy of the caller's buffer first (heldCopy).
      const keys = this.keys;
      if (keys?.active) {
        const kept = heldCopy(value, bytes);
        const on = (c: BrokerConnection) => this.putOn(c, key, kept, opts.ttlMs);
        return this.routed(keys, key, on, opts.signal, 'put', true);
      }
      const bc = opts.signal?.aborted ? undefined : this.host.live?.();
      return bc !== undefined
        ? untilAborted(this.putOn(bc, key, bytes, opts.ttlMs), opts.signal, this.what('put'), true)
        : this.putConnecting(key, heldCopy(value, bytes), opts);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private async putConnecting(key: string, bytes: Uint8Array, opts: CachePutOptions) {
    const bc = await this.host.connection(opts.signal);
    return untilAborted(
      this.putOn(bc, key, bytes, opts.ttlMs),
      opts.signal,
      this.what('put'),
      true,
    );
  }

  private putOn(
    bc: BrokerConnection,
    key: string,
    bytes: Uint8Array,
    ttlMs: number | undefined,
  ): Promise<void> {
    // `finish` settles the request's own promise as the caller's (no `then` step, promise and
    // turn of its own per put); the lane rejects it, a sent put cut off with OutcomeUnknownError.
    if (binaryCache(bc)) {
      const scope = this.scopeBytes(bc);
      return bc.requests.requestPrepared(
        (requestId) => ({
          bytes: encodeCachePut(scope, key, bytes, requestId, ttlMs),
          quick: (payload, flags) =>
            flags === FLAG_BINARY_CACHE
              ? decodeCacheAnswer(payload, key)
              : readOkAnswer(requestId, payload),
          finish: putDone,
        }),
        this.writeWhat,
      );
    }
    const { prefix, scope } = this.putPrefix(bc);
    return bc.requests.requestPrepared(
      (requestId) => ({
        bytes: encodePutRequest(prefix, scope, key, bytes, requestId, ttlMs),
        quick: (payload) => readOkAnswer(requestId, payload),
        finish: putDone,
      }),
      this.writeWhat,
    );
  }

  /**
   * A single-key call routed by key (key-routes.ts): on the open connection to the owner of the
   * key's shard when there is one (in the caller's turn, as unrouted), else once the owner is
   * found; a refusal that did nothing goes on from there. A write sent and cut off rejects with
   * OutcomeUnknownError (request-lane.ts), which is never sent again.
   */
  private routed<T>(
    keys: KeyRoutes,
    key: string,
    on: (bc: BrokerConnection) => Promise<T>,
    signal: AbortSignal | undefined,
    call: string,
    write: boolean,
  ): Promise<T> {
    const bc = signal?.aborted ? undefined : keys.now(key);
    const sent =
      bc === undefined
        ? keys.run(key, on, signal)
        : on(bc).catch((err: unknown) => keys.run(key, on, signal, { err, from: bc.server }));
    return untilAborted(sent, signal, this.what(call), write);
  }

  /** The value, or undefined when the key is absent or expired. A failed read throws. */
  get(key: string, opts: { signal?: AbortSignal } = {}): Promise<Uint8Array | undefined> {
    // Not an async function: on a live connection the promise returned is the request's own,
    // resolved with the value (no promise or turn of its own per get).
    try {
      checkKey(key);
      const keys = this.keys;
      if (keys?.active) {
        const on = (c: BrokerConnection) => this.getOn(c, key);
        return this.routed(keys, key, on, opts.signal, 'get', false);
      }
      const bc = opts.signal?.aborted ? undefined : this.host.live?.();
      return bc !== undefined
        ? untilAborted(this.getOn(bc, key), opts.signal, this.what('get'), false)
        : this.getConnecting(key, opts.signal);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private async getConnecting(
    key: string,
    signal: AbortSignal | undefined,
  ): Promise<Uint8Array | undefined> {
    const bc = await this.host.connection(signal);
    return untilAborted(this.getOn(bc, key), signal, this.what('get'), false);
  }

  private getOn(bc: BrokerConnection, key: string): Promise<Uint8Array | undefined> {
    if (binaryCache(bc)) {
      const scope = this.scopeBytes(bc);
      return bc.requests.requestPrepared((requestId) => ({
        bytes: encodeCacheGet(scope, key, requestId),
        // A JSON answer (an `error`) goes to the codec.
        quick: (payload, flags) =>
          flags === FLAG_BINARY_CACHE ? decodeCacheAnswer(payload, key) : undefined,
        finish: cacheValueOf,
      }));
    }
    const prefix = this.getPrefix(bc);
    return bc.requests.requestPrepared((requestId) => {
      const req = encodeGetRequest(prefix, key, requestId);
      return {
        bytes: req.frame,
        quick: (payload) => readValueAnswer(req, key, payload),
        finish: cacheValueOf,
      };
    });
  }

  /** This cache's binary scope on `bc` (built once per scope). */
  private scopeBytes(bc: BrokerConnection): Uint8Array {
    const { tenant, namespace } = bc.scope;
    const memo = this.scopeMemo;
    if (memo !== null && memo.tenant === tenant && memo.namespace === namespace) return memo.bytes;
    const bytes = cacheScopeBytes(tenant, namespace, this.name);
    this.scopeMemo = { tenant, namespace, bytes };
    return bytes;
  }

  /** The start of this cache's `cache_get` on `bc` (built once per scope). */
  private getPrefix(bc: BrokerConnection): GetPrefix {
    const { tenant, namespace } = bc.scope;
    const memo = this.getPrefixMemo;
    if (memo !== null && memo.tenant === tenant && memo.namespace === namespace) return memo.prefix;
    const prefix = getRequestPrefix(tenant, namespace, this.name);
    this.getPrefixMemo = { tenant, namespace, prefix };
    return prefix;
  }

  /** The start of this cache's `cache_put` on `bc` and its scope (built once per scope). */
  private putPrefix(bc: BrokerConnection): PutMemo {
    const { tenant, namespace } = bc.scope;
    const memo = this.putPrefixMemo;
    if (memo !== null && memo.tenant === tenant && memo.namespace === namespace) return memo;
    const prefix = putRequestPrefix(tenant, namespace, this.name);
    this.putPrefixMemo = { tenant, namespace, prefix, scope: this.scope(bc) };
    return this.putPrefixMemo;
  }

  /**
   * Removes a key; resolves with the value it removed (undefined when there was none). Like
   * `put` and `get`, it goes on the wire in the caller's turn on a live connection, so calls
   * made one after another without awaiting reach the broker in call order (a delete that
   * waited a turn reached it after the put made after it, and removed the new value).
   */
  delete(key: string, opts: { signal?: AbortSignal } = {}): Promise<Uint8Array | undefined> {
    try {
      checkKey(key);
      const keys = this.keys;
      if (keys?.active) {
        const on = (c: BrokerConnection) => this.deleteOn(c, key);
        return this.routed(keys, key, on, opts.signal, 'delete', true);
      }
      const bc = opts.signal?.aborted ? undefined : this.host.live?.();
      return bc !== undefined
        ? untilAborted(this.deleteOn(bc, key), opts.signal, this.what('delete'), true)
        : this.deleteConnecting(key, opts.signal);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private async deleteConnecting(
    key: string,
    signal: AbortSignal | undefined,
  ): Promise<Uint8Array | undefined> {
    const bc = await this.host.connection(signal);
    return untilAborted(this.deleteOn(bc, key), signal, this.what('delete'), true);
  }

  private deleteOn(bc: BrokerConnection, key: string): Promise<Uint8Array | undefined> {
    requireFeature(bc, FEATURE_CACHE_DELETE, 'cache_delete');
    return bc.requests
      .request(
        (request_id) => ({ type: 'cache_delete', ...this.scope(bc), key, request_id }),
        this.writeWhat,
      )
      .then(cacheValueOf);
  }

  /** Watches a key or a prefix; see CacheWatchEvent. Ends when `signal` aborts, on `break` or at
   *  the client's `close()`. */
  watch(filter: WatchFilterSpec, opts: CacheWatchOptions = {}): AsyncIterable<CacheWatchEvent> {
    // A bare key string is the likely slip: `watch('u1')` for `watch({ key: 'u1' })`.
    if (typeof filter !== 'object' || filter === null || 'key' in filter === 'prefix' in filter)
      throw new InvalidArgumentError(
        "a watch filter is { key: 'k' } or { prefix: 'p' } (exactly one of them)",
      );
    if ('key' in filter) checkKey(filter.key);
    else {
      checkWellFormed(filter.prefix, 'the watch prefix');
      if (utf8Over(filter.prefix, CACHE_KEY_BYTES_MAX))
        throw new InvalidArgumentError(`a watch prefix exceeds ${CACHE_KEY_BYTES_MAX} bytes`);
    }
    if (opts.retained && opts.fromOffset !== undefined)
      throw new InvalidArgumentError('retained and fromOffset cannot be combined');
    // What the wire cannot carry is the caller's slip, refused here, not a wire error later.
    for (const [name, v] of [
      ['fromOffset', opts.fromOffset],
      ['shard', opts.shard],
    ] as const) {
      if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0))
        throw new InvalidArgumentError(`watch ${name} must be a whole number >= 0, got ${v}`);
    }
    return { [Symbol.asyncIterator]: () => this.watchSpan(filter, opts) };
  }

  /** A prefix watch that names no shard spans the cache's shards when it has several (a client
   *  routing in a cluster: watch-span.ts); any other watch is one shard's. */
  private async *watchSpan(
    filter: WatchFilterSpec,
    opts: CacheWatchOptions,
  ): AsyncGenerator<CacheWatchEvent> {
    const spans = 'prefix' in filter && opts.shard === undefined;
    const width = spans ? await this.widthToSpan(opts.signal) : undefined;
    if (width === undefined) return yield* this.watchLoop(filter, opts);
    if (opts.fromOffset !== undefined)
      throw new InvalidArgumentError(
        "fromOffset is one shard's: a prefix watch across shards takes none (name its shard)",
      );
    const one = (shard: number, signal: AbortSignal) =>
      this.watchLoop(filter, { ...opts, shard, signal });
    yield* watchAcross(width, opts.retained === true, opts.signal, one);
  }

  /** The cache's shard count when over 1 and the client routes in a cluster or is connected to a
   *  standalone broker, which serves every shard (else undefined: one watch, which a broker
   *  refuses typed on a multi-shard cache). Routing is known once connected. */
  private async widthToSpan(signal: AbortSignal | undefined): Promise<number | undefined> {
    const retry = new ReaderRetry(this.host.route, this.host.closing);
    for (;;) {
      try {
        const conn = await this.host.connection(signal);
        const route = this.host.route;
        const { features } = conn.negotiated;
        // A broker without topology is standalone: it leads every shard, so the span's watches
        // all go to it. A cluster client that chose not to route keeps the one watch.
        const standalone = !has(features, FEATURE_TOPOLOGY) && has(features, FEATURE_CACHE_SHARDS);
        if (!route?.active && !standalone) return undefined;
        const width = route?.active
          ? await route.widthOf('cache', this.name, signal)
          : await abortable(conn.cacheShards(this.name), signal, 'the cache width lookup', false);
        return width !== undefined && width > 1 ? width : undefined;
      } catch (err) {
        // Aborted or closed: the one watch started instead ends at once.
        if (signal?.aborted || this.host.closed) return undefined;
        const where = { kind: 'cache' as const, name: this.name, shard: undefined, from: '' };
        if (!(await retry.retries(err, where, signal))) throw err;
      }
    }
  }

  /** Sends `cache_watch` on a stream of its own (kept in `current` so an abort resets it) and
   *  reads its `cache_watch_started`; a refusal or an unexpected answer throws. */
  private async startWatch(
    bc: BrokerConnection,
    req: {
      filter: WatchFilterSpec;
      shard?: number;
      next?: number;
      retained: boolean;
      history?: { generation: number; start: number };
    },
    subscriptionId: number,
    current: WatchState['current'],
    signal: AbortSignal | undefined,
  ): Promise<Answer<'cache_watch_started'>> {
    // A live broker that never answers (a stalled handler, an answer lost on the way) held the
    // watch here for as long as the connection lived: its `auth_ok` and `cache_watch_started`
    // are awaited at most the request timeout, whose expiry resets the stream as an abort does.
    const deadline = new Deadline(bc.requestTimeoutMs, signal);
    try {
      return await this.startWatchWithin(bc, req, subscriptionId, current, deadline);
    } catch (err) {
      // The stream's own auth wait has a bound of the same length, which may end first.
      const timedOut = deadline.expired || err instanceof TimeoutError;
      if (timedOut && !signal?.aborted)
        throw new SubscribeTimeoutError(`the watch of cache ${this.name}`, deadline.ms);
      throw err;
    } finally {
      deadline.dispose();
    }
  }

  private async startWatchWithin(
    bc: BrokerConnection,
    req: Parameters<Cache['startWatch']>[1],
    subscriptionId: number,
    current: WatchState['current'],
    deadline: Deadline,
  ): Promise<Answer<'cache_watch_started'>> {
    const signal = deadline.signal;
    // The signal ends the wait for the stream's `auth_ok` too (a stalled broker sends none).
    const { stream, frames } = await bc.openStream(0, signal);
    current.ctl = frames;
    // Aborted since the stream authenticated: the watch loop's reset found no stream yet.
    if (signal.aborted) stream.reset(0);
    const unlink = resetOnAbort(stream, signal);
    const filter = req.filter;
    await stream.write(
      encodeMessage({
        type: 'cache_watch',
        ...this.scope(bc),
        ...('key' in filter ? { key: filter.key } : { prefix: filter.prefix }),
        ...(req.shard !== undefined ? { shard: req.shard } : {}),
        ...(req.next !== undefined && !req.retained ? { from_offset: req.next } : {}),
        // The history that offset belongs to: a log that parted from it starts us over.
        ...(req.next !== undefined && !req.retained && req.history !== undefined
          ? { history_generation: req.history.generation, history_start: req.history.start }
          : {}),
        retained: req.retained,
        subscription_id: subscriptionId,
      }),
    );
    const first = await frames.next().finally(unlink);
    if (first === null) throw new ConnectionLostError(bc.server);
    const started = decodeMessage(first.payload);
    if (started.type === 'error') throw refusalOf(started);
    if (started.type === 'not_leader') throw notLeaderOf(started);
    if (started.type === 'subscribe_cursor_error')
      throw new CursorInFutureError(started.requested, started.available);
    if (started.type !== 'cache_watch_started')
      throw new ProtocolError(`expected cache_watch_started, got ${started.type}`);
    current.ended = endingOf(frames);
    return started;
  }

  private async *watchLoop(
    filter: WatchFilterSpec,
    opts: CacheWatchOptions,
  ): AsyncGenerator<CacheWatchEvent> {
    const signal = opts.signal;
    const st: WatchState = {
      next: opts.fromOffset,
      retainedPhase: opts.retained === true,
      retainedYielded: 0,
      resumed: false,
      eventStreamsMissing: 0,
      watchesUnanswered: 0,
      notLeaderAnswers: 0,
      current: {},
    };
    const stopStreams = () => {
      st.current.ctl?.stream.reset(0);
      st.current.events?.stream.reset(0);
    };
    signal?.addEventListener('abort', stopStreams, { once: true });
    // The watch outlives what passes (reader-retry.ts) for as long as the client keeps
    // reconnecting: a broker down longer than a request timeout, one not up yet; in a cluster it
    // follows its shard's owner through a failover or a move.
    const retry = new ReaderRetry(this.host.route, this.host.closing);
    try {
      while (!signal?.aborted && !this.host.closed) {
        let at: { bc: BrokerConnection; shard: number | undefined };
        try {
          at = await this.watchConnection(filter, opts);
        } catch (err) {
          // Closed while it waited for a connection: the watch ends, as a subscription does.
          if (signal?.aborted || this.host.closed) return this.endOnClose(signal);
          // The wait for the reconnect timed out (a broker down longer than requestTimeoutMs),
          // or the owner could not be reached: waited again after the backoff.
          const where = { kind: 'cache' as const, name: this.name, shard: opts.shard, from: '' };
          if (await retry.retries(err, where, signal)) continue;
          throw err;
        }
        try {
          yield* this.watchOn(at.bc, filter, opts, st, () => retry.ok());
        } catch (err) {
          if (signal?.aborted || this.host.closed) return this.endOnClose(signal);
          // A lost connection re-watches from the next unseen offset; so does a moved owner.
          if (err instanceof ConnectionLostError || at.bc.isLost || isStreamGone(err)) continue;
          if (givesUpOn(err, st, this.host.route?.active === true && at.shard !== undefined))
            throw err;
          const where = { kind: 'cache' as const, name: this.name, shard: at.shard };
          if (await retry.retries(err, { ...where, from: at.bc.server }, signal)) continue;
          throw err;
        } finally {
          stopStreams();
        }
      }
      this.endOnClose(signal);
    } finally {
      signal?.removeEventListener('abort', stopStreams);
      stopStreams();
    }
  }

  /** A watch the client's close stopped ends done, or with the ConnectError the client closed
   *  itself with when its reconnect gave up (as a subscription does). */
  private endOnClose(signal: AbortSignal | undefined): void {
    const gaveUp = this.host.closed && !signal?.aborted ? this.host.closedWith : undefined;
    if (gaveUp !== undefined) throw gaveUp;
  }

  /** The connection a watch runs on: in a cluster, its shard's owner (the shard named, the
   *  key's, or the only one); else the client's connection. */
  private async watchConnection(
    filter: WatchFilterSpec,
    opts: CacheWatchOptions,
  ): Promise<{ bc: BrokerConnection; shard: number | undefined }> {
    const route = this.host.route;
    if (route?.active) {
      const shard = opts.shard ?? (await this.shardOfFilter(route, filter, opts.signal));
      if (shard !== undefined)
        return { bc: await route.connectionFor('cache', this.name, shard, opts.signal), shard };
    }
    return { bc: await this.host.connection(opts.signal), shard: undefined };
  }

  /** The shard a watch's filter reads, when one shard holds it (a key, or a 1-shard cache). */
  private async shardOfFilter(
    route: ProjectionRoute,
    filter: WatchFilterSpec,
    signal: AbortSignal | undefined,
  ): Promise<number | undefined> {
    const width = await route.widthOf('cache', this.name, signal);
    if (width === undefined) return undefined;
    if (width === 1) return 0;
    return 'key' in filter ? cacheShardOf(filter.key, width) : undefined;
  }

  /** One watch on `bc`, from `st.next`: its events until the broker ends it or it lags. */
  private async *watchOn(
    bc: BrokerConnection,
    filter: WatchFilterSpec,
    opts: CacheWatchOptions,
    st: WatchState,
    started: () => void,
  ): AsyncGenerator<CacheWatchEvent> {
    requireFeature(bc, FEATURE_CACHE_WATCH, 'cache_watch');
    if (st.retainedPhase) requireFeature(bc, FEATURE_CACHE_WATCH_RETAINED, 'retained watches');
    // Said once the re-watch is answered, not per attempt: the refused attempts of an outage or
    // a failover are not resumptions (a trial counted 6-10 per shard in one failover).
    const resumeFrom = st.resumed ? st.next : undefined;
    st.resumed = true;
    const reservation = bc.reserveEventStream();
    st.current = {};
    try {
      const request = {
        filter,
        shard: opts.shard,
        next: st.next,
        retained: st.retainedPhase,
        ...(st.history === undefined ? {} : { history: st.history }),
      };
      const answer = await this.startWatch(bc, request, reservation.id, st.current, opts.signal);
      if (resumeFrom !== undefined) yield { type: 'resumed', resumeFrom };
      st.history = historyOf(answer);
      const floor = answer.resume_offset;
      // A retained phase cut short re-delivers the current values from scratch: what was
      // yielded of the first may since have been deleted, so the caller must start over too.
      const restarted = st.retainedPhase && st.retainedYielded > 0;
      st.retainedYielded = 0;
      if (answer.resnapshot || restarted) yield { type: 'resnapshot', resumeOffset: floor };
      // A live start that has delivered nothing yet resumes from where it began, so a change
      // made while it re-watches after a loss is not skipped.
      if (!st.retainedPhase && !answer.resnapshot && st.next === undefined) st.next = floor;
      const phase = new CurrentValues(st, answer);
      if (phase.left === 0) yield phase.complete();
      // A broker that answered and then crashed or misbehaved may never open the event stream:
      // the wait is bounded (EventStreamTimeoutError), and the signal ends it too.
      const events = await reservation.opened(opts.signal, this.what('watch'));
      st.current.events = events;
      // Only now has the watch worked: an answer without its events must not restart the
      // failover deadline (a broker that never opens them would be watched for ever).
      started();
      st.eventStreamsMissing = 0;
      st.watchesUnanswered = 0;
      st.notLeaderAnswers = 0;
      yield* watchEvents(events, st, phase);
    } finally {
      reservation.cancel();
    }
  }
}

/**
 * The call's answer, or an AbortedError once `signal` aborts: a signal ends a call whose broker
 * has not answered yet (a stalled or slow one), not only one still waiting for a connection. A
 * write ended so may have been applied (`write`: its retry class says unknown outcome). Without a
 * signal the request's own promise, with no step of its own.
 */
function untilAborted<T>(
  p: Promise<T>,
  signal: AbortSignal | undefined,
  what: string,
  write: boolean,
): Promise<T> {
  return signal === undefined ? p : abortable(p, signal, what, write);
}

function checkKey(key: string): void {
  if (typeof key !== 'string' || key === '')
    throw new InvalidArgumentError('a cache key is a non-empty string');
  // A lone surrogate would reach the broker as U+FFFD's bytes: the same key as others.
  checkWellFormed(key, 'the cache key');
  // The broker refuses a key over CACHE_KEY_BYTES_MAX (well inside the wire's u16 length), so
  // one is refused here on every path rather than sent to be refused.
  if (utf8Over(key, CACHE_KEY_BYTES_MAX))
    throw new InvalidArgumentError(`a cache key exceeds ${CACHE_KEY_BYTES_MAX} bytes`);
}

function cacheValueOf(msg: Message): Uint8Array | undefined {
  if (msg.type !== 'cache_value') throw new ProtocolError(`expected cache_value, got ${msg.type}`);
  return (msg as Answer<'cache_value'>).value;
}

/** A put's bytes as they are now, for a request encoded later: a string's encoding is the
 *  put's own; a caller's buffer is copied (a Buffer's `slice()` would be a view of it). */
function heldCopy(value: Uint8Array | string, bytes: Uint8Array): Uint8Array {
  return typeof value === 'string' ? bytes : new Uint8Array(bytes);
}
