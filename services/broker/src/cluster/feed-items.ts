/**
 * The control plane's feed items as this broker reads them: a catalog stream or cache, and a
 * shard assignment. Parsing never throws: a malformed item is null and the table logs it.
 */
import type { BrokerConfig, CacheConfig, StreamConfig } from '../config/types.js';
import { CACHE_TTL_MS_MAX, NAME_UID_CHARS_MAX } from '../limits.js';

export type ShardKind = 'stream' | 'cache';

export interface AssignmentRecord {
  tenant_id: string;
  namespace: string;
  kind: ShardKind;
  stream: string;
  shard: number;
  leader: string;
  /** Every node holding a copy (the leader included), as placement chose them. */
  replicas: string[];
  generation: number;
  /** The generation an accepted loss restarted the shard at (absent: never; shard-lineages.ts). */
  floor_generation?: number;
  /** The node whose copy that restart continued (absent: it restarted empty). */
  floor_base?: string;
}

/** The generation at which `nodeId` follows the shard, when it is a replica but not the leader. */
export function replicaGenerationOf(
  a: AssignmentRecord | undefined,
  nodeId: string,
): number | undefined {
  if (a === undefined || a.leader === nodeId || !a.replicas.includes(nodeId)) return undefined;
  return a.generation;
}

export function shardKey(kind: string, t: string, ns: string, name: string, shard: number): string {
  return `${kind}\u0000${t}\u0000${ns}\u0000${name}\u0000${shard}`;
}

/** A shard key as log lines name the shard: `t/ns/stream/i` as "shard opened" does, and
 *  `cache:t/ns/cache/i` for a cache's (never the key's NULs, which some log pipelines break on). */
export function shardLabel(key: string): string {
  const [kind, ...rest] = key.split('\u0000');
  if (rest.length === 0) return key; // not a shard key (tests name shards freely)
  const label = rest.join('/');
  return kind === 'stream' ? label : `${kind}:${label}`;
}

export function str(x: unknown): string | null {
  return typeof x === 'string' ? x : null;
}

export function posInt(x: unknown): number | null {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : null;
}

/** The broker's stream config for a catalog-feed stream item, or null when it is malformed. */
export function streamFromCatalog(item: unknown, cfg: BrokerConfig): StreamConfig | null {
  if (typeof item !== 'object' || item === null) return null;
  const s = item as Record<string, unknown>;
  const tenant = str(s.tenant_id);
  const namespace = str(s.namespace);
  const name = str(s.stream);
  const shards = posInt(s.shards);
  if (tenant === null || namespace === null || name === null || shards === null || shards < 1)
    return null;
  const durable = s.durable === true;
  const retention = (s.retention ?? {}) as Record<string, unknown>;
  return {
    tenant,
    namespace,
    name,
    shards,
    durable,
    fsync: cfg.durable.fsync_mode,
    fsync_interval_ms: cfg.durable.fsync_interval_ms,
    // Retention bounds durable logs only; an in-memory stream is bounded by its ring.
    retention: durable
      ? {
          max_bytes: posInt(retention.max_size_bytes),
          max_age_seconds: posInt(retention.max_age_seconds),
        }
      : { max_bytes: null, max_age_seconds: null },
    routing: s.routing === 'jump_hash' ? 'jump_hash' : 'modulo',
    // The control plane spells it `Leader` / `Quorum`; anything else is the default.
    consistency: String(s.consistency).toLowerCase() === 'quorum' ? 'quorum' : 'leader',
    replication_factor: posInt(s.replication_factor) ?? 1,
    ...uidOf(s.uid),
  };
}

/** The broker's cache config for a catalog-feed cache item, or null when it is malformed. */
export function cacheFromCatalog(item: unknown, cfg: BrokerConfig): CacheConfig | null {
  if (typeof item !== 'object' || item === null) return null;
  const c = item as Record<string, unknown>;
  const tenant = str(c.tenant_id);
  const namespace = str(c.namespace);
  const name = str(c.cache);
  const shards = posInt(c.shards);
  if (tenant === null || namespace === null || name === null || shards === null || shards < 1)
    return null;
  // Caches are log-backed exactly when the broker has a data dir (as in standalone mode).
  return {
    tenant,
    namespace,
    name,
    shards,
    durable: cfg.durable.data_dir !== null,
    default_ttl_ms: defaultTtlOf(c.default_ttl_ms),
    consistency: String(c.consistency).toLowerCase() === 'quorum' ? 'quorum' : 'leader',
    replication_factor: posInt(c.replication_factor) ?? 1,
    ...uidOf(c.uid),
  };
}

/** A catalog item's creation id when it has a usable one ('' or absent: none). */
function uidOf(x: unknown): { uid?: string } {
  return typeof x === 'string' && x.length > 0 && x.length <= NAME_UID_CHARS_MAX ? { uid: x } : {};
}

/** A catalog cache's default TTL: a positive whole number of ms within the put bound, or none. */
function defaultTtlOf(x: unknown): number | null {
  const ms = posInt(x);
  return ms !== null && ms >= 1 && ms <= CACHE_TTL_MS_MAX ? ms : null;
}

/** An assignment of the feed, or null when it is malformed. */
export function assignmentFrom(item: unknown): AssignmentRecord | null {
  if (typeof item !== 'object' || item === null) return null;
  const a = item as Record<string, unknown>;
  const kind = a.kind === 'stream' || a.kind === 'cache' ? a.kind : null;
  const t = str(a.tenant_id);
  const ns = str(a.namespace);
  const name = str(a.stream);
  const shard = posInt(a.shard);
  const leader = str(a.leader);
  const generation = posInt(a.generation);
  if (
    kind === null ||
    t === null ||
    ns === null ||
    name === null ||
    shard === null ||
    leader === null ||
    generation === null
  )
    return null;
  const replicas = Array.isArray(a.replicas)
    ? a.replicas.filter((r): r is string => typeof r === 'string')
    : [leader];
  const rec: AssignmentRecord = {
    tenant_id: t,
    namespace: ns,
    kind,
    stream: name,
    shard,
    leader,
    replicas,
    generation,
  };
  if (a.floor_generation !== undefined) {
    // Malformed, it could hide a copy that must be discarded: the assignment is not taken.
    const floor = posInt(a.floor_generation);
    if (floor === null) return null;
    if (floor > 0) rec.floor_generation = floor;
  }
  if (a.floor_base !== undefined) {
    const base = str(a.floor_base);
    if (base === null) return null;
    if (rec.floor_generation !== undefined) rec.floor_base = base;
  }
  return rec;
}
