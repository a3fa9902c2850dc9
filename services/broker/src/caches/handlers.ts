/**
 * Registers the cache requests on the edge's HandlerTable: `cache_put` (with the fast reader for
 * the exact form the client writes and its `cache_ok` written without the codec; an in-memory
 * put answered in the request's own turn), `cache_get`
 * (with its fast reader, and the hot path that answers a hot key in the request's own turn),
 * `cache_delete` and `cache_watch`, and the feature bits they offer. In a cluster, a put or
 * delete to a shard another broker leads is forwarded there (forward.ts).
 * Answers go through the stream's AnswerPipe in request order (answers.ts).
 */
import type { Connection } from '@felix/transport';
import {
  FEATURE_CACHE_DELETE,
  FEATURE_CACHE_SHARDS,
  FEATURE_CACHE_WATCH,
  FEATURE_CACHE_WATCH_RETAINED,
  FEATURE_COUNTERS,
  FEATURE_HI_CACHE_BINARY,
  GetRequestReader,
  type Message,
  PutRequestReader,
  encodeCacheOk,
  encodeCacheValue,
  okAnswerFrame,
} from '@felix/wire';
import { WATCHES_PER_CONNECTION_MAX } from '../limits.js';
import type { BrokerConfig } from '../config/types.js';
import { forwardCacheWrite } from './forward.js';
import type { BrokerMetrics } from '../metrics.js';
import type { ForwardingSlot } from '../session/context.js';
import { jsonFrame } from '../session/codec.js';
import { NOT_OPENED } from '../session/opened-scopes.js';
import type { Handler, HandlerTable, Outcome, RequestContext } from '../session/handler.js';
import { type NotLeaderRefusal, Refusal } from '../session/refusal.js';
import type { Answer, AnswerEncoder, ProjectionAnswers } from './answers.js';
import {
  binaryCache,
  cacheGet,
  cachePut,
  cachePutNow,
  hotGetFrame,
  openWatch,
} from './cache-requests.js';
import { type CacheService, storageRefusal } from './cache-service.js';
import type { RequestCount } from './projection-metrics.js';
import { StreamWrites, writeKey } from './stream-writes.js';
import { WatchWriter } from './watch-writer.js';

type Msg<T extends Message['type']> = Extract<Message, { type: T }>;

export interface CacheDeps {
  config: BrokerConfig;
  brokerMetrics: BrokerMetrics;
  caches: CacheService;
  answers: ProjectionAnswers;
  /** Where a put or delete to a shard another broker leads is forwarded (cluster mode). */
  forwarding: ForwardingSlot;
}

export function registerCacheHandlers(table: HandlerTable, deps: CacheDeps): void {
  const h = new CacheHandlers(deps);
  table.register('cache_put', h.put);
  table.register('cache_get', h.get);
  table.register('cache_delete', h.remove);
  table.register('cache_watch', h.watch);
  table.register('cache_shards', h.shards);
  // The get first: it is the hotter request, and a put's frame is declined by it within bytes.
  table.registerFastReader('cache_get', () => new GetRequestReader());
  table.registerFastReader('cache_put', () => new PutRequestReader());
  let bits = FEATURE_CACHE_DELETE | FEATURE_CACHE_SHARDS;
  if (deps.caches.durable) {
    bits |= FEATURE_CACHE_WATCH | FEATURE_CACHE_WATCH_RETAINED | FEATURE_COUNTERS;
  }
  // The binary exchange (flag word 0x8001) is read by the session (client-session.ts) and
  // answered here; the JSON forms stay served to every client.
  table.offer(bits, FEATURE_HI_CACHE_BINARY);
}

class CacheHandlers {
  private readonly svc: CacheService;
  private readonly answers: ProjectionAnswers;
  /** The get and in-memory put paths' own request counts (no per-type lookup per request). */
  private readonly gets: RequestCount;
  private readonly puts: RequestCount;
  private readonly watchIds = new WeakMap<Connection, Set<number>>();
  /** Log-backed writes each stream has not had answered yet, for its gets to read after. */
  private readonly writes = new StreamWrites();

  constructor(private readonly deps: CacheDeps) {
    this.svc = deps.caches;
    this.answers = deps.answers;
    this.gets = deps.answers.metrics.requestCount('cache_get');
    this.puts = deps.answers.metrics.requestCount('cache_put');
  }

  private readonly putAnswer = (msg: Msg<'cache_put'>, rc: RequestContext) =>
    cachePut(this.svc, rc.auth, msg);

  private readonly readAnswer = (
    msg: Msg<'cache_get'> | Msg<'cache_delete'>,
    rc: RequestContext,
  ): Promise<Message> => cacheGet(this.svc, rc.auth, msg);

