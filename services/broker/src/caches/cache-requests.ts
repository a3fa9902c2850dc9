/**
 * Answers `cache_put`, `cache_get` and `cache_delete`, and opens `cache_watch`es. Each checks its
 * input, finds the shard and answers the message to write, or throws a Refusal; a failed read is
 * a refusal, never a `null` value.
 */
import {
  type CacheWatch,
  GenerationStarts,
  type LogCache,
  type WatchFilter,
  type WatchStart,
  nodeIo,
} from '@felix/storage';
import {
  FEATURE_CACHE_WATCH_RETAINED,
  FEATURE_HI_CACHE_BINARY,
  type Message,
  encodeCacheValue,
  valueAnswerFrame,
  valueAnswerHead,
} from '@felix/wire';
import { CACHE_TTL_MS_MAX, CACHE_VALUE_BYTES_MAX } from '../limits.js';
import { type Negotiated, has } from '../session/negotiation.js';
import { Refusal, checkTenant } from '../session/refusal.js';
import { type CacheService, checkKey, storageRefusal } from './cache-service.js';
import type { Hot } from './hot-values.js';
import { type GenerationStartEntry, partingPoint } from '../util/log-history.js';

type Msg<T extends Message['type']> = Extract<Message, { type: T }>;

/** The options of a put without a ttl (one object, not one per put). */
const NO_TTL = Object.freeze({});

/** What a put names, checked: its cache, shard and ttl (a Refusal for what is not served). */
function checkPut(svc: CacheService, auth: Negotiated, msg: Msg<'cache_put'>) {
  checkTenant(auth, msg.tenant_id);
  const cfg = svc.lookup(msg.tenant_id, msg.namespace, msg.cache);
  const shard = svc.shardOf(cfg, msg.key);
  if (msg.value.byteLength > CACHE_VALUE_BYTES_MAX) {
    const message = `a value of ${msg.value.byteLength} bytes is over ${CACHE_VALUE_BYTES_MAX}, the largest whose answers fit a frame`;
    throw new Refusal('invalid_request', message, 'bad_value');
  }
  const ttl = msg.ttl_ms ?? cfg.default_ttl_ms ?? undefined;
  if (ttl !== undefined && (!Number.isSafeInteger(ttl) || ttl < 0 || ttl > CACHE_TTL_MS_MAX)) {
    throw new Refusal('invalid_request', `ttl_ms ${ttl} outside 0..${CACHE_TTL_MS_MAX}`, 'bad_ttl');
  }
  return { cfg, shard, ttl };
}

function putAnswer(msg: Msg<'cache_put'>): Message {
  return msg.request_id === undefined
    ? { type: 'ok' }
    : { type: 'cache_ok', request_id: msg.request_id };
}

/**
 * A put on an in-memory cache, done before it returns: the answer to write, or a thrown
 * refusal. Undefined when caches are log-backed (their puts append and wait for an fsync:
 * `cachePut`). Its hot value is forgotten, as by any write; an in-memory cache remembers none
 * of its own (the first get builds the answer).
 */
export function cachePutNow(
  svc: CacheService,
  auth: Negotiated,
  msg: Msg<'cache_put'>,
): Message | undefined {
  if (svc.durable) return undefined;
  const { cfg, shard, ttl } = checkPut(svc, auth, msg);
  const cache = svc.memoryCache(cfg, shard)!;
  // Moved before the write: a get's read racing it (none can in one turn) would not be kept.
  if (svc.hot !== null) svc.hot.invalidate(svc.hotScope(cfg, shard), msg.key);
  try {
    // Handed over, not copied again: the wire's readers decode every value (binary or base64)
    // into an allocation of its own that nothing else keeps.
    cache.putNowHandedOver(msg.key, msg.value, ttl === undefined ? NO_TTL : { ttlMs: ttl });
  } catch (err) {
    throw storageRefusal('cache put', err);
  }
  return putAnswer(msg);
}

