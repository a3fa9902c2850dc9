/**
 * Tenants and namespaces: the scopes every other resource lives in. Deleting a scope deletes
 * what it holds in the same transaction, each resource through its own repository (a
 * `ScopeChild`), so every deletion leaves its change row.
 */
import { AlreadyExistsError, NamespaceNotFoundError, TenantNotFoundError } from '../errors.js';
import { page } from './paging.js';
import { type Row, namespaceOf, str, tenantOf } from './rows.js';
import type { Sql } from './sql.js';
import type { Transactions, Write } from './transaction.js';
import type { Namespace, Page, Tenant } from './types.js';

/** A repository whose resources live in a namespace and go when it goes. */
export interface ScopeChild {
  /** Deletes everything of its kind under `t/ns`, recording each deletion. */
  removeIn(w: Write, t: string, ns: string): Promise<void>;
}

export async function findTenant(q: Sql, id: string): Promise<Tenant | undefined> {
  const r = await q.query<Row>('SELECT tenant_id, display_name FROM tenants WHERE tenant_id = $1', [
    id,
  ]);
  return r[0] ? tenantOf(r[0]) : undefined;
}

async function findNamespace(q: Sql, t: string, ns: string): Promise<Namespace | undefined> {
  const r = await q.query<Row>(
    'SELECT tenant_id, namespace, display_name FROM namespaces WHERE tenant_id = $1 AND namespace = $2',
    [t, ns],
  );
  return r[0] ? namespaceOf(r[0]) : undefined;
}

/** The namespace, or the not-found error of the first missing level (tenant, then namespace). */
export async function requireNamespace(q: Sql, t: string, ns: string): Promise<Namespace> {
  const found = await findNamespace(q, t, ns);
  if (found) return found;
  if (!(await findTenant(q, t))) throw new TenantNotFoundError(`tenant ${t} does not exist`);
  throw new NamespaceNotFoundError(`namespace ${t}/${ns} does not exist`);
}

export class NamespaceRepository {
  constructor(
    private readonly tx: Transactions,
    /** Removed, in this order, before the namespace row itself. */
    private readonly children: readonly ScopeChild[],
  ) {}

  create(ns: Namespace): Promise<{ item: Namespace; created: boolean }> {
    return this.tx.write(async (w) => {
      if (!(await findTenant(w.q, ns.tenant_id))) {
        throw new TenantNotFoundError(`tenant ${ns.tenant_id} does not exist`);
      }
      const ins = await w.q.query(
        'INSERT INTO namespaces (tenant_id, namespace, display_name, created_at_ms) VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, namespace) DO NOTHING RETURNING namespace',
        [ns.tenant_id, ns.namespace, ns.display_name, w.nowMs()],
      );
      if (ins.length === 0) {
        const existing = await findNamespace(w.q, ns.tenant_id, ns.namespace);
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

  get(t: string, ns: string): Promise<Namespace> {
    return requireNamespace(this.tx.driver, t, ns);
  }

  async list(t: string, limit: number, cursor?: string): Promise<Page<Namespace>> {
    if (!(await findTenant(this.tx.driver, t)))
      throw new TenantNotFoundError(`tenant ${t} does not exist`);
    return page(this.tx.driver, {
      select: 'SELECT tenant_id, namespace, display_name FROM namespaces',
      fixedWhere: ['tenant_id = $1'],
      fixed: [t],
      keyCols: ['namespace'],
      shape: ['s'],
      limit,
      cursor,
      map: namespaceOf,
      keyOf: (r) => [str(r.namespace)],
    });
  }

  delete(t: string, ns: string): Promise<void> {
    return this.tx.write(async (w) => {
      await requireNamespace(w.q, t, ns);
      await this.removeOne(w, t, ns);
    });
  }

  /** Deletes every namespace of tenant `t` with everything under it. */
  async removeIn(w: Write, t: string): Promise<void> {
    const nss = await w.q.query<Row>('SELECT namespace FROM namespaces WHERE tenant_id = $1', [t]);
    for (const ns of nss) await this.removeOne(w, t, str(ns.namespace));
  }

  private async removeOne(w: Write, t: string, ns: string): Promise<void> {
    for (const child of this.children) await child.removeIn(w, t, ns);
    await w.q.query('DELETE FROM namespaces WHERE tenant_id = $1 AND namespace = $2', [t, ns]);
    w.change('namespaces', 'deleted', { tenant_id: t, namespace: ns });
  }
}

export class TenantRepository {
  constructor(
    private readonly tx: Transactions,
    private readonly namespaces: NamespaceRepository,
  ) {}

  create(t: Tenant): Promise<{ item: Tenant; created: boolean }> {
    return this.tx.write(async (w) => {
      const ins = await w.q.query(
        'INSERT INTO tenants (tenant_id, display_name, created_at_ms) VALUES ($1, $2, $3) ON CONFLICT (tenant_id) DO NOTHING RETURNING tenant_id',
        [t.tenant_id, t.display_name, w.nowMs()],
      );
      if (ins.length === 0) {
        const existing = await findTenant(w.q, t.tenant_id);
        if (existing && existing.display_name === t.display_name)
          return { item: existing, created: false };
        throw new AlreadyExistsError(`tenant ${t.tenant_id} exists with other settings`);
      }
      w.change('tenants', 'created', { tenant_id: t.tenant_id }, t);
      return { item: t, created: true };
    });
  }

  async get(id: string): Promise<Tenant> {
    const t = await findTenant(this.tx.driver, id);
    if (!t) throw new TenantNotFoundError(`tenant ${id} does not exist`);
    return t;
  }

  list(limit: number, cursor?: string): Promise<Page<Tenant>> {
    return page(this.tx.driver, {
      select: 'SELECT tenant_id, display_name FROM tenants',
      fixedWhere: [],
      fixed: [],
      keyCols: ['tenant_id'],
      shape: ['s'],
      limit,
      cursor,
      map: tenantOf,
      keyOf: (r) => [str(r.tenant_id)],
    });
  }

  /** Deletes a tenant with its namespaces, streams, caches and assignments. */
  delete(id: string): Promise<void> {
    return this.tx.write(async (w) => {
      await this.namespaces.removeIn(w, id);
      const del = await w.q.query('DELETE FROM tenants WHERE tenant_id = $1 RETURNING tenant_id', [
        id,
      ]);
      if (del.length === 0) throw new TenantNotFoundError(`tenant ${id} does not exist`);
      w.change('tenants', 'deleted', { tenant_id: id });
    });
  }
}
