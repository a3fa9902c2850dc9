/**
 * The control-plane store: catalog, membership, assignments and change feeds over one SQL
 * driver. Every write is one transaction; every write that changes a feed allocates its sequence
 * numbers from the feed's row in `feed_seq`, which stays locked until commit, so sequence order
 * is commit order on both engines.
 */
import {
  type PlacementNode,
  type PlanEntry,
  type ShardRequest,
  placeShard,
  planPlacement,
} from '@felix/router';
import {
  AddressInUseError,
  AlreadyExistsError,
  CacheNotFoundError,
  InternalError,
  NamespaceNotFoundError,
  NodeNotFoundError,
  NodeStateConflictError,
  NotRegisteredError,
  StaleIncarnationError,
  StreamNotFoundError,
  TenantNotFoundError,
} from '../errors.js';
import {
  CASCADE_ROWS_MAX,
  CHANGE_TRIM_STEP_ROWS,
  INSERT_BATCH_ROWS,
  SNAPSHOT_ROWS_MAX,
} from '../limits.js';
import { type CursorKey, decodeCursor, encodeCursor } from './cursor.js';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
import type { Sql, SqlDriver, SqlParam } from './sql.js';
import type {
  AssignmentKey,
  AssignmentRecord,
  Cache,
  ChangeRecord,
  ChangesPage,
  Consistency,
  FeedName,
  Lifecycle,
  Namespace,
  NodeLiveness,
  NodeRecord,
  Page,
  RegisterInput,
  Retention,
  Routing,
  Snapshot,
  Stream,
  Tenant,
} from './types.js';

type Row = Record<string, unknown>;

interface PendingChange {
  feed: FeedName;
  op: string;
  key: Record<string, string | number>;
  payload: unknown;
}

export interface StoreOptions {
  changeRetentionRows: number;
  /** Snapshot rows returned at most; a larger catalog is refused rather than buffered. */
  snapshotRowsMax?: number;
}

export interface PlacementOutcome {
  entries: PlanEntry[];
  written: AssignmentRecord[];
  unplaced: number;
}

/** How placement sees the nodes right now (liveness applied); supplied by the service. */
export type PlacementView = (nodes: readonly NodeLiveness[]) => PlacementNode[];

/** A write context: collects change rows, appended just before commit. */
class Write {
  readonly changes: PendingChange[] = [];
  constructor(readonly q: Sql) {}
  change(
    feed: FeedName,
    op: string,
    key: Record<string, string | number>,
    payload?: unknown,
  ): void {
    if (this.changes.length >= CASCADE_ROWS_MAX)
      throw new InternalError('one write changed too many rows');
    this.changes.push({ feed, op, key, payload });
  }
}

const n = (v: unknown): number => Number(v);
const s = (v: unknown): string => String(v);
const nOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function tenantOf(r: Row): Tenant {
  return { tenant_id: s(r.tenant_id), display_name: s(r.display_name) };
}
function namespaceOf(r: Row): Namespace {
  return { tenant_id: s(r.tenant_id), namespace: s(r.namespace), display_name: s(r.display_name) };
}
function streamOf(r: Row): Stream {
  return {
    tenant_id: s(r.tenant_id),
    namespace: s(r.namespace),
    stream: s(r.stream),
    kind: 'Stream',
    shards: n(r.shards),
    replication_factor: n(r.replication_factor),
    retention: {
      max_age_seconds: nOrNull(r.retention_max_age_seconds),
      max_size_bytes: nOrNull(r.retention_max_size_bytes),
    },
    consistency: s(r.consistency) as Consistency,
    durable: n(r.durable) === 1,
    routing: s(r.routing) as Routing,
  };
}
function cacheOf(r: Row): Cache {
  return {
    tenant_id: s(r.tenant_id),
    namespace: s(r.namespace),
    cache: s(r.cache),
    display_name: s(r.display_name),
    shards: n(r.shards),
    replication_factor: n(r.replication_factor),
    consistency: s(r.consistency) as Consistency,
  };
}
export function nodeOf(r: Row): NodeRecord {
  return {
    node_id: s(r.node_id),
    spec: {
      advertise_addr: s(r.advertise_addr),
      client_addr: r.client_addr === null ? null : s(r.client_addr),
      region: s(r.region),
      zone: r.zone === null ? null : s(r.zone),
      labels: JSON.parse(s(r.labels)) as Record<string, string>,
      capacity: { max_shards: n(r.capacity_max_shards), weight: n(r.capacity_weight) },
    },
    status: {
      lifecycle: s(r.lifecycle) as Lifecycle,
      incarnation: n(r.incarnation),
      last_heartbeat_at_ms: n(r.last_heartbeat_at_ms),
      registered_at_ms: n(r.registered_at_ms),
    },
  };
}
function assignmentOf(r: Row): AssignmentRecord {
  const a: AssignmentRecord = {
    tenant_id: s(r.tenant_id),
    namespace: s(r.namespace),
    kind: s(r.kind) as AssignmentRecord['kind'],
    stream: s(r.name),
    shard: n(r.shard),
    leader: s(r.leader),
    replicas: JSON.parse(s(r.replicas)) as string[],
    generation: n(r.generation),
    state: 'active',
  };
  if (r.routing !== null && r.routing !== undefined) a.routing = s(r.routing) as Routing;
  return a;
}

/** A feed's snapshot: every row in key order (keyset order is the feed's item order). */
const SNAPSHOT_QUERIES: Record<FeedName, { sql: string; item: (r: Row) => unknown }> = {
  tenants: {
    sql: 'SELECT tenant_id, display_name FROM tenants ORDER BY tenant_id LIMIT $1',
    item: tenantOf,
  },
  namespaces: {
    sql: 'SELECT * FROM namespaces ORDER BY tenant_id, namespace LIMIT $1',
    item: namespaceOf,
  },
  streams: {
    sql: 'SELECT * FROM streams ORDER BY tenant_id, namespace, stream LIMIT $1',
    item: streamOf,
  },
  caches: {
    sql: 'SELECT * FROM caches ORDER BY tenant_id, namespace, cache LIMIT $1',
    item: cacheOf,
  },
  assignments: {
    sql: 'SELECT * FROM shard_assignments ORDER BY tenant_id, namespace, kind, name, shard LIMIT $1',
    item: assignmentOf,
  },
};
function assignmentKey(a: AssignmentKey): Record<string, string | number> {
  return {
    tenant_id: a.tenant_id,
    namespace: a.namespace,
    kind: a.kind,
    stream: a.stream,
    shard: a.shard,
  };
}

