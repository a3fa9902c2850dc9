/**
 * The sharded catalog resources, streams and caches, described as data: table, name column,
 * columns, which of them a patch may change, and how the record reads back. One generic
 * repository (`catalog.ts`) and placement (`assignments.ts`) work from these descriptions.
 */
import type { ShardKind } from '@felix/router';
import {
  CacheNotFoundError,
  type ControlPlaneError,
  InvalidRequestError,
  StreamNotFoundError,
} from '../errors.js';
import { type Row, cacheOf, num, str, streamOf } from './rows.js';
import type { Sql, SqlParam } from './sql.js';
import type { Cache, Consistency, Retention, Routing, Stream } from './types.js';

export interface CatalogKind<T, P> {
  /** The shard kind placement and assignments use; also the word in messages. */
  kind: ShardKind;
  feed: 'streams' | 'caches';
  table: 'streams' | 'caches';
  nameCol: 'stream' | 'cache';
  /** Whether the resource chooses its routing (placement carries it into assignments). */
  routed: boolean;
  /** Every stored column with the item's value, key columns first (created_at_ms excluded). */
  columns(item: T): Record<string, SqlParam>;
  /** The columns a patch may change. */
  mutable: readonly string[];
  of(r: Row): T;
  nameOf(item: T): string;
  routingOf(item: T): Routing | undefined;
  applyPatch(cur: T, patch: P): T;
  /** Refuses settings that do not go together (a create's, or a patch's result). */
  check(item: T): void;
  notFound(message: string): ControlPlaneError;
}

/** What a stream's PATCH may change: shards, replication, routing and durability are fixed
 *  (`durable` is taken only at its current value). */
export interface StreamPatch {
  retention?: Retention | undefined;
  consistency?: Consistency | undefined;
  durable?: boolean | undefined;
}

/** What a cache's PATCH may change: its display name and its default TTL. */
export interface CachePatch {
  display_name?: string;
  /** null: puts that name no TTL keep their values for good. */
  default_ttl_ms?: number | null;
}

export const STREAMS: CatalogKind<Stream, StreamPatch> = {
  kind: 'stream',
  feed: 'streams',
  table: 'streams',
  nameCol: 'stream',
  routed: true,
  columns: (st) => ({
    tenant_id: st.tenant_id,
    namespace: st.namespace,
    stream: st.stream,
    shards: st.shards,
    replication_factor: st.replication_factor,
    retention_max_age_seconds: st.retention.max_age_seconds,
    retention_max_size_bytes: st.retention.max_size_bytes,
    consistency: st.consistency,
    durable: st.durable ? 1 : 0,
    routing: st.routing,
    uid: st.uid,
  }),
  mutable: ['retention_max_age_seconds', 'retention_max_size_bytes', 'consistency'],
  of: streamOf,
  nameOf: (st) => st.stream,
  routingOf: (st) => st.routing,
  applyPatch: (cur, patch) => {
    // A broker serves a durable stream from its log on disk and an in-memory one from its ring:
    // switched, the shard reopens on the other and hands out offsets it acknowledged before
    // (JetStream refuses a storage change alike). The same value is no change.
    if (patch.durable !== undefined && patch.durable !== cur.durable)
      throw new InvalidRequestError(
        `durable is fixed at creation (${cur.stream} is ${cur.durable ? 'durable' : 'in memory'}): a stream switched would serve its offsets again from an empty log; create a new stream instead`,
      );
    return {
      ...cur,
      retention: patch.retention ?? cur.retention,
      consistency: patch.consistency ?? cur.consistency,
    };
  },
  check: (st) => {
    const r = st.retention;
    // A broker bounds only a durable stream's log (an in-memory one, its ring): refused, not
    // stored and silently ignored.
    if (!st.durable && (r.max_age_seconds !== null || r.max_size_bytes !== null))
      throw new InvalidRequestError(
        'retention bounds a durable stream only: set durable: true, or leave retention out (an in-memory stream keeps what its broker ring holds)',
      );
  },
  notFound: (message) => new StreamNotFoundError(message),
};

export const CACHES: CatalogKind<Cache, CachePatch> = {
  kind: 'cache',
  feed: 'caches',
  table: 'caches',
  nameCol: 'cache',
  routed: false,
  columns: (c) => ({
    tenant_id: c.tenant_id,
    namespace: c.namespace,
    cache: c.cache,
    display_name: c.display_name,
    shards: c.shards,
    replication_factor: c.replication_factor,
    consistency: c.consistency,
    default_ttl_ms: c.default_ttl_ms,
    uid: c.uid,
  }),
  mutable: ['display_name', 'default_ttl_ms'],
  of: cacheOf,
  nameOf: (c) => c.cache,
  routingOf: () => undefined,
  check: () => undefined,
  applyPatch: (cur, patch) => ({
    ...cur,
    display_name: patch.display_name ?? cur.display_name,
    default_ttl_ms: patch.default_ttl_ms === undefined ? cur.default_ttl_ms : patch.default_ttl_ms,
  }),
  notFound: (message) => new CacheNotFoundError(message),
};

/** What placement needs of one resource. */
export interface ShardedResource {
  kind: ShardKind;
  tenant_id: string;
  namespace: string;
  name: string;
  shards: number;
  replication_factor: number;
  routing?: Routing | undefined;
  /** Read by placement passes (a create places without them). */
  consistency?: Consistency;
  /** Whether the resource keeps a log that must survive a failover (streams say; caches: no). */
  durable?: boolean;
}

/** Every resource of `kind`, read narrowly (placement reads the whole catalog each pass). */
export async function shardedResources(
  q: Sql,
  kind: CatalogKind<unknown, unknown>,
): Promise<ShardedResource[]> {
  const stream = kind.kind === 'stream';
  const cols = `tenant_id, namespace, ${kind.nameCol}, shards, replication_factor, consistency`;
  const more = `${kind.routed ? ', routing' : ''}${stream ? ', durable' : ''}`;
  const rows = await q.query<Row>(`SELECT ${cols}${more} FROM ${kind.table}`);
  return rows.map((r) => ({
    kind: kind.kind,
    tenant_id: str(r.tenant_id),
    namespace: str(r.namespace),
    name: str(r[kind.nameCol]),
    shards: num(r.shards),
    replication_factor: num(r.replication_factor),
    routing: kind.routed ? (str(r.routing) as Routing) : undefined,
    consistency: str(r.consistency) as Consistency,
    durable: stream && num(r.durable) === 1,
  }));
}
