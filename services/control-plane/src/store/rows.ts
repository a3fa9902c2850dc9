/**
 * Reading rows back into records. Both engines hand back loosely typed columns (Postgres BIGINT
 * as numbers, SQLite integers, JSON kept as TEXT), so every record is rebuilt here, once.
 */
import type {
  AssignmentKey,
  AssignmentRecord,
  Cache,
  Consistency,
  Lifecycle,
  Namespace,
  NodeLiveness,
  NodeRecord,
  Routing,
  Stream,
  Tenant,
} from './types.js';

export type Row = Record<string, unknown>;

export const num = (v: unknown): number => Number(v);
export const str = (v: unknown): string => String(v);
export const numOrNull = (v: unknown): number | null =>
  v === null || v === undefined ? null : Number(v);
const strOrNull = (v: unknown): string | null => (v === null ? null : String(v));

export function tenantOf(r: Row): Tenant {
  return { tenant_id: str(r.tenant_id), display_name: str(r.display_name) };
}

export function namespaceOf(r: Row): Namespace {
  return {
    tenant_id: str(r.tenant_id),
    namespace: str(r.namespace),
    display_name: str(r.display_name),
  };
}

export function streamOf(r: Row): Stream {
  return {
    tenant_id: str(r.tenant_id),
    namespace: str(r.namespace),
    stream: str(r.stream),
    kind: 'Stream',
    shards: num(r.shards),
    replication_factor: num(r.replication_factor),
    retention: {
      max_age_seconds: numOrNull(r.retention_max_age_seconds),
      max_size_bytes: numOrNull(r.retention_max_size_bytes),
    },
    consistency: str(r.consistency) as Consistency,
    durable: num(r.durable) === 1,
    routing: str(r.routing) as Routing,
    uid: uidOf(r),
  };
}

export function cacheOf(r: Row): Cache {
  return {
    tenant_id: str(r.tenant_id),
    namespace: str(r.namespace),
    cache: str(r.cache),
    display_name: str(r.display_name),
    shards: num(r.shards),
    replication_factor: num(r.replication_factor),
    consistency: str(r.consistency) as Consistency,
    default_ttl_ms:
      r.default_ttl_ms === null || r.default_ttl_ms === undefined ? null : num(r.default_ttl_ms),
    uid: uidOf(r),
  };
}

/** A catalog row's creation id ('' for a row created before the column existed). */
function uidOf(r: Row): string {
  return typeof r.uid === 'string' ? r.uid : '';
}

export function nodeOf(r: Row): NodeRecord {
  return {
    node_id: str(r.node_id),
    spec: {
      advertise_addr: str(r.advertise_addr),
      client_addr: strOrNull(r.client_addr),
      region: str(r.region),
      zone: strOrNull(r.zone),
      labels: JSON.parse(str(r.labels)) as Record<string, string>,
      capacity: { max_shards: num(r.capacity_max_shards), weight: num(r.capacity_weight) },
      durable_storage: num(r.durable_storage) !== 0,
    },
    status: {
      lifecycle: str(r.lifecycle) as Lifecycle,
      incarnation: num(r.incarnation),
      last_heartbeat_at_ms: num(r.last_heartbeat_at_ms),
      registered_at_ms: num(r.registered_at_ms),
    },
  };
}

/** The narrow node row placement reads. */
export function livenessOf(r: Row): NodeLiveness {
  return {
    node_id: str(r.node_id),
    zone: strOrNull(r.zone),
    lifecycle: str(r.lifecycle) as Lifecycle,
    last_heartbeat_at_ms: num(r.last_heartbeat_at_ms),
    max_shards: num(r.capacity_max_shards),
    durable_storage: num(r.durable_storage) !== 0,
    registered_at_ms: num(r.registered_at_ms),
  };
}

export function assignmentOf(r: Row): AssignmentRecord {
  const a: AssignmentRecord = {
    tenant_id: str(r.tenant_id),
    namespace: str(r.namespace),
    kind: str(r.kind) as AssignmentRecord['kind'],
    stream: str(r.name),
    shard: num(r.shard),
    leader: str(r.leader),
    replicas: JSON.parse(str(r.replicas)) as string[],
    generation: num(r.generation),
    state: 'active',
  };
  if (r.routing !== null && r.routing !== undefined) a.routing = str(r.routing) as Routing;
  const floor = r.floor_generation === undefined ? 0 : num(r.floor_generation);
  if (floor > 0) a.floor_generation = floor;
  if (floor > 0 && r.floor_base !== null && r.floor_base !== undefined)
    a.floor_base = str(r.floor_base);
  return a;
}

/** An assignment's key as a change row carries it (`stream` names the resource of any kind). */
export function assignmentKeyOf(a: AssignmentKey): Record<string, string | number> {
  return {
    tenant_id: a.tenant_id,
    namespace: a.namespace,
    kind: a.kind,
    stream: a.stream,
    shard: a.shard,
  };
}

/** The key of an assignment row (column `name`), as a change row carries it. */
export function assignmentRowKey(r: Row): Record<string, string | number> {
  return {
    tenant_id: str(r.tenant_id),
    namespace: str(r.namespace),
    kind: str(r.kind),
    stream: str(r.name),
    shard: num(r.shard),
  };
}

/** One string per shard, for matching assignments to the resources they place. */
export function shardId(kind: string, t: string, ns: string, name: string, shard: number): string {
  return `${kind}\u0000${t}\u0000${ns}\u0000${name}\u0000${shard}`;
}

/** A LIKE pattern matching a JSON array that holds `id` (names may contain `_`, a wildcard). */
export function likeMember(id: string): string {
  return `%${JSON.stringify(id).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