export async function cachePut(
  svc: CacheService,
  auth: Negotiated,
  msg: Msg<'cache_put'>,
): Promise<Message | null> {
  const { cfg, shard, ttl } = checkPut(svc, auth, msg);
  const cache = await svc.cache(cfg, shard);
  const hot = svc.hot;
  const scope = svc.hotScope(cfg, shard);
  const begun = hot?.beginWrite(scope, msg.key);
  // Taken before the cache takes its own clock reading, so the hot copy never outlives the value.
  const expiresAtMillis = ttl === undefined || ttl === 0 ? 0 : Date.now() + ttl;
  let written: Hot | undefined;
  // The hot value's write ends when the put is applied, not when it is answered: a quorum put
  // answered `quorum_timeout` is still applied once the mark covers it (cache-service.ts).
  const put = async () => {
    try {
      await cache.put(msg.key, msg.value, ttl === undefined ? {} : { ttlMs: ttl });
      // The value just written is the key's current one: the next get answers it from memory
      // instead of reading the log. An in-memory cache has no log read to save: its first get
      // builds the answer instead, so a put that is never read costs no encoding.
      if (hot !== null && svc.durable)
        written = {
          head: valueAnswerHead(msg, msg.key, msg.value),
          value: msg.value,
          expiresAtMillis,
        };
    } finally {
      if (begun !== undefined) hot!.endWrite(scope, msg.key, begun, written);
    }
  };
  try {
    await svc.acked('cache', cfg, shard, put);
  } catch (err) {
    throw storageRefusal('cache put', err);
  }
  return putAnswer(msg);
}

/**
 * The answer frame of a get whose key is hot, built without awaiting anything; undefined when
 * it is not (then `cacheGet` reads the shard). Throws a refusal for a request it cannot serve.
 */
export function hotGetFrame(
  svc: CacheService,
  auth: Negotiated,
  msg: Msg<'cache_get'>,
): Uint8Array | undefined {
  const hot = svc.hot;
  if (hot === null || svc.isClosed) return undefined;
  checkTenant(auth, msg.tenant_id);
  const cfg = svc.lookup(msg.tenant_id, msg.namespace, msg.cache);
  const known = hot.get(svc.hotScope(cfg, svc.shardOf(cfg, msg.key)), msg.key, Date.now());
  if (known === undefined) return undefined;
  const rid = msg.request_id;
  return rid !== undefined && binaryCache(auth)
    ? encodeCacheValue(rid, known.value)
    : valueAnswerFrame(known.head, rid);
}

/**
 * The stream's client negotiated the binary cache exchange: its gets and puts that carry a
 * request id are answered in binary, whichever form the request came in.
 */
export function binaryCache(auth: Negotiated): boolean {
  return (auth.featuresHi & FEATURE_HI_CACHE_BINARY) !== 0;
}

/** A get read from the shard (remembered as hot when no write raced it), or a delete. */
export async function cacheGet(
  svc: CacheService,
  auth: Negotiated,
  msg: Msg<'cache_get'> | Msg<'cache_delete'>,
): Promise<Message> {
  checkTenant(auth, msg.tenant_id);
  const cfg = svc.lookup(msg.tenant_id, msg.namespace, msg.cache);
  const shard = svc.shardOf(cfg, msg.key);
  const cache = await svc.cache(cfg, shard);
  const hot = svc.hot;
  const scope = svc.hotScope(cfg, shard);
  let value: Uint8Array | undefined;
  try {
    if (msg.type === 'cache_get') {
      const at = hot?.capture(scope, msg.key);
      const entry = await cache.getEntry(msg.key);
      value = entry?.value;
      if (entry !== undefined && at !== undefined) {
        hot!.remember(scope, msg.key, at, {
          head: valueAnswerHead(msg, msg.key, entry.value),
          value: entry.value,
          expiresAtMillis: entry.expiresAtMillis,
        });
      }
    } else {
      const begun = hot?.beginWrite(scope, msg.key);
      value = await svc.acked('cache', cfg, shard, async () => {
        try {
          return await cache.delete(msg.key);
        } finally {
          if (begun !== undefined) hot!.endWrite(scope, msg.key, begun);
        }
      });
    }
  } catch (err) {
    throw storageRefusal(msg.type === 'cache_get' ? 'cache get' : 'cache delete', err);
  }
  return cacheValueOf(msg, value);
}

/** The `cache_value` answer to a request on `msg.key` (a get, a delete, or a forwarded delete),
 *  built field by field (no spread objects). */
export function cacheValueOf(
  msg: { tenant_id: string; namespace: string; cache: string; key: string; request_id?: number },
  value: Uint8Array | undefined,
): Msg<'cache_value'> {
  const out: Msg<'cache_value'> = {
    type: 'cache_value',
    tenant_id: msg.tenant_id,
    namespace: msg.namespace,
    cache: msg.cache,
    key: msg.key,
  };
  if (value !== undefined) out.value = value;
  if (msg.request_id !== undefined) out.request_id = msg.request_id;
  return out;
}

