/**
 * The caches declared in the catalog, served per shard: a LogCache on `<data_dir>/caches/` when
 * durable storage is configured, an EphemeralCache in memory otherwise. A key goes to its shard
 * with the routing function streams use (`shardForKey`, modulo). Counters live beside the caches
 * on `<data_dir>/counters/`, addressed the same way, durable storage only.
 */
import {
  type CounterLog,
  CounterOverflowError,
  EphemeralCache,
  type Io,
  type LogCache,
  ProjectionClosedError,
  ProjectionInputError,
  ProjectionReleasedError,
  type ProjectionShards,
  type SegmentLog,
  type ShardId,
  cacheShards,
  counterShards,
  shardDirName,
} from '@felix/storage';
import { shardForKey } from '@felix/wire';
import type { BrokerConfig, CacheConfig } from '../config/types.js';
import { CACHE_KEY_BYTES_MAX } from '../limits.js';
import { Refusal } from '../session/refusal.js';
import { CommitWaiters } from './commit-waiters.js';
import { HotScope, HotValues } from './hot-values.js';

export type ServedCache = LogCache | EphemeralCache;

/** The logs of a cache shard a write goes to. */
export type CacheLogKind = 'cache' | 'counters';

const UTF8 = new TextEncoder();

function cacheKey(tenant: string, namespace: string, name: string): string {
  return `${tenant}\u0000${namespace}\u0000${name}`;
}

export class CacheService {
  /** Declared caches by tenant, namespace, name (no key string is built per request). */
  private readonly byScope = new Map<string, Map<string, Map<string, CacheConfig>>>();
  /**
   * The hot-value scope of each shard, per cache name (tenant, namespace, name): a config that
   * replaces another of the same name shares its scopes, so a write under one config voids a
   * read racing it under the other. Kept for every name ever served (forgetting a cache clears
   * the values but not the scopes, which a request in flight may still hold).
   */
  private readonly hotScopesByName = new Map<string, HotScope[]>();
  /** The same arrays per config object (no name string built per request). */
  private readonly hotScopes = new WeakMap<CacheConfig, HotScope[]>();
  private readonly logCaches: ProjectionShards<LogCache> | null;
  private readonly counterLogs: ProjectionShards<CounterLog> | null;
  /** Every in-memory shard made (closed with the service). */
  private readonly ephemeral = new Set<EphemeralCache>();
  /** In-memory shards per cache name (tenant, namespace, name), and the same arrays per config
   *  object (no name string built per request). */
  private readonly ephemeralByName = new Map<string, EphemeralCache[]>();
  private readonly ephemeralShards = new WeakMap<CacheConfig, EphemeralCache[]>();
  /** Log-backed shards opened since start, per config (what the expiry pass visits). */
  private readonly opened = new Map<CacheConfig, Set<number>>();
  private closed = false;
  /**
   * The commit wait of each log of each replicated `quorum` cache shard this broker leads (by
   * log kind and shard directory name); absent: writes are acked on this broker alone.
   */
  private readonly commitWaits = new Map<string, CommitWaiters>();
  /**
   * Hot values in front of the caches: each held as its encoded `cache_value` answer, so a hot
   * get encodes nothing. In memory too, where the value itself is already in memory: the
   * answer's encoding is what a get would otherwise build again each time. Null only when the
   * bound is 0.
   */
  readonly hot: HotValues | null;

  constructor(
    cfg: BrokerConfig,
    io?: Io,
    /** Each quorum write's outcome (metrics). */
    private readonly onQuorumWait: (o: 'committed' | 'timeout' | 'abandoned') => void = () => {},
  ) {
    for (const c of cfg.caches) this.define(c);
    const root = cfg.durable.data_dir;
    // Acknowledged only once durable: a cache write is an append like an onCommit publish.
    const commitGate = (kind: string, id: ShardId, next: number) =>
      this.commitWaits.get(waitKey(kind === 'caches' ? 'cache' : kind, id))?.wait(next);
    const store =
      root === null
        ? null
        : { root, fsync: 'onCommit' as const, commitGate, ...(io ? { io } : {}) };
    this.logCaches = store ? cacheShards(store) : null;
    this.counterLogs = store ? counterShards(store) : null;
    this.hot = cfg.broker.cache_hot_bytes > 0 ? new HotValues(cfg.broker.cache_hot_bytes) : null;
  }

  /** The hot values of the cache's shard (keys are the cache keys themselves). */
  hotScope(cache: CacheConfig, shard: number): HotScope {
    let scopes = this.hotScopes.get(cache);
    if (scopes === undefined) {
      const name = cacheKey(cache.tenant, cache.namespace, cache.name);
      scopes = this.hotScopesByName.get(name);
      if (scopes === undefined) {
        scopes = [];
        this.hotScopesByName.set(name, scopes);
      }
      this.hotScopes.set(cache, scopes);
    }
    let scope = scopes[shard];
    if (scope === undefined) {
      scope = this.hot === null ? new HotScope() : this.hot.scope();
      scopes[shard] = scope;
    }
    return scope;
  }

