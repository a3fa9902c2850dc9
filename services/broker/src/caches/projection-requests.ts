/**
 * The session's entry point for every cache, counter, watch and consumer-group request: which
 * feature bits this broker offers for them, and serving one request on a client stream. Answers
 * go through the stream's AnswerPipe, so they are written in request order and an `error` (which
 * carries no request id) always belongs to the oldest unanswered request on that stream.
 */
import type { Connection, TransportStream } from '@felix/transport';
import {
  FEATURE_CACHE_DELETE,
  FEATURE_CACHE_WATCH,
  FEATURE_CACHE_WATCH_RETAINED,
  FEATURE_COUNTERS,
  FEATURE_ERROR_CODES,
  type Message,
} from '@felix/wire';
import type { Catalog } from '../catalog/catalog.js';
import type { BrokerConfig } from '../config/types.js';
import { RequestRefusedError } from '../errors.js';
import type { BrokerMetrics } from '../metrics.js';
import { WATCHES_PER_CONNECTION_MAX } from '../limits.js';
import type { AnswerPipe } from '../session/answer-pipe.js';
import { jsonFrame } from '../session/codec.js';
import { type Negotiated, has } from '../session/negotiation.js';
import {
  GROUP_FEATURES,
  GROUP_FEATURES_HI,
  GroupService,
  groupAnswerFrame,
  isGroupMessage,
} from '../groups/group-service.js';
import { cacheGet, cachePut, counterOp, hotGetFrame, openWatch } from './cache-requests.js';
import { CacheService, storageRefusal } from './cache-service.js';
import { ProjectionMetrics, type RequestCount } from './projection-metrics.js';
import { WatchWriter } from './watch-writer.js';

const CACHE_TYPES = new Set([
  'cache_put',
  'cache_get',
  'cache_delete',
  'counter_add',
  'counter_get',
  'cache_watch',
]);

export interface ServeArgs {
  conn: Connection;
  stream: TransportStream;
  auth: Negotiated;
  msg: Message;
  answers: AnswerPipe;
}

export class Projections {
  readonly metrics: ProjectionMetrics;
  readonly caches: CacheService;
  readonly groups: GroupService | null;
  private readonly watchIds = new WeakMap<Connection, Set<number>>();
  /** The hot get path's own request count (no per-type lookup per get). */
  private readonly hotGets: RequestCount;

  constructor(
    private readonly cfg: BrokerConfig,
    catalog: Catalog,
    private readonly brokerMetrics: BrokerMetrics,
  ) {
    this.metrics = new ProjectionMetrics(brokerMetrics.registry);
    this.hotGets = this.metrics.requestCount('cache_get');
    this.caches = new CacheService(cfg);
    this.groups =
      cfg.durable.data_dir === null ? null : new GroupService(cfg, catalog, this.metrics);
  }

  /** Feature bits this broker offers for these requests (durable ones only with a data dir). */
  get features(): number {
    let bits = FEATURE_CACHE_DELETE;
    if (this.caches.durable) {
      bits |= FEATURE_CACHE_WATCH | FEATURE_CACHE_WATCH_RETAINED | FEATURE_COUNTERS;
    }
    if (this.groups !== null) bits |= GROUP_FEATURES;
    return bits;
  }

  /** High-word feature bits this broker offers for these requests. */
  get featuresHi(): number {
    return this.groups !== null ? GROUP_FEATURES_HI : 0;
  }

  handles(msg: Message): boolean {
    return CACHE_TYPES.has(msg.type) || isGroupMessage(msg);
  }

  /** A stream's records became visible: wake waiting group polls. */
  onApply(): void {
    this.groups?.wake();
  }

  /** Serves one request; answers are queued on the stream's pipe in request order. */
  async serve(a: ServeArgs): Promise<void> {
    const { msg } = a;
    this.metrics.countRequest(msg.type);
    if (msg.type === 'cache_watch') {
      await a.answers.drain();
      await this.watch(a, msg);
      return;
    }
    // Nothing unanswered means room (a window is at least 1): a lone request skips the await.
    if (a.answers.pending > 0) await a.answers.room();
    if (msg.type === 'cache_get') {
      const ready = this.hotAnswer(a.auth, msg);
      if (ready !== undefined) {
        a.answers.pushReady(ready);
        return;
      }
    }
    a.answers.push(
      this.answer(a).then(
        (m) => (m === null ? null : (groupAnswerFrame(a.auth, m) ?? jsonFrame(m))),
        (err: unknown) => this.errorFrame(a.auth, msg.type, err),
      ),
    );
  }