export type WatchOpening =
  | {
      kind: 'started';
      watch: CacheWatch;
      resumeOffset: number;
      resnapshot: boolean;
      retainedCount?: number;
      /** The newest generation the cache log's records carry and where they start. */
      history?: GenerationStartEntry;
    }
  | { kind: 'cursor_error'; requested: number; available: number };

/** Validates a `cache_watch` and registers it (register-before-read happens in the cache). */
export async function openWatch(
  svc: CacheService,
  auth: Negotiated,
  msg: Msg<'cache_watch'>,
  queueCapacity: number,
): Promise<WatchOpening> {
  checkTenant(auth, msg.tenant_id);
  const cfg = svc.lookup(msg.tenant_id, msg.namespace, msg.cache);
  const bad = (message: string, reason: string) => new Refusal('invalid_request', message, reason);
  if ((msg.key === undefined) === (msg.prefix === undefined))
    throw bad('a watch names exactly one of key and prefix', 'watch_filter');
  if (msg.retained && !has(auth.features, FEATURE_CACHE_WATCH_RETAINED))
    throw bad('retained was not negotiated', 'watch_retained_not_negotiated');
  if (msg.retained && msg.from_offset !== undefined)
    throw bad('retained and from_offset cannot be combined', 'watch_retained_with_offset');
  let shard: number;
  let filter: WatchFilter;
  if (msg.key !== undefined) {
    shard = svc.shardOf(cfg, msg.key);
    if (msg.shard !== undefined && msg.shard !== shard)
      throw bad(`key ${msg.key} belongs to shard ${shard}, not ${msg.shard}`, 'watch_shard');
    filter = { key: msg.key };
  } else {
    if (msg.prefix!.length > 0) checkKey(msg.prefix!);
    if (msg.shard === undefined && cfg.shards > 1)
      throw bad('a prefix watch on a multi-shard cache names its shard', 'watch_shard');
    shard = msg.shard ?? 0;
    if (shard >= cfg.shards)
      throw bad(`shard ${shard} out of range (cache has ${cfg.shards})`, 'shard_out_of_range');
    filter = { prefix: msg.prefix! };
  }
  const cache = await svc.cache(cfg, shard);
  const history = svc.durable ? await generationsOf(cache as LogCache) : [];
  let start: WatchStart = { kind: msg.retained ? 'retained' : 'live' };
  let parted = false;
  if (msg.from_offset !== undefined) {
    if (!svc.durable)
      throw bad('an in-memory cache keeps no history to resume from', 'watch_from_memory');
    // Checked whatever the consistency: a quorum cache led with no follower in its set serves
    // its replay unheld, and a spurious `resnapshot` costs a watcher a refill, not a change.
    parted = partedBelow(history, msg, msg.from_offset);
    const frontier = (cache as LogCache).frontier;
    if (!parted && msg.from_offset > frontier)
      return { kind: 'cursor_error', requested: msg.from_offset, available: frontier };
    // A log that parted below the offset (a `leader` cache's failover) holds other changes
    // there: the watcher starts over from the current values, told by `resnapshot`.
    start = parted ? { kind: 'retained' } : { kind: 'from', offset: msg.from_offset };
  }
  let watch: CacheWatch;
  try {
    watch = cache.watch(filter, start, { queueCapacity });
  } catch (err) {
    throw storageRefusal('cache watch', err);
  }
  const newest = history.at(-1);
  return {
    kind: 'started',
    watch,
    resumeOffset: watch.resumeOffset,
    resnapshot: watch.resnapshot || parted,
    ...(watch.retainedCount !== undefined ? { retainedCount: watch.retainedCount } : {}),
    ...(newest !== undefined ? { history: newest } : {}),
  };
}

/** The generation starts of a durable cache's log (none for an unreplicated one). */
async function generationsOf(cache: LogCache): Promise<readonly GenerationStartEntry[]> {
  const dir = (cache.log as { dir?: string }).dir;
  if (dir === undefined) return [];
  return (await GenerationStarts.open(nodeIo, dir)).all;
}

/** Whether the log parted, below `offset`, from the history the watch names. */
function partedBelow(
  starts: readonly GenerationStartEntry[],
  msg: Msg<'cache_watch'>,
  offset: number,
): boolean {
  const g = msg.history_generation;
  const from = msg.history_start;
  if (g === undefined || from === undefined || starts.length === 0) return false;
  const at = partingPoint(starts, g, from);
  return at !== undefined && at < offset;
}
