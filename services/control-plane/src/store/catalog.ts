/**
 * The sharded catalog: one repository implementation serving streams and caches alike, each
 * described by its `CatalogKind`. A resource lives in a namespace, is created idempotently (an
 * identical create answers the existing one), is placed in its creating write when nodes are up,
 * and takes its assignments with it when deleted.
 */
import { randomUUID } from 'node:crypto';
import { AlreadyExistsError } from '../errors.js';
import type { AssignmentRepository, PlacementView } from './assignments.js';
import type { CatalogKind } from './catalog-kinds.js';
import { page } from './paging.js';
import { type Row, str } from './rows.js';
import type { Sql, SqlParam } from './sql.js';
import { type ScopeChild, requireNamespace } from './tenants.js';
import type { Transactions, Write } from './transaction.js';
import type { Page } from './types.js';

/** The fields every catalog resource has: its namespace, its sizing and its creation id. */
interface Sharded {
  tenant_id: string;
  namespace: string;
  shards: number;
  replication_factor: number;
  uid: string;
}

/** Two records are the same when they serialise the same (both are built in one key order). */
function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Whether a create asks for what exists: the settings alike, whatever the creation ids. */
function sameSettings<T extends Sharded>(existing: T, asked: T): boolean {
  return same({ ...existing, uid: '' }, { ...asked, uid: '' });
}

export class CatalogRepository<T extends Sharded, P> implements ScopeChild {
  constructor(
    private readonly tx: Transactions,
    private readonly kind: CatalogKind<T, P>,
    private readonly assignments: AssignmentRepository,
  ) {}

  /**
   * Creates a resource. With a placement view its shards are placed in the same transaction
   * (under the placement lock when capacity applies), so it is assigned as soon as it exists when
   * nodes are up.
   */
  create(asked: Omit<T, 'uid'>, view?: PlacementView): Promise<{ item: T; created: boolean }> {
    return this.tx.write(async (w) => {
      await requireNamespace(w.q, asked.tenant_id, asked.namespace);
      // A new id for every creation: a name deleted and created again is another resource.
      const item = { ...asked, uid: randomUUID() } as T;
      const name = this.kind.nameOf(item);
      this.kind.check(item);
      if (!(await this.insert(w, item))) {
        const existing = await this.find(w.q, item.tenant_id, item.namespace, name);
        if (existing && sameSettings(existing, item)) return { item: existing, created: false };
        throw new AlreadyExistsError(
          `${this.path(item.tenant_id, item.namespace, name)} exists with other settings`,
        );
      }
      w.change(this.kind.feed, 'created', this.keyOf(item.tenant_id, item.namespace, name), item);
      if (view) {
        await this.assignments.placeNew(w, view, {
          kind: this.kind.kind,
          tenant_id: item.tenant_id,
          namespace: item.namespace,
          name,
          shards: item.shards,
          replication_factor: item.replication_factor,
          routing: this.kind.routingOf(item),
        });
      }
      return { item, created: true };
    });
  }

  async get(t: string, ns: string, name: string): Promise<T> {
    const found = await this.find(this.tx.driver, t, ns, name);
    if (found) return found;
    await requireNamespace(this.tx.driver, t, ns);
    throw this.kind.notFound(`${this.path(t, ns, name)} does not exist`);
  }

  async list(t: string, ns: string, limit: number, cursor?: string): Promise<Page<T>> {
    await requireNamespace(this.tx.driver, t, ns);
    const nameCol = this.kind.nameCol;
    return page(this.tx.driver, {
      select: `SELECT * FROM ${this.kind.table}`,
      fixedWhere: ['tenant_id = $1', 'namespace = $2'],
      fixed: [t, ns],
      keyCols: [nameCol],
      shape: ['s'],
      limit,
      cursor,
      map: this.kind.of,
      keyOf: (r) => [str(r[nameCol])],
    });
  }

  /** Changes what the kind lets a patch change; an unchanged result writes nothing. */
  patch(t: string, ns: string, name: string, patch: P): Promise<T> {
    return this.tx.write(async (w) => {
      const cur = await this.find(w.q, t, ns, name);
      if (!cur) {
        await requireNamespace(w.q, t, ns);
        throw this.kind.notFound(`${this.path(t, ns, name)} does not exist`);
      }
      const next = this.kind.applyPatch(cur, patch);
      if (same(cur, next)) return cur;
      this.kind.check(next);
      const values = this.kind.columns(next);
      const sets = this.kind.mutable.map((col, i) => `${col} = $${i + 4}`);
      await w.q.query(
        `UPDATE ${this.kind.table} SET ${sets.join(', ')}
         WHERE tenant_id = $1 AND namespace = $2 AND ${this.kind.nameCol} = $3`,
        [t, ns, name, ...this.kind.mutable.map((col) => values[col])],
      );
      w.change(this.kind.feed, 'updated', this.keyOf(t, ns, name), next);
      return next;
    });
  }

  /** Deletes a resource and its shard assignments. */
  delete(t: string, ns: string, name: string): Promise<void> {
    return this.tx.write(async (w) => {
      const del = await w.q.query(
        `DELETE FROM ${this.kind.table} WHERE tenant_id = $1 AND namespace = $2 AND ${this.kind.nameCol} = $3
         RETURNING ${this.kind.nameCol}`,
        [t, ns, name],
      );
      if (del.length === 0) {
        await requireNamespace(w.q, t, ns);
        throw this.kind.notFound(`${this.path(t, ns, name)} does not exist`);
      }
      await this.assignments.removeFor(w, t, ns, this.kind.kind, name);
      w.change(this.kind.feed, 'deleted', this.keyOf(t, ns, name));
    });
  }

  /** Deletes every resource of this kind under `t/ns` (its namespace is going). */
  async removeIn(w: Write, t: string, ns: string): Promise<void> {
    const nameCol = this.kind.nameCol;
    const rows = await w.q.query<Row>(
      `DELETE FROM ${this.kind.table} WHERE tenant_id = $1 AND namespace = $2 RETURNING ${nameCol}`,
      [t, ns],
    );
    for (const r of rows) w.change(this.kind.feed, 'deleted', this.keyOf(t, ns, str(r[nameCol])));
  }

  /** Inserts the row unless one with its key exists; true when it did. */
  private async insert(w: Write, item: T): Promise<boolean> {
    const values = this.kind.columns(item);
    const cols = [...Object.keys(values), 'created_at_ms'];
    const params: SqlParam[] = [...Object.values(values), w.nowMs()];
    const ins = await w.q.query(
      `INSERT INTO ${this.kind.table} (${cols.join(', ')})
       VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})
       ON CONFLICT (tenant_id, namespace, ${this.kind.nameCol}) DO NOTHING RETURNING ${this.kind.nameCol}`,
      params,
    );
    return ins.length > 0;
  }

  private async find(q: Sql, t: string, ns: string, name: string): Promise<T | undefined> {
    const r = await q.query<Row>(
      `SELECT * FROM ${this.kind.table} WHERE tenant_id = $1 AND namespace = $2 AND ${this.kind.nameCol} = $3`,
      [t, ns, name],
    );
    return r[0] ? this.kind.of(r[0]) : undefined;
  }

  private keyOf(t: string, ns: string, name: string): Record<string, string> {
    return { tenant_id: t, namespace: ns, [this.kind.nameCol]: name };
  }

  private path(t: string, ns: string, name: string): string {
    return `${this.kind.kind} ${t}/${ns}/${name}`;
  }
}