/** A LIKE pattern matching a JSON array that holds `id` (names may contain `_`, a wildcard). */
function likeMember(id: string): string {
  return `%${JSON.stringify(id).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function sameStream(a: Stream, b: Stream): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Runs a keyset page: `where` gets the cursor placeholders after `fixed` parameters. */
/** A resource named inside a namespace: its table, its name column and its row reader. */
interface NamedKind<T> {
  table: 'streams' | 'caches';
  nameCol: 'stream' | 'cache';
  of: (r: Row) => T;
}
const STREAM_KIND: NamedKind<Stream> = { table: 'streams', nameCol: 'stream', of: streamOf };
const CACHE_KIND: NamedKind<Cache> = { table: 'caches', nameCol: 'cache', of: cacheOf };

async function getNamedIn<T>(
  q: Sql,
  kind: NamedKind<T>,
  t: string,
  ns: string,
  name: string,
): Promise<T | undefined> {
  const r = await q.query<Row>(
    `SELECT * FROM ${kind.table} WHERE tenant_id = $1 AND namespace = $2 AND ${kind.nameCol} = $3`,
    [t, ns, name],
  );
  return r[0] ? kind.of(r[0]) : undefined;
}

function listNamed<T>(
  q: Sql,
  kind: NamedKind<T>,
  t: string,
  ns: string,
  limit: number,
  cursor: string | undefined,
): Promise<Page<T>> {
  return page(q, {
    select: `SELECT * FROM ${kind.table}`,
    fixedWhere: ['tenant_id = $1', 'namespace = $2'],
    fixed: [t, ns],
    keyCols: [kind.nameCol],
    shape: ['s'],
    limit,
    cursor,
    map: kind.of,
    keyOf: (r) => [s(r[kind.nameCol])],
  });
}

async function page<T>(
  q: Sql,
  opts: {
    select: string;
    fixedWhere: string[];
    fixed: SqlParam[];
    keyCols: string[];
    shape: ('s' | 'n')[];
    limit: number;
    cursor: string | undefined;
    map: (r: Row) => T;
    keyOf: (r: Row) => CursorKey;
  },
): Promise<Page<T>> {
  const where = [...opts.fixedWhere];
  const params: SqlParam[] = [...opts.fixed];
  if (opts.cursor !== undefined) {
    const key = decodeCursor(opts.cursor, opts.shape);
    const ph = key.map((_, i) => `$${params.length + i + 1}`);
    params.push(...key);
    where.push(`(${opts.keyCols.join(', ')}) > (${ph.join(', ')})`);
  }
  params.push(opts.limit + 1);
  const sql = `${opts.select}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${opts.keyCols.join(', ')} LIMIT $${params.length}`;
  const rows = await q.query<Row>(sql, params);
  const more = rows.length > opts.limit;
  const kept = more ? rows.slice(0, opts.limit) : rows;
  const last = kept[kept.length - 1];
  return {
    items: kept.map(opts.map),
    next_cursor: more && last ? encodeCursor(opts.keyOf(last)) : null,
  };
}

export class ControlStore {
  readonly driver: SqlDriver;
  private readonly retentionRows: number;
  private readonly snapshotRowsMax: number;
  private readonly listeners = new Set<(feeds: readonly FeedName[]) => void>();

  constructor(driver: SqlDriver, opts: StoreOptions) {
    this.driver = driver;
    this.retentionRows = opts.changeRetentionRows;
    this.snapshotRowsMax = opts.snapshotRowsMax ?? SNAPSHOT_ROWS_MAX;
  }

  get backend(): 'sqlite' | 'postgres' {
    return this.driver.kind;
  }

  /** Applies pending migrations (once across concurrent starts) and returns the versions applied. */
  migrate(): Promise<number[]> {
    return this.driver.migrate(MIGRATIONS);
  }

  /**
   * True when the store answers and holds at least this build's schema. A newer schema is fine
   * (migrations are additive, so roll forward); an older one means migrations have not run.
   */
  async schemaCurrent(): Promise<{ version: number; current: boolean }> {
    const version = await this.driver.schemaVersion();
    return { version, current: version >= SCHEMA_VERSION };
  }

  /** Subscribes to committed local writes (and, on Postgres, other instances' writes). */
  onChange(fn: (feeds: readonly FeedName[]) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Starts listening for other instances' commits (Postgres NOTIFY). */
  async listenRemote(): Promise<void> {
    await this.driver.onRemoteChange((feed) => this.emit([feed as FeedName]));
  }

  private emit(feeds: readonly FeedName[]): void {
    if (feeds.length === 0) return;
    for (const fn of this.listeners) fn(feeds);
  }

  private async write<T>(fn: (w: Write) => Promise<T>): Promise<T> {
    let feeds: FeedName[] = [];
    const out = await this.driver.tx(async (q) => {
      const w = new Write(q);
      const result = await fn(w);
      // NOTIFY is delivered at commit wherever it stands, so it goes before the sequence rows
      // are locked: the locks are then held for as little as possible.
      const touched = [...new Set(w.changes.map((c) => c.feed))].sort();
      if (touched.length) await this.driver.announce(q, touched);
      feeds = await this.appendChanges(w);
      return result;
    });
    this.emit(feeds);
    return out;
  }

  private async appendChanges(w: Write): Promise<FeedName[]> {
    const byFeed = new Map<FeedName, PendingChange[]>();
    for (const c of w.changes) {
      const list = byFeed.get(c.feed) ?? [];
      list.push(c);
      byFeed.set(c.feed, list);
    }
    const now = Date.now();
    // Feeds in a fixed order so two writers touching several feeds never lock in opposite order.
    const feeds = [...byFeed.keys()].sort();
    for (const feed of feeds) {
      const list = byFeed.get(feed)!;
      const rows = await w.q.query<{ last_seq: number }>(
        'UPDATE feed_seq SET last_seq = last_seq + $2 WHERE feed = $1 RETURNING last_seq',
        [feed, list.length],
      );
      const last = n(rows[0]?.last_seq);
      const first = last - list.length + 1;
      for (let i = 0; i < list.length; i += INSERT_BATCH_ROWS) {
        const chunk = list.slice(i, i + INSERT_BATCH_ROWS);
        const params: SqlParam[] = [];
        const values = chunk.map((c, j) => {
          params.push(
            feed,
            first + i + j,
            c.op,
            JSON.stringify(c.key),
            c.payload === undefined ? null : JSON.stringify(c.payload),
            now,
          );
          const b = params.length - 6;
          return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6})`;
        });
        await w.q.query(
          `INSERT INTO changes (feed, seq, op, key, payload, ts_ms) VALUES ${values.join(', ')}`,
          params,
        );
      }
      // Trim only when the sequence crosses a multiple of the trim step: the kept history stays
      // within retention + step rows, and most writes skip the DELETE.
      const step = Math.min(CHANGE_TRIM_STEP_ROWS, this.retentionRows);
      if (Math.floor(last / step) > Math.floor((last - list.length) / step)) {
        await w.q.query('DELETE FROM changes WHERE feed = $1 AND seq <= $2', [
          feed,
          last - this.retentionRows,
        ]);
      }
    }
    return feeds;
  }

  // ---- tenants ------------------------------------------------------------------------------

  createTenant(t: Tenant): Promise<{ item: Tenant; created: boolean }> {
    return this.write(async (w) => {
      const ins = await w.q.query(
        'INSERT INTO tenants (tenant_id, display_name, created_at_ms) VALUES ($1, $2, $3) ON CONFLICT (tenant_id) DO NOTHING RETURNING tenant_id',
        [t.tenant_id, t.display_name, Date.now()],
      );
      if (ins.length === 0) {
        const existing = await this.getTenantIn(w.q, t.tenant_id);
        if (existing && existing.display_name === t.display_name)
          return { item: existing, created: false };
        throw new AlreadyExistsError(`tenant ${t.tenant_id} exists with other settings`);
      }
      w.change('tenants', 'created', { tenant_id: t.tenant_id }, t);
      return { item: t, created: true };
    });
  }

  private async getTenantIn(q: Sql, id: string): Promise<Tenant | undefined> {
    const r = await q.query<Row>(
      'SELECT tenant_id, display_name FROM tenants WHERE tenant_id = $1',
      [id],
    );
    return r[0] ? tenantOf(r[0]) : undefined;
  }

  async getTenant(id: string): Promise<Tenant> {
    const t = await this.getTenantIn(this.driver, id);
    if (!t) throw new TenantNotFoundError(`tenant ${id} does not exist`);
    return t;
  }

  listTenants(limit: number, cursor?: string): Promise<Page<Tenant>> {
    return page(this.driver, {
      select: 'SELECT tenant_id, display_name FROM tenants',
      fixedWhere: [],
      fixed: [],
      keyCols: ['tenant_id'],
      shape: ['s'],
      limit,
      cursor,
      map: tenantOf,
      keyOf: (r) => [s(r.tenant_id)],
    });
  }

  deleteTenant(id: string): Promise<void> {
    return this.write(async (w) => {
      const nss = await w.q.query<Row>('SELECT namespace FROM namespaces WHERE tenant_id = $1', [
        id,
      ]);
      for (const ns of nss) await this.cascadeNamespace(w, id, s(ns.namespace));
      const del = await w.q.query('DELETE FROM tenants WHERE tenant_id = $1 RETURNING tenant_id', [
        id,
      ]);
      if (del.length === 0) throw new TenantNotFoundError(`tenant ${id} does not exist`);
      w.change('tenants', 'deleted', { tenant_id: id });
    });
  }

  // ---- namespaces ---------------------------------------------------------------------------

  createNamespace(ns: Namespace): Promise<{ item: Namespace; created: boolean }> {
    return this.write(async (w) => {
      if (!(await this.getTenantIn(w.q, ns.tenant_id))) {
        throw new TenantNotFoundError(`tenant ${ns.tenant_id} does not exist`);
      }
      const ins = await w.q.query(
        'INSERT INTO namespaces (tenant_id, namespace, display_name, created_at_ms) VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, namespace) DO NOTHING RETURNING namespace',
        [ns.tenant_id, ns.namespace, ns.display_name, Date.now()],
      );
      if (ins.length === 0) {
        const existing = await this.getNamespaceIn(w.q, ns.tenant_id, ns.namespace);
        if (existing && existing.display_name === ns.display_name)
          return { item: existing, created: false };
        throw new AlreadyExistsError(
          `namespace ${ns.tenant_id}/${ns.namespace} exists with other settings`,
        );
      }
      w.change('namespaces', 'created', { tenant_id: ns.tenant_id, namespace: ns.namespace }, ns);
      return { item: ns, created: true };
    });
  }

  private async getNamespaceIn(q: Sql, t: string, ns: string): Promise<Namespace | undefined> {
    const r = await q.query<Row>(
      'SELECT tenant_id, namespace, display_name FROM namespaces WHERE tenant_id = $1 AND namespace = $2',
      [t, ns],
    );
    return r[0] ? namespaceOf(r[0]) : undefined;
  }

  private async requireNamespace(q: Sql, t: string, ns: string): Promise<Namespace> {
    const found = await this.getNamespaceIn(q, t, ns);
    if (found) return found;
    if (!(await this.getTenantIn(q, t)))
      throw new TenantNotFoundError(`tenant ${t} does not exist`);
    throw new NamespaceNotFoundError(`namespace ${t}/${ns} does not exist`);
  }

  getNamespace(t: string, ns: string): Promise<Namespace> {
    return this.requireNamespace(this.driver, t, ns);
  }

  async listNamespaces(t: string, limit: number, cursor?: string): Promise<Page<Namespace>> {
    await this.getTenant(t);
    return page(this.driver, {
      select: 'SELECT tenant_id, namespace, display_name FROM namespaces',
      fixedWhere: ['tenant_id = $1'],
      fixed: [t],
      keyCols: ['namespace'],
      shape: ['s'],
      limit,
      cursor,
      map: namespaceOf,
      keyOf: (r) => [s(r.namespace)],
    });
  }

  deleteNamespace(t: string, ns: string): Promise<void> {
    return this.write(async (w) => {
      await this.requireNamespace(w.q, t, ns);
      await this.cascadeNamespace(w, t, ns);
    });
  }

  private async cascadeNamespace(w: Write, t: string, ns: string): Promise<void> {
    const assigns = await w.q.query<Row>(
      'DELETE FROM shard_assignments WHERE tenant_id = $1 AND namespace = $2 RETURNING tenant_id, namespace, kind, name, shard',
      [t, ns],
    );
    for (const a of assigns) this.unassigned(w, a);
    const streams = await w.q.query<Row>(
      'DELETE FROM streams WHERE tenant_id = $1 AND namespace = $2 RETURNING stream',
      [t, ns],
    );
    for (const r of streams)
      w.change('streams', 'deleted', { tenant_id: t, namespace: ns, stream: s(r.stream) });
    const caches = await w.q.query<Row>(
      'DELETE FROM caches WHERE tenant_id = $1 AND namespace = $2 RETURNING cache',
      [t, ns],
    );
    for (const r of caches)
      w.change('caches', 'deleted', { tenant_id: t, namespace: ns, cache: s(r.cache) });
    await w.q.query('DELETE FROM namespaces WHERE tenant_id = $1 AND namespace = $2', [t, ns]);
    w.change('namespaces', 'deleted', { tenant_id: t, namespace: ns });
  }

  private unassigned(w: Write, r: Row): void {
    w.change('assignments', 'unassigned', {
      tenant_id: s(r.tenant_id),
      namespace: s(r.namespace),
      kind: s(r.kind),
      stream: s(r.name),
      shard: n(r.shard),
    });
  }

  // ---- streams ------------------------------------------------------------------------------

  /**
   * Creates a stream. With a placement view its shards are placed in the same transaction (under
   * the placement lock), so a created stream is assigned as soon as it exists when nodes are up.
   */
  createStream(st: Stream, view?: PlacementView): Promise<{ item: Stream; created: boolean }> {
    return this.write(async (w) => {
      await this.requireNamespace(w.q, st.tenant_id, st.namespace);
      const ins = await w.q.query(
        `INSERT INTO streams (tenant_id, namespace, stream, shards, replication_factor, retention_max_age_seconds,
           retention_max_size_bytes, consistency, durable, routing, created_at_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (tenant_id, namespace, stream) DO NOTHING RETURNING stream`,
        [
          st.tenant_id,
          st.namespace,
          st.stream,
          st.shards,
          st.replication_factor,
          st.retention.max_age_seconds,
          st.retention.max_size_bytes,
          st.consistency,
          st.durable ? 1 : 0,
          st.routing,
          Date.now(),
        ],
      );
      if (ins.length === 0) {
        const existing = await this.getStreamIn(w.q, st.tenant_id, st.namespace, st.stream);
        if (existing && sameStream(existing, st)) return { item: existing, created: false };
        throw new AlreadyExistsError(
          `stream ${st.tenant_id}/${st.namespace}/${st.stream} exists with other settings`,
        );
      }
      w.change(
        'streams',
        'created',
        { tenant_id: st.tenant_id, namespace: st.namespace, stream: st.stream },
        st,
      );
      if (view) {
        await this.placeNew(
          w,
          view,
          'stream',
          st.tenant_id,
          st.namespace,
          st.stream,
          st.shards,
          st.replication_factor,
          st.routing,
        );
      }
      return { item: st, created: true };
    });
  }

  private getStreamIn(q: Sql, t: string, ns: string, name: string): Promise<Stream | undefined> {
    return getNamedIn(q, STREAM_KIND, t, ns, name);
  }

  async getStream(t: string, ns: string, name: string): Promise<Stream> {
    const st = await this.getStreamIn(this.driver, t, ns, name);
    if (st) return st;
    await this.requireNamespace(this.driver, t, ns);
    throw new StreamNotFoundError(`stream ${t}/${ns}/${name} does not exist`);
  }

  async listStreams(t: string, ns: string, limit: number, cursor?: string): Promise<Page<Stream>> {
    await this.requireNamespace(this.driver, t, ns);
    return listNamed(this.driver, STREAM_KIND, t, ns, limit, cursor);
  }

  /** Changes retention, consistency and durability; shards, replication and routing are fixed. */
  patchStream(
    t: string,
    ns: string,
    name: string,
    patch: { retention?: Retention; consistency?: Consistency; durable?: boolean },
  ): Promise<Stream> {
    return this.write(async (w) => {
      const cur = await this.getStreamIn(w.q, t, ns, name);
      if (!cur) {
        await this.requireNamespace(w.q, t, ns);
        throw new StreamNotFoundError(`stream ${t}/${ns}/${name} does not exist`);
      }
      const next: Stream = {
        ...cur,
        retention: patch.retention ?? cur.retention,
        consistency: patch.consistency ?? cur.consistency,
        durable: patch.durable ?? cur.durable,
      };
      if (sameStream(cur, next)) return cur;
      await w.q.query(
        `UPDATE streams SET retention_max_age_seconds = $4, retention_max_size_bytes = $5, consistency = $6, durable = $7
         WHERE tenant_id = $1 AND namespace = $2 AND stream = $3`,
        [
          t,
          ns,
          name,
          next.retention.max_age_seconds,
          next.retention.max_size_bytes,
          next.consistency,
          next.durable ? 1 : 0,
        ],
      );
      w.change('streams', 'updated', { tenant_id: t, namespace: ns, stream: name }, next);
      return next;
    });
  }

  deleteStream(t: string, ns: string, name: string): Promise<void> {
    return this.write(async (w) => {
      const del = await w.q.query(
        'DELETE FROM streams WHERE tenant_id = $1 AND namespace = $2 AND stream = $3 RETURNING stream',
        [t, ns, name],
      );
      if (del.length === 0) {
        await this.requireNamespace(w.q, t, ns);
        throw new StreamNotFoundError(`stream ${t}/${ns}/${name} does not exist`);
      }
      const assigns = await w.q.query<Row>(
        `DELETE FROM shard_assignments WHERE tenant_id = $1 AND namespace = $2 AND kind = 'stream' AND name = $3
         RETURNING tenant_id, namespace, kind, name, shard`,
        [t, ns, name],
      );
      for (const a of assigns) this.unassigned(w, a);
      w.change('streams', 'deleted', { tenant_id: t, namespace: ns, stream: name });
    });
  }

  // ---- caches -------------------------------------------------------------------------------

  /** Creates a cache; with a placement view its shards are placed in the same transaction. */
  createCache(c: Cache, view?: PlacementView): Promise<{ item: Cache; created: boolean }> {
    return this.write(async (w) => {
      await this.requireNamespace(w.q, c.tenant_id, c.namespace);
      const ins = await w.q.query(
        `INSERT INTO caches (tenant_id, namespace, cache, display_name, shards, replication_factor, consistency, created_at_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (tenant_id, namespace, cache) DO NOTHING RETURNING cache`,
        [
          c.tenant_id,
          c.namespace,
          c.cache,
          c.display_name,
          c.shards,
          c.replication_factor,
          c.consistency,
          Date.now(),
        ],
      );
      if (ins.length === 0) {
        const existing = await this.getCacheIn(w.q, c.tenant_id, c.namespace, c.cache);
        if (existing && JSON.stringify(existing) === JSON.stringify(c))
          return { item: existing, created: false };
        throw new AlreadyExistsError(
          `cache ${c.tenant_id}/${c.namespace}/${c.cache} exists with other settings`,
        );
      }
      w.change(
        'caches',
        'created',
        { tenant_id: c.tenant_id, namespace: c.namespace, cache: c.cache },
        c,
      );
      if (view) {
        await this.placeNew(
          w,
          view,
          'cache',
          c.tenant_id,
          c.namespace,
          c.cache,
          c.shards,
          c.replication_factor,
        );
      }
      return { item: c, created: true };
    });
  }

  private getCacheIn(q: Sql, t: string, ns: string, name: string): Promise<Cache | undefined> {
    return getNamedIn(q, CACHE_KIND, t, ns, name);
  }

  async getCache(t: string, ns: string, name: string): Promise<Cache> {
    const c = await this.getCacheIn(this.driver, t, ns, name);
    if (c) return c;
    await this.requireNamespace(this.driver, t, ns);
    throw new CacheNotFoundError(`cache ${t}/${ns}/${name} does not exist`);
  }

  async listCaches(t: string, ns: string, limit: number, cursor?: string): Promise<Page<Cache>> {
    await this.requireNamespace(this.driver, t, ns);
    return listNamed(this.driver, CACHE_KIND, t, ns, limit, cursor);
  }

  /** Only the display name of a cache may change. */
  patchCache(t: string, ns: string, name: string, displayName: string): Promise<Cache> {
    return this.write(async (w) => {
      const cur = await this.getCacheIn(w.q, t, ns, name);
      if (!cur) {
        await this.requireNamespace(w.q, t, ns);
        throw new CacheNotFoundError(`cache ${t}/${ns}/${name} does not exist`);
      }
      if (cur.display_name === displayName) return cur;
      await w.q.query(
        'UPDATE caches SET display_name = $4 WHERE tenant_id = $1 AND namespace = $2 AND cache = $3',
        [t, ns, name, displayName],
      );
      const next = { ...cur, display_name: displayName };
      w.change('caches', 'updated', { tenant_id: t, namespace: ns, cache: name }, next);
      return next;
    });
  }

  deleteCache(t: string, ns: string, name: string): Promise<void> {
    return this.write(async (w) => {
      const del = await w.q.query(
        'DELETE FROM caches WHERE tenant_id = $1 AND namespace = $2 AND cache = $3 RETURNING cache',
        [t, ns, name],
      );
      if (del.length === 0) {
        await this.requireNamespace(w.q, t, ns);
        throw new CacheNotFoundError(`cache ${t}/${ns}/${name} does not exist`);
      }
      const assigns = await w.q.query<Row>(
        `DELETE FROM shard_assignments WHERE tenant_id = $1 AND namespace = $2 AND kind = 'cache' AND name = $3
         RETURNING tenant_id, namespace, kind, name, shard`,
        [t, ns, name],
      );
      for (const a of assigns) this.unassigned(w, a);
      w.change('caches', 'deleted', { tenant_id: t, namespace: ns, cache: name });
    });
  }

  // ---- nodes --------------------------------------------------------------------------------

  /**
   * Registers a node or re-registers it. An older incarnation is refused; re-registering a down
   * or departed node needs a newer incarnation, which revives it as live.
   */
  registerNode(req: RegisterInput, nowMs: number): Promise<{ node: NodeRecord; revived: boolean }> {
    return this.write(async (w) => {
      const owner = await w.q.query<Row>(
        'SELECT node_id FROM nodes WHERE advertise_addr = $1 AND node_id <> $2',
        [req.advertise_addr, req.node_id],
      );
      if (owner.length > 0) {
        throw new AddressInUseError(
          `${req.advertise_addr} is advertised by node ${s(owner[0]!.node_id)}`,
        );
      }
      const rows = await w.q.query<Row>(
        'SELECT lifecycle, incarnation, registered_at_ms FROM nodes WHERE node_id = $1',
        [req.node_id],
      );
      const cur = rows[0];
      let lifecycle: Lifecycle = 'live';
      let registeredAt = nowMs;
      let revived = true;
      if (cur) {
        const inc = n(cur.incarnation);
        const life = s(cur.lifecycle) as Lifecycle;
        if (req.incarnation < inc)
          throw new StaleIncarnationError(req.node_id, req.incarnation, inc);
        if (req.incarnation === inc) {
          if (life === 'down' || life === 'left') {
            throw new NotRegisteredError(
              `node ${req.node_id} is ${life}: re-register with a newer incarnation`,
            );
          }
          lifecycle = life;
          registeredAt = n(cur.registered_at_ms);
          revived = false;
        }
      }
      const params: SqlParam[] = [
        req.node_id,
        req.advertise_addr,
        req.client_addr,
        req.region,
        req.zone,
        JSON.stringify(req.labels),
        req.capacity.max_shards,
        req.capacity.weight,
        lifecycle,
        req.incarnation,
        nowMs,
        registeredAt,
      ];
      try {
        await w.q.query(
          `INSERT INTO nodes (node_id, advertise_addr, client_addr, region, zone, labels, capacity_max_shards,
             capacity_weight, lifecycle, incarnation, last_heartbeat_at_ms, registered_at_ms)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
           ON CONFLICT (node_id) DO UPDATE SET advertise_addr = excluded.advertise_addr,
             client_addr = excluded.client_addr, region = excluded.region, zone = excluded.zone,
             labels = excluded.labels, capacity_max_shards = excluded.capacity_max_shards,
             capacity_weight = excluded.capacity_weight, lifecycle = excluded.lifecycle,
             incarnation = excluded.incarnation, last_heartbeat_at_ms = excluded.last_heartbeat_at_ms,
             registered_at_ms = excluded.registered_at_ms`,
          params,
        );
      } catch (err) {
        if (/unique|constraint/i.test(String((err as Error).message))) {
          throw new AddressInUseError(
            `${req.advertise_addr} was taken by a concurrent registration`,
            { cause: err },
          );
        }
        throw err;
      }
      const node = await this.getNodeIn(w.q, req.node_id);
      return { node: node!, revived };
    });
  }

  /**
   * Renews a node's stamp. Refuses an older incarnation (409) and a newer one it never saw; a
   * down or departed node is told its lifecycle and must re-register.
   */
  async heartbeat(nodeId: string, incarnation: number, nowMs: number): Promise<Lifecycle> {
    const hit = await this.driver.queryRelaxed<Row>(
      `UPDATE nodes SET last_heartbeat_at_ms = $3
       WHERE node_id = $1 AND incarnation = $2 AND lifecycle IN ('live', 'draining') RETURNING lifecycle`,
      [nodeId, incarnation, nowMs],
    );
    if (hit[0]) return s(hit[0].lifecycle) as Lifecycle;
    const rows = await this.driver.query<Row>(
      'SELECT lifecycle, incarnation FROM nodes WHERE node_id = $1',
      [nodeId],
    );
    const cur = rows[0];
    if (!cur) throw new NodeNotFoundError(`node ${nodeId} is not registered`);
    const inc = n(cur.incarnation);
    if (incarnation < inc) throw new StaleIncarnationError(nodeId, incarnation, inc);
    if (incarnation > inc)
      throw new NotRegisteredError(`node ${nodeId} never registered incarnation ${incarnation}`);
    return s(cur.lifecycle) as Lifecycle;
  }

  private async setLifecycle(
    nodeId: string,
    to: Lifecycle,
    from: readonly Lifecycle[],
  ): Promise<NodeRecord> {
    return this.write(async (w) => {
      const cur = await this.getNodeIn(w.q, nodeId);
      if (!cur) throw new NodeNotFoundError(`node ${nodeId} is not registered`);
      if (cur.status.lifecycle === to) return cur;
      if (!from.includes(cur.status.lifecycle)) {
        throw new NodeStateConflictError(
          `node ${nodeId} is ${cur.status.lifecycle}; cannot become ${to}`,
        );
      }
      await w.q.query('UPDATE nodes SET lifecycle = $2 WHERE node_id = $1', [nodeId, to]);
      return { ...cur, status: { ...cur.status, lifecycle: to } };
    });
  }

  drainNode(nodeId: string): Promise<NodeRecord> {
    return this.setLifecycle(nodeId, 'draining', ['live']);
  }

  deregisterNode(nodeId: string): Promise<NodeRecord> {
    return this.setLifecycle(nodeId, 'left', ['live', 'draining', 'down']);
  }

  /** Deletes a node that is neither live nor draining and is named in no assignment. */
  deleteNode(nodeId: string): Promise<void> {
    return this.write(async (w) => {
      const cur = await this.getNodeIn(w.q, nodeId);
      if (!cur) throw new NodeNotFoundError(`node ${nodeId} is not registered`);
      if (cur.status.lifecycle === 'live' || cur.status.lifecycle === 'draining') {
        throw new NodeStateConflictError(`node ${nodeId} is ${cur.status.lifecycle}`);
      }
      const named = await w.q.query<Row>(
        "SELECT shard FROM shard_assignments WHERE leader = $1 OR replicas LIKE $2 ESCAPE '\\' LIMIT 1",
        [nodeId, likeMember(nodeId)],
      );
      if (named.length > 0) throw new NodeStateConflictError(`node ${nodeId} still holds shards`);
      await w.q.query('DELETE FROM nodes WHERE node_id = $1', [nodeId]);
    });
  }

  private async livenessRows(q: Sql): Promise<NodeLiveness[]> {
    const rows = await q.query<Row>(
      'SELECT node_id, zone, lifecycle, last_heartbeat_at_ms, capacity_max_shards FROM nodes',
    );
    return rows.map((r) => ({
      node_id: s(r.node_id),
      zone: r.zone === null ? null : s(r.zone),
      lifecycle: s(r.lifecycle) as Lifecycle,
      last_heartbeat_at_ms: n(r.last_heartbeat_at_ms),
      max_shards: n(r.capacity_max_shards),
    }));
  }

  /** Copies (leader or follower) a node holds. */
  copiesHeldBy(nodeId: string): Promise<number> {
    return this.copiesHeldByIn(this.driver, nodeId);
  }

  private async copiesHeldByIn(q: Sql, nodeId: string): Promise<number> {
    const r = await q.query<Row>(
      "SELECT COUNT(*) AS c FROM shard_assignments WHERE replicas LIKE $1 ESCAPE '\\'",
      [likeMember(nodeId)],
    );
    return n(r[0]?.c ?? 0);
  }

  private async getNodeIn(q: Sql, nodeId: string): Promise<NodeRecord | undefined> {
    const r = await q.query<Row>('SELECT * FROM nodes WHERE node_id = $1', [nodeId]);
    return r[0] ? nodeOf(r[0]) : undefined;
  }

  async getNode(nodeId: string): Promise<NodeRecord> {
    const node = await this.getNodeIn(this.driver, nodeId);
    if (!node) throw new NodeNotFoundError(`node ${nodeId} is not registered`);
    return node;
  }

  listNodes(limit: number, cursor?: string, lifecycle?: Lifecycle): Promise<Page<NodeRecord>> {
    return page(this.driver, {
      select: 'SELECT * FROM nodes',
      fixedWhere: lifecycle ? ['lifecycle = $1'] : [],
      fixed: lifecycle ? [lifecycle] : [],
      keyCols: ['node_id'],
      shape: ['s'],
      limit,
      cursor,
      map: nodeOf,
      keyOf: (r) => [s(r.node_id)],
    });
  }

  /** Every node (placement needs the whole list; NODES_MAX in @felix/router bounds it). */
  async allNodes(): Promise<NodeRecord[]> {
    return (await this.driver.query<Row>('SELECT * FROM nodes ORDER BY node_id')).map(nodeOf);
  }

  /** Every live or draining node's heartbeat stamp (the sweep's input). */
  async liveStamps(): Promise<{ node_id: string; stamp: number }[]> {
    const rows = await this.driver.query<Row>(
      "SELECT node_id, last_heartbeat_at_ms FROM nodes WHERE lifecycle IN ('live', 'draining')",
    );
    return rows.map((r) => ({ node_id: s(r.node_id), stamp: n(r.last_heartbeat_at_ms) }));
  }

  /** Marks a node down only if its stamp is still the one the sweep judged silent. */
  async markDown(nodeId: string, stamp: number): Promise<boolean> {
    const rows = await this.driver.query(
      `UPDATE nodes SET lifecycle = 'down'
       WHERE node_id = $1 AND last_heartbeat_at_ms = $2 AND lifecycle IN ('live', 'draining') RETURNING node_id`,
      [nodeId, stamp],
    );
    return rows.length > 0;
  }

  // ---- assignments and placement ------------------------------------------------------------

  listAssignments(
    limit: number,
    cursor?: string,
    leader?: string,
  ): Promise<Page<AssignmentRecord>> {
    return page(this.driver, {
      select: 'SELECT * FROM shard_assignments',
      fixedWhere: leader ? ['leader = $1'] : [],
      fixed: leader ? [leader] : [],
      keyCols: ['tenant_id', 'namespace', 'kind', 'name', 'shard'],
      shape: ['s', 's', 's', 's', 'n'],
      limit,
      cursor,
      map: assignmentOf,
      keyOf: (r) => [s(r.tenant_id), s(r.namespace), s(r.kind), s(r.name), n(r.shard)],
    });
  }

  private async placementInputs(q: Sql, view: PlacementView) {
    const nodes = view(await this.livenessRows(q));
    const current = new Map<string, AssignmentRecord>();
    for (const r of await q.query<Row>('SELECT * FROM shard_assignments')) {
      const a = assignmentOf(r);
      current.set(
        `${a.kind}\u0000${a.tenant_id}\u0000${a.namespace}\u0000${a.stream}\u0000${a.shard}`,
        a,
      );
    }
    const requests: (ShardRequest & { routing?: Routing })[] = [];
    const matched = new Set<string>();
    const add = (
      kind: 'stream' | 'cache',
      t: string,
      ns: string,
      name: string,
      shards: number,
      rf: number,
      routing?: Routing,
    ) => {
      for (let shard = 0; shard < shards; shard++) {
        const k = `${kind}\u0000${t}\u0000${ns}\u0000${name}\u0000${shard}`;
        const cur = current.get(k);
        matched.add(k);
        requests.push({
          key: { kind, tenant: t, namespace: ns, name, shard },
          replicationFactor: rf,
          current: cur
            ? { leader: cur.leader, replicas: cur.replicas, generation: cur.generation }
            : undefined,
          routing,
        });
      }
    };
    for (const r of await q.query<Row>(
      'SELECT tenant_id, namespace, stream, shards, replication_factor, routing FROM streams',
    )) {
      add(
        'stream',
        s(r.tenant_id),
        s(r.namespace),
        s(r.stream),
        n(r.shards),
        n(r.replication_factor),
        s(r.routing) as Routing,
      );
    }
    for (const r of await q.query<Row>(
      'SELECT tenant_id, namespace, cache, shards, replication_factor FROM caches',
    )) {
      add(
        'cache',
        s(r.tenant_id),
        s(r.namespace),
        s(r.cache),
        n(r.shards),
        n(r.replication_factor),
      );
    }
    const orphans = [...current].filter(([k]) => !matched.has(k)).map(([, a]) => a);
    return { nodes, requests, orphans };
  }

  /** The plan placement would carry out now, without writing it. */
  async planDryRun(view: PlacementView): Promise<PlanEntry[]> {
    return this.driver.tx(
      async (q) => {
        const { nodes, requests } = await this.placementInputs(q, view);
        return planPlacement(requests, nodes);
      },
      { snapshot: true },
    );
  }

  /**
   * One placement pass: reads nodes, resources and assignments under the placement lock, plans,
   * and writes every changed assignment (generation bumped) with its change row.
   */
  placementPass(view: PlacementView): Promise<PlacementOutcome> {
    return this.write(async (w) => {
      await this.driver.lockPlacement(w.q);
      const { nodes, requests, orphans } = await this.placementInputs(w.q, view);
      const fresh: AssignmentRecord[] = [];
      const routingOf = new Map(requests.map((r) => [r, r.routing]));
      const entries = planPlacement(requests, nodes);
      const written: AssignmentRecord[] = [];
      let unplaced = 0;
      const req = new Map(
        requests.map((r) => [
          `${r.key.kind}\u0000${r.key.tenant}\u0000${r.key.namespace}\u0000${r.key.name}\u0000${r.key.shard}`,
          r,
        ]),
      );
      for (const e of entries) {
        if (!e.placement.placed) {
          unplaced++;
          continue;
        }
        if (!e.placement.changed) continue;
        const r = req.get(
          `${e.key.kind}\u0000${e.key.tenant}\u0000${e.key.namespace}\u0000${e.key.name}\u0000${e.key.shard}`,
        );
        const routing = e.key.kind === 'stream' && r ? routingOf.get(r) : undefined;
        const a: AssignmentRecord = {
          tenant_id: e.key.tenant,
          namespace: e.key.namespace,
          kind: e.key.kind,
          stream: e.key.name,
          shard: e.key.shard,
          leader: e.placement.assignment.leader,
          replicas: e.placement.assignment.replicas,
          generation: e.placement.assignment.generation,
          state: 'active',
        };
        if (routing && routing !== 'modulo') a.routing = routing;
        // Conditional writes: a fresh placement only if no one placed the shard meanwhile, a
        // change only over the generation it was planned from; a lost race writes nothing and
        // the next pass plans again from what is there.
        if (e.current) {
          if (await this.updateAssignmentIf(w.q, a, e.current.generation)) {
            written.push(a);
            w.change('assignments', 'updated', assignmentKey(a), a);
          }
        } else {
          fresh.push(a);
        }
      }
      for (const a of await this.insertAssignmentsIfAbsent(w.q, fresh)) {
        written.push(a);
        w.change('assignments', 'assigned', assignmentKey(a), a);
      }
      // Assignments whose resource is gone (a delete that raced a pass) are removed.
      for (const o of orphans) {
        const del = await w.q.query(
          `DELETE FROM shard_assignments WHERE tenant_id = $1 AND namespace = $2 AND kind = $3 AND name = $4
             AND shard = $5 AND generation = $6 RETURNING shard`,
          [o.tenant_id, o.namespace, o.kind, o.stream, o.shard, o.generation],
        );
        if (del.length > 0) w.change('assignments', 'unassigned', assignmentKey(o));
      }
      return { entries, written, unplaced };
    });
  }

  /** Places a new resource's shards inside its creating transaction. */
  private async placeNew(
    w: Write,
    view: PlacementView,
    kind: 'stream' | 'cache',
    t: string,
    ns: string,
    name: string,
    shards: number,
    rf: number,
    routing?: Routing,
  ): Promise<void> {
    const nodes = view(await this.livenessRows(w.q));
    if (!nodes.some((node) => node.eligible)) return; // a later pass places it
    // Only capacity needs the placement lock: new shards touch no existing assignment, so
    // without caps a create need not wait for (or block) a pass or another create.
    if (nodes.some((node) => node.maxShards > 0)) await this.driver.lockPlacement(w.q);
    const load = new Map<string, number>();
    for (const node of nodes) {
      if (node.maxShards > 0) load.set(node.nodeId, await this.copiesHeldByIn(w.q, node.nodeId));
    }
    // Rows left by a delete that raced a pass: replace them, continuing their generations.
    const stale = await w.q.query<Row>(
      'DELETE FROM shard_assignments WHERE tenant_id = $1 AND namespace = $2 AND kind = $3 AND name = $4 RETURNING generation',
      [t, ns, kind, name],
    );
    const base = stale.reduce((m, r) => Math.max(m, n(r.generation)), 0);
    const written: AssignmentRecord[] = [];
    for (let shard = 0; shard < shards; shard++) {
      const p = placeShard(
        { key: { kind, tenant: t, namespace: ns, name, shard }, replicationFactor: rf },
        nodes,
        load,
      );
      if (!p.placed) continue;
      for (const id of p.assignment.replicas) if (load.has(id)) load.set(id, load.get(id)! + 1);
      const a: AssignmentRecord = {
        tenant_id: t,
        namespace: ns,
        kind,
        stream: name,
        shard,
        leader: p.assignment.leader,
        replicas: p.assignment.replicas,
        generation: base + p.assignment.generation,
        state: 'active',
      };
      if (kind === 'stream' && routing && routing !== 'modulo') a.routing = routing;
      written.push(a);
      w.change('assignments', 'assigned', assignmentKey(a), a);
    }
    await this.writeAssignments(w.q, written);
  }

  private async updateAssignmentIf(
    q: Sql,
    a: AssignmentRecord,
    fromGeneration: number,
  ): Promise<boolean> {
    const rows = await q.query(
      `UPDATE shard_assignments SET leader = $6, replicas = $7, generation = $8, state = $9, routing = $10,
         updated_at_ms = $11
       WHERE tenant_id = $1 AND namespace = $2 AND kind = $3 AND name = $4 AND shard = $5 AND generation = $12
       RETURNING shard`,
      [
        a.tenant_id,
        a.namespace,
        a.kind,
        a.stream,
        a.shard,
        a.leader,
        JSON.stringify(a.replicas),
        a.generation,
        a.state,
        a.routing ?? null,
        Date.now(),
        fromGeneration,
      ],
    );
    return rows.length > 0;
  }

  /** Inserts the assignments no one has written yet; returns those it inserted. */
  private async insertAssignmentsIfAbsent(
    q: Sql,
    fresh: readonly AssignmentRecord[],
  ): Promise<AssignmentRecord[]> {
    const inserted: AssignmentRecord[] = [];
    const now = Date.now();
    for (let i = 0; i < fresh.length; i += INSERT_BATCH_ROWS) {
      const chunk = fresh.slice(i, i + INSERT_BATCH_ROWS);
      const params: SqlParam[] = [];
      const values = chunk.map((a) => {
        params.push(
          a.tenant_id,
          a.namespace,
          a.kind,
          a.stream,
          a.shard,
          a.leader,
          JSON.stringify(a.replicas),
          a.generation,
          a.state,
          a.routing ?? null,
          now,
        );
        const b = params.length - 11;
        return `(${Array.from({ length: 11 }, (_, k) => `$${b + k + 1}`).join(', ')})`;
      });
      const rows = await q.query<Row>(
        `INSERT INTO shard_assignments (tenant_id, namespace, kind, name, shard, leader, replicas, generation, state, routing, updated_at_ms)
         VALUES ${values.join(', ')}
         ON CONFLICT (tenant_id, namespace, kind, name, shard) DO NOTHING
         RETURNING tenant_id, namespace, kind, name, shard`,
        params,
      );
      const got = new Set(
        rows.map(
          (r) =>
            `${s(r.kind)}\u0000${s(r.tenant_id)}\u0000${s(r.namespace)}\u0000${s(r.name)}\u0000${n(r.shard)}`,
        ),
      );
      for (const a of chunk) {
        if (
          got.has(
            `${a.kind}\u0000${a.tenant_id}\u0000${a.namespace}\u0000${a.stream}\u0000${a.shard}`,
          )
        )
          inserted.push(a);
      }
    }
    return inserted;
  }

  private async writeAssignments(q: Sql, written: readonly AssignmentRecord[]): Promise<void> {
    const now = Date.now();
    for (let i = 0; i < written.length; i += INSERT_BATCH_ROWS) {
      const chunk = written.slice(i, i + INSERT_BATCH_ROWS);
      const params: SqlParam[] = [];
      const values = chunk.map((a) => {
        params.push(
          a.tenant_id,
          a.namespace,
          a.kind,
          a.stream,
          a.shard,
          a.leader,
          JSON.stringify(a.replicas),
          a.generation,
          a.state,
          a.routing ?? null,
          now,
        );
        const b = params.length - 11;
        return `(${Array.from({ length: 11 }, (_, k) => `$${b + k + 1}`).join(', ')})`;
      });
      await q.query(
        `INSERT INTO shard_assignments (tenant_id, namespace, kind, name, shard, leader, replicas, generation, state, routing, updated_at_ms)
         VALUES ${values.join(', ')}
         ON CONFLICT (tenant_id, namespace, kind, name, shard) DO UPDATE SET leader = excluded.leader,
           replicas = excluded.replicas, generation = excluded.generation, state = excluded.state,
           routing = excluded.routing, updated_at_ms = excluded.updated_at_ms`,
        params,
      );
    }
  }

  // ---- feeds --------------------------------------------------------------------------------

  /** Every item of a feed plus the sequence to follow from, read at one consistent point. */
  snapshot(feed: FeedName): Promise<Snapshot> {
    return this.driver.tx(
      async (q) => {
        const seq = await q.query<Row>('SELECT last_seq FROM feed_seq WHERE feed = $1', [feed]);
        const next_seq = n(seq[0]?.last_seq) + 1;
        const limit = this.snapshotRowsMax + 1;
        const { sql, item } = SNAPSHOT_QUERIES[feed];
        const items = (await q.query<Row>(sql, [limit])).map(item);
        if (items.length > this.snapshotRowsMax)
          throw new InternalError(`the ${feed} snapshot exceeds ${this.snapshotRowsMax} rows`);
        return { items, next_seq };
      },
      { snapshot: true },
    );
  }

  /**
   * Changes with `seq >= since`, oldest first, at most `limit`. The feed's high mark is read
   * first and only rows at or below it are returned, so a page never skips a row committed
   * while it was being read.
   */
  async changes(feed: FeedName, since: number, limit: number): Promise<ChangesPage> {
    const seq = await this.driver.query<Row>('SELECT last_seq FROM feed_seq WHERE feed = $1', [
      feed,
    ]);
    const last = n(seq[0]?.last_seq);
    if (since > last) return { items: [], next_seq: last + 1 };
    const rows = await this.driver.query<Row>(
      'SELECT seq, op, key, payload FROM changes WHERE feed = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq LIMIT $4',
      [feed, since, last, limit],
    );
    const items: ChangeRecord[] = rows.map((r) => {
      const c: ChangeRecord = {
        seq: n(r.seq),
        op: s(r.op) as ChangeRecord['op'],
        key: JSON.parse(s(r.key)),
      };
      if (r.payload !== null && r.payload !== undefined) {
        const payload = JSON.parse(s(r.payload)) as unknown;
        if (feed === 'assignments') c.assignment = payload;
        else c.item = payload;
      }
      return c;
    });
    const lastItem = items[items.length - 1];
    const next_seq = items.length === limit && lastItem ? lastItem.seq + 1 : last + 1;
    return { items, next_seq };
  }

  close(): Promise<void> {
    return this.driver.close();
  }
}