  /** True once the service is closing (every request is refused). */
  get isClosed(): boolean {
    return this.closed;
  }

  /** True when caches are log-backed (watches by offset, counters). */
  get durable(): boolean {
    return this.logCaches !== null;
  }

  /** Control-plane mode: serves a cache the catalog feed announced (replacing its config). */
  define(c: CacheConfig): void {
    let namespaces = this.byScope.get(c.tenant);
    if (namespaces === undefined) {
      namespaces = new Map();
      this.byScope.set(c.tenant, namespaces);
    }
    let names = namespaces.get(c.namespace);
    if (names === undefined) {
      names = new Map();
      namespaces.set(c.namespace, names);
    }
    names.set(c.name, c);
  }

  /**
   * Control-plane mode: the cache was deleted; requests for it answer `not_found`, and no value
   * it held stays hot for a cache of the same name created later (deletes are rare: all go),
   * nor in its in-memory shards (a log-backed one's files are removed by the shard table).
   */
  forget(tenant: string, namespace: string, name: string): void {
    this.hot?.clear();
    const memory = cacheKey(tenant, namespace, name);
    for (const c of this.ephemeralByName.get(memory) ?? []) {
      if (c === undefined) continue; // a shard never used
      this.ephemeral.delete(c);
      void c.close();
    }
    this.ephemeralByName.delete(memory);
    const namespaces = this.byScope.get(tenant);
    const names = namespaces?.get(namespace);
    names?.delete(name);
    if (names?.size === 0) namespaces!.delete(namespace);
    if (namespaces?.size === 0) this.byScope.delete(tenant);
  }

  /** The declared cache, or a `not_found` refusal. */
  lookup(tenant: string, namespace: string, name: string): CacheConfig {
    const c = this.byScope.get(tenant)?.get(namespace)?.get(name);
    if (c === undefined) {
      throw new Refusal('not_found', `cache ${namespace}/${name} not found`, 'unknown_cache');
    }
    return c;
  }

  /** The shard a key belongs to; refuses keys the store cannot hold. */
  shardOf(cache: CacheConfig, key: string): number {
    checkKey(key);
    // One shard needs no hash (and no encoded copy of the key).
    return cache.shards === 1 ? 0 : shardForKey(UTF8.encode(key), cache.shards, 'modulo');
  }

  /**
   * The in-memory shard, without a promise (made on first use); null when caches are log-backed.
   * A `draining` refusal once the service is closing.
   */
  memoryCache(cache: CacheConfig, shard: number): EphemeralCache | null {
    if (this.closed) throw closedRefusal();
    if (this.logCaches !== null) return null;
    let shards = this.ephemeralShards.get(cache);
    if (shards === undefined) {
      // Shared by every config object of the same name: a replaced config serves the same data.
      const name = cacheKey(cache.tenant, cache.namespace, cache.name);
      shards = this.ephemeralByName.get(name);
      if (shards === undefined) {
        shards = [];
        this.ephemeralByName.set(name, shards);
      }
      this.ephemeralShards.set(cache, shards);
    }
    let c = shards[shard];
    if (c === undefined) {
      c = new EphemeralCache();
      shards[shard] = c;
      this.ephemeral.add(c);
    }
    return c;
  }

  async cache(cache: CacheConfig, shard: number): Promise<ServedCache> {
    const memory = this.memoryCache(cache, shard);
    const logCaches = this.logCaches;
    if (memory !== null || logCaches === null) return memory!;
    const id = shardId(cache, shard);
    let shards = this.opened.get(cache);
    if (shards === undefined) {
      shards = new Set();
      this.opened.set(cache, shards);
    }
    shards.add(shard);
    return logCaches.get(id).catch((err: unknown) => {
      throw storageRefusal('open cache shard', err);
    });
  }

  /**
   * The log-backed cache shards opened since start whose cache is still served, for the expiry
   * pass. A shard nobody opened holds no watcher and no hot value; its expired keys read as
   * absent, and are deleted once something opens it.
   */
  *openLogShards(): Generator<{ cache: CacheConfig; shard: number }> {
    for (const [cache, shards] of this.opened) {
      if (this.byScope.get(cache.tenant)?.get(cache.namespace)?.get(cache.name) !== cache) {
        this.opened.delete(cache); // replaced or forgotten: its successor is tracked itself
        continue;
      }
      for (const shard of shards) yield { cache, shard };
    }
  }

  /** The in-memory cache shards made so far (none when caches are log-backed). */
  memoryShards(): Iterable<EphemeralCache> {
    return this.ephemeral;
  }

  /** An opened log-backed shard (never opens one); undefined without durable storage. */
  openedLog(cache: CacheConfig, shard: number): Promise<LogCache> | undefined {
    if (this.logCaches === null || this.closed) return undefined;
    return this.logCaches.get(shardId(cache, shard));
  }