  /**
   * A put: on an in-memory cache with nothing unanswered ahead of it on the stream, stored and
   * answered in this turn (no promise, as a hot get); otherwise queued behind earlier answers
   * (a log-backed put is answered once its append is fsynced). Only with nothing ahead: a
   * request still queued may not have made its change yet, and changes keep request order.
   */
  readonly put: Handler<Msg<'cache_put'>> = {
    onPublishOnly: 'unsupported',
    shardLocation: 'message',
    handle: (msg, rc) => {
      // Stored later than now (after its fsync, or behind answers queued ahead of it): marked
      // on its stream, so a get of its key sent after it reads after it.
      if (this.svc.durable || rc.answers.pending > 0)
        return this.queueWrite(rc, msg, this.putAnswer, putAnswerFrame);
      this.puts.n++;
      rc.answers.pushReady(this.putNowFrame(msg, rc));
      return null;
    },
    forward: (msg, rc, to) => this.forwardWrite(msg, rc, to),
  };

  /** A put or delete to a shard another broker leads: sent there (forward.ts). */
  private forwardWrite(
    msg: Msg<'cache_put'> | Msg<'cache_delete'>,
    rc: RequestContext,
    to: NotLeaderRefusal,
  ): Outcome | Promise<Outcome> {
    return forwardCacheWrite(this.deps.forwarding, this.answers, this.hasDefaultTtl)(msg, rc, to);
  }

  /** Whether a put's cache gives puts without a TTL a default one (unknown here: as if it did,
   *  so an explicit 0 still says never; the owner decides what the cache is). */
  private readonly hasDefaultTtl = (msg: Msg<'cache_put'>): boolean => {
    try {
      const cfg = this.svc.lookup(msg.tenant_id, msg.namespace, msg.cache);
      return cfg.default_ttl_ms !== undefined && cfg.default_ttl_ms !== null;
    } catch {
      return true; // not in this broker's catalog (yet)
    }
  };

  /** The answer frame of an in-memory put made now: `cache_ok`, or the refusal's `error`. */
  private putNowFrame(msg: Msg<'cache_put'>, rc: RequestContext): Uint8Array {
    try {
      return putAnswerFrame(rc.auth, cachePutNow(this.svc, rc.auth, msg)!);
    } catch (err) {
      return this.answers.errorFrame(rc.auth, msg.type, err);
    }
  }

  /**
   * Queues a log-backed write, marked on its stream until answered, so a get of its key sent
   * after it on the stream reads after it (`getNow`).
   */
  private queueWrite<M extends Msg<'cache_put'> | Msg<'cache_delete'>>(
    rc: RequestContext,
    msg: M,
    answer: (msg: M, rc: RequestContext) => Answer,
    encode?: AnswerEncoder,
  ): Outcome | Promise<Outcome> {
    const done = this.writes.begin(rc.answers, writeKey(msg));
    const tracked = (m: M, c: RequestContext): Answer => {
      const a = answer(m, c);
      if (a instanceof Promise) a.then(done, done);
      else done();
      return a;
    };
    const outcome = this.answers.queue(rc, msg, tracked, encode);
    // A write refused before its answer was made (the stream ended meanwhile) owes no wait.
    if (outcome instanceof Promise) outcome.catch(done);
    return outcome;
  }

  readonly remove: Handler<Msg<'cache_delete'>> = {
    onPublishOnly: 'unsupported',
    shardLocation: 'message',
    handle: (msg, rc) => this.queueWrite(rc, msg, this.readAnswer),
    forward: (msg, rc, to) => this.forwardWrite(msg, rc, to),
  };

  /**
   * A get: answered in this turn when its key is hot (the remembered answer bytes, or the
   * refusal of a get that cannot be served), else read from the shard behind earlier answers.
   */
  readonly get: Handler<Msg<'cache_get'>> = {
    onPublishOnly: 'unsupported',
    shardLocation: 'message',
    handle: (msg, rc) => {
      if (!rc.answers.hasRoom) return this.getAfterRoom(msg, rc);
      this.gets.n++;
      this.getNow(msg, rc);
      return null;
    },
  };

  private async getAfterRoom(msg: Msg<'cache_get'>, rc: RequestContext): Promise<Outcome> {
    this.gets.n++;
    await rc.answers.room();
    this.getNow(msg, rc);
    return null;
  }

  private getNow(msg: Msg<'cache_get'>, rc: RequestContext): void {
    // Read-your-writes on a stream: after its own unanswered write of this key, not before.
    const before = this.writes.before(rc.answers, msg);
    if (before !== undefined) {
      const read = before.then(() => cacheGet(this.svc, rc.auth, msg));
      this.answers.push(rc, msg.type, read, getAnswerFrame);
      return;
    }
    const ready = this.hotAnswer(rc, msg);
    if (ready !== undefined) rc.answers.pushReady(ready);
    else this.answers.push(rc, msg.type, cacheGet(this.svc, rc.auth, msg), getAnswerFrame);
  }

  /** A hot key's answer (or the refusal of the get); undefined when the key is not hot. */
  private hotAnswer(rc: RequestContext, msg: Msg<'cache_get'>): Uint8Array | undefined {
    try {
      return hotGetFrame(this.svc, rc.auth, msg);
    } catch (err) {
      return this.answers.errorFrame(rc.auth, msg.type, err);
    }
  }

