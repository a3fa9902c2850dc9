/**
 * The broker's configs for the items of the control plane's catalog feeds (streams, caches):
 * each parsed field by field, a malformed item answering null (the shard table ignores it).
 */
import type { BrokerConfig, CacheConfig, StreamConfig } from '../config/types.js';

/** A string field, or null. */
export function str(x: unknown): string | null {
  return typeof x === 'string' ? x : null;
}

/** A non-negative safe integer field, or null. */
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
    default_ttl_ms: null,
    consistency: String(c.consistency).toLowerCase() === 'quorum' ? 'quorum' : 'leader',
    replication_factor: posInt(c.replication_factor) ?? 1,
  };
}