  async counters(cache: CacheConfig, shard: number): Promise<CounterLog> {
    if (this.closed) throw closedRefusal();
    if (this.counterLogs === null) {
      throw new Refusal(
        'invalid_request',
        'counters need durable storage (durable.data_dir)',
        'counters_not_durable',
      );
    }
    return this.counterLogs.get(shardId(cache, shard)).catch((err: unknown) => {
      throw storageRefusal('open counter shard', err);
    });
  }

  /**
   * The log under a shard's cache or counters (opening it), for this broker, its leader, to
   * ship to the shard's followers; null without durable storage.
   */
  async shardLog(kind: 'cache' | 'counters', id: ShardId): Promise<SegmentLog | null> {
    const shards = kind === 'cache' ? this.logCaches : this.counterLogs;
    if (shards === null || this.closed) return null;
    return shards.log(id);
  }

  /**
   * This broker no longer leads the shard: its cache and counter logs close and stay closed
   * until `admitShard` (a replica of them appends meanwhile; the next open replays what it
   * wrote), and no hot value of it stays (leader changes are rare: all go, as on `forget`).
   */
  async releaseShard(id: ShardId): Promise<void> {
    // Writes waiting for a majority are answered `leadership_lost` and never applied here; the
    // lists stay (failing any write still on its way) until this broker leads the shard again.
    for (const kind of ['cache', 'counters'] as const)
      this.commitWaits.get(waitKey(kind, id))?.abandon();
    this.hot?.clear();
    for (const [cache, shards] of this.opened) {
      if (
        cache.tenant === id.tenant &&
        cache.namespace === id.namespace &&
        cache.name === id.stream
      )
        shards.delete(id.shard);
    }
    await this.logCaches?.release(id);
    await this.counterLogs?.release(id);
  }

  /**
   * Writes to `kind` log of shard `id` are applied and acked only once its commit mark covers
   * them, each requester waiting at most `timeoutMs` (null: acked on this broker alone again,
   * releasing every waiting write). Answers the list the mark is told to (`advance`).
   */
  holdToCommit(kind: CacheLogKind, id: ShardId, timeoutMs: number | null): CommitWaiters | null {
    const key = waitKey(kind, id);
    const current = this.commitWaits.get(key);
    if (timeoutMs === null) {
      this.commitWaits.delete(key);
      current?.open();
      return null;
    }
    if (current !== undefined && !current.abandoned) {
      current.timeoutMs = timeoutMs;
      return current;
    }
    const made = new CommitWaiters(`${kind} ${shardDirName(id)}`, timeoutMs, this.onQuorumWait);
    this.commitWaits.set(key, made);
    return made;
  }

  /** Runs a write of `kind` log of the cache's shard, answered as its consistency says. */
  acked<T>(kind: CacheLogKind, cache: CacheConfig, shard: number, write: () => Promise<T>) {
    const waits = this.commitWaits.get(waitKey(kind, shardId(cache, shard)));
    return waits === undefined ? write() : waits.answer(write);
  }

  /** This broker leads the shard (again): its logs may open. */
  admitShard(id: ShardId): void {
    this.logCaches?.admit(id);
    this.counterLogs?.admit(id);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waits of this.commitWaits.values()) waits.abandon();
    for (const c of this.ephemeral) await c.close();
    this.ephemeral.clear();
    this.ephemeralByName.clear();
    await this.logCaches?.close();
    await this.counterLogs?.close();
  }
}

function waitKey(kind: string, id: ShardId): string {
  return `${kind}\u0000${shardDirName(id)}`;
}

function shardId(cache: CacheConfig, shard: number): ShardId {
  return { tenant: cache.tenant, namespace: cache.namespace, stream: cache.name, shard };
}

export function checkKey(key: string): void {
  // A UTF-16 unit is at most 3 UTF-8 bytes: a short key needs no byte count.
  if (key.length > 0 && key.length * 3 <= CACHE_KEY_BYTES_MAX) return;
  const bytes = Buffer.byteLength(key);
  if (bytes === 0 || bytes > CACHE_KEY_BYTES_MAX) {
    throw new Refusal(
      'invalid_request',
      `a key must be 1..${CACHE_KEY_BYTES_MAX} bytes, got ${bytes}`,
      'bad_key',
    );
  }
}

function closedRefusal(): Refusal {
  return new Refusal('draining', 'broker is shutting down', 'draining');
}

/**
 * Maps a storage failure to its wire answer: bad input stays invalid_request, a closing store is
 * draining, anything else is a storage error (a failed read is never reported as a miss).
 */
export function storageRefusal(what: string, err: unknown): Refusal {
  if (err instanceof Refusal) return err;
  if (err instanceof ProjectionInputError || err instanceof CounterOverflowError) {
    return new Refusal('invalid_request', err.message, 'bad_value', { cause: err });
  }
  if (err instanceof ProjectionClosedError) return closedRefusal();
  // Released mid-request: another broker leads the shard now (the client asks the feed again).
  if (err instanceof ProjectionReleasedError)
    return new Refusal('shard_unavailable', err.message, 'not_leader', { cause: err });
  const message = `${what} failed: ${(err as Error).message}`;
  return new Refusal('storage', message, 'storage_error', { cause: err });
}