  readonly watch: Handler<Msg<'cache_watch'>> = {
    onPublishOnly: 'unsupported',
    shardLocation: 'message',
    handle: async (msg, rc) => {
      this.answers.metrics.countRequest(msg.type);
      await rc.answers.drain();
      // As a subscribe: a stream being ended for its token opens nothing more.
      if (rc.ending) return NOT_OPENED;
      return (await this.openWatch(msg, rc)) ? null : NOT_OPENED;
    },
  };

  /** `cache_shards`: the cache's shard count from the catalog (0 for a name this tenant does not
   *  have, as `stream_shards` answers), so a client can span a prefix watch over every shard. */
  readonly shards: Handler<Msg<'cache_shards'>> = {
    onPublishOnly: 'refuse',
    shardLocation: 'handler',
    handle: async (msg, rc) => {
      await rc.answers.drain();
      let shards = 0;
      if (msg.tenant_id === rc.auth.tenant) {
        try {
          shards = this.svc.lookup(msg.tenant_id, msg.namespace, msg.cache).shards;
        } catch (err) {
          // Not declared: answered as unknown (0) rather than refused, as a stream's width is.
          if (!(err instanceof Refusal)) throw err;
        }
      }
      const view: Message = { type: 'cache_shards_view', shards, request_id: msg.request_id };
      await rc.stream.write(jsonFrame(view));
      return null;
    },
  };

  private watchIdsOf(conn: Connection): Set<number> {
    let ids = this.watchIds.get(conn);
    if (ids === undefined) {
      ids = new Set();
      this.watchIds.set(conn, ids);
    }
    return ids;
  }

  /** Opens a watch served on its own uni stream; answers `cache_watch_started` or a refusal. */
  /** Opens the watch and answers `cache_watch_started`; false when it answered a refusal
   *  instead (nothing opened). */
  private async openWatch(msg: Msg<'cache_watch'>, rc: RequestContext): Promise<boolean> {
    const ids = this.watchIdsOf(rc.conn);
    try {
      if (ids.size >= WATCHES_PER_CONNECTION_MAX) {
        const message = `at most ${WATCHES_PER_CONNECTION_MAX} watches per connection`;
        throw new Refusal('limit_exceeded', message, 'watch_limit');
      }
      const id = msg.subscription_id ?? firstFree(ids);
      if (ids.has(id)) {
        throw new Refusal('invalid_request', `watch id ${id} is in use`, 'duplicate_watch');
      }
      const capacity = this.deps.config.broker.watch_queue_capacity;
      const opening = await openWatch(this.svc, rc.auth, msg, capacity).catch((err: unknown) => {
        throw storageRefusal('cache watch', err);
      });
      if (opening.kind === 'cursor_error') {
        this.deps.brokerMetrics.badInput.inc({ reason: 'cursor_in_future' });
        await rc.stream.write(
          jsonFrame({
            type: 'subscribe_cursor_error',
            reason: 'in_future',
            requested: opening.requested,
            available: opening.available,
          }),
        );
        return false;
      }
      ids.add(id);
      const writer = new WatchWriter(rc.conn, id, opening.watch, this.answers.metrics);
      await rc.stream.write(
        jsonFrame({
          type: 'cache_watch_started',
          subscription_id: id,
          resume_offset: opening.resumeOffset,
          resnapshot: opening.resnapshot,
          ...(opening.retainedCount !== undefined ? { retained_count: opening.retainedCount } : {}),
          ...(opening.history !== undefined
            ? { generation: opening.history.generation, generation_start: opening.history.start }
            : {}),
        }),
      );
      void rc.stream.closed.then(() => writer.stop());
      // Released with its stream's long-lived readers too: a token that expires (or a narrower
      // one) ends the stream on the broker's side while the client keeps its half open, so the
      // stream's close alone left the watch delivering to a connection no longer allowed it.
      rc.onStreamEnd(() => writer.stop());
      void writer.run().finally(() => ids.delete(id));
      return true;
    } catch (err) {
      const frame = this.answers.errorFrame(rc.auth, msg.type, err);
      // The stream may be gone already; the refusal is counted.
      await rc.stream.write(frame).catch(() => undefined);
      return false;
    }
  }
}

/**
 * A put's `cache_ok` written straight into its frame (binary to a client that negotiated it,
 * else the codec's bytes); `ok` by the codec.
 */
const putAnswerFrame: AnswerEncoder = (auth, m) => {
  if (m.type !== 'cache_ok') return jsonFrame(m);
  return binaryCache(auth) ? encodeCacheOk(m.request_id) : okAnswerFrame(m.request_id);
};

/** A get's `cache_value` read from the shard: binary to a client that negotiated it. */
const getAnswerFrame: AnswerEncoder = (auth, m) =>
  m.type === 'cache_value' && m.request_id !== undefined && binaryCache(auth)
    ? encodeCacheValue(m.request_id, m.value)
    : jsonFrame(m);

function firstFree(ids: Set<number>): number {
  // Ids the broker picks sit far above the ones clients count up from 1.
  let id = 0x4000_0000;
  while (ids.has(id)) id++;
  return id;
}