  /**
   * Serves a `cache_get` in this turn when its key is hot (the session's path for a get it read
   * itself): true once the answer, or the refusal, is queued on the pipe. False, with nothing
   * counted or queued, when `serve` must take it: the key is not hot or the pipe has no room.
   */
  answerHotGet(
    auth: Negotiated,
    msg: Extract<Message, { type: 'cache_get' }>,
    answers: AnswerPipe,
  ): boolean {
    if (!answers.hasRoom) return false;
    const ready = this.hotAnswer(auth, msg);
    if (ready === undefined) return false;
    this.hotGets.n++;
    answers.pushReady(ready);
    return true;
  }

  /**
   * A hot key's answer, with bytes encoded when the value was remembered, or the refusal of a get
   * that cannot be served; undefined when the key is not hot (the shard is read instead).
   */
  private hotAnswer(
    auth: Negotiated,
    msg: Extract<Message, { type: 'cache_get' }>,
  ): Uint8Array | undefined {
    try {
      return hotGetFrame(this.caches, auth, msg);
    } catch (err) {
      return this.errorFrame(auth, msg.type, err);
    }
  }

  private answer(a: ServeArgs): Promise<Message | null> {
    const { msg, auth } = a;
    const svc = this.caches;
    switch (msg.type) {
      case 'cache_put':
        return cachePut(svc, auth, msg);
      case 'cache_get':
      case 'cache_delete':
        return cacheGet(svc, auth, msg);
      case 'counter_add':
      case 'counter_get':
        return counterOp(svc, auth, msg);
      default:
        if (this.groups === null) {
          return Promise.reject(
            new RequestRefusedError(
              'invalid_request',
              'fatal',
              'consumer groups need durable storage (durable.data_dir)',
              'groups_not_durable',
            ),
          );
        }
        return this.groups.answer(auth, msg, a.conn);
    }
  }

  private async watch(a: ServeArgs, msg: Extract<Message, { type: 'cache_watch' }>) {
    let ids = this.watchIds.get(a.conn);
    if (ids === undefined) {
      ids = new Set();
      this.watchIds.set(a.conn, ids);
    }
    try {
      if (ids.size >= WATCHES_PER_CONNECTION_MAX) {
        throw new RequestRefusedError(
          'limit_exceeded',
          'fatal',
          `at most ${WATCHES_PER_CONNECTION_MAX} watches per connection`,
          'watch_limit',
        );
      }
      const id = msg.subscription_id ?? firstFree(ids);
      if (ids.has(id)) {
        throw new RequestRefusedError(
          'invalid_request',
          'fatal',
          `watch id ${id} is in use`,
          'duplicate_watch',
        );
      }
      const opening = await openWatch(
        this.caches,
        a.auth,
        msg,
        this.cfg.broker.watch_queue_capacity,
      ).catch((err: unknown) => {
        throw storageRefusal('cache watch', err);
      });
      if (opening.kind === 'cursor_error') {
        this.brokerMetrics.badInput.inc({ reason: 'cursor_in_future' });
        await a.stream.write(
          jsonFrame({
            type: 'subscribe_cursor_error',
            reason: 'in_future',
            requested: opening.requested,
            available: opening.available,
          }),
        );
        return;
      }
      ids.add(id);
      const writer = new WatchWriter(a.conn, id, opening.watch, this.metrics);
      await a.stream.write(
        jsonFrame({
          type: 'cache_watch_started',
          subscription_id: id,
          resume_offset: opening.resumeOffset,
          resnapshot: opening.resnapshot,
          ...(opening.retainedCount !== undefined ? { retained_count: opening.retainedCount } : {}),
        }),
      );
      const held = ids;
      void a.stream.closed.then(() => writer.stop());
      void writer.run().finally(() => held.delete(id));
    } catch (err) {
      const frame = this.errorFrame(a.auth, msg.type, err);
      await a.stream.write(frame).catch(() => undefined);
    }
  }

  private errorFrame(auth: Negotiated, type: string, err: unknown): Uint8Array {
    const r = err instanceof RequestRefusedError ? err : storageRefusal(type, err);
    this.metrics.refusals.inc({ type, code: r.wireCode });
    if (r.wireCode !== 'storage' && r.wireCode !== 'internal' && r.wireCode !== 'draining') {
      this.brokerMetrics.badInput.inc({ reason: r.reason });
    }
    return jsonFrame(
      has(auth.features, FEATURE_ERROR_CODES)
        ? { type: 'error', message: r.message, code: r.wireCode, retry: r.wireRetry }
        : { type: 'error', message: r.message },
    );
  }

  /** The broker is draining: waiting polls answer now. */
  drain(): void {
    this.groups?.drain();
  }

  async close(): Promise<void> {
    await this.groups?.close();
    await this.caches.close();
  }
}

function firstFree(ids: Set<number>): number {
  // Ids the broker picks sit far above the ones clients count up from 1.
  let id = 0x4000_0000;
  while (ids.has(id)) id++;
  return id;
}
