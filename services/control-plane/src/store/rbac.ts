/**
 * A tenant's RBAC rows: policies (role may do action on object) and bindings (subject holds
 * role; a subject is a principal id or `group:<issuer>#<name>`). The store checks shape and
 * bounds only; the grammar, the tenant rule and the delegation rule are @felix/authz's and are
 * applied by the routes before they write.
 */
import { AuthLimitError, TenantNotFoundError } from '../errors.js';
import { BINDINGS_PER_TENANT_MAX, POLICIES_PER_ROLE_MAX } from '@felix/authz';
import { AUTH_LIST_ROWS_MAX } from '../limits.js';
import { type Row, num, str } from './rows.js';
import { findTenant } from './tenants.js';
import type { Transactions, Write } from './transaction.js';
import type { RbacBinding, RbacPolicy } from './types.js';

/** The subject string of an IdP group binding. */
export function groupSubject(issuer: string, name: string): string {
  return `group:${issuer}#${name}`;
}

function policyOf(r: Row): RbacPolicy {
  return {
    tenant_id: str(r.tenant_id),
    role: str(r.role),
    action: str(r.action),
    object: str(r.object),
  };
}

function bindingOf(r: Row): RbacBinding {
  return { tenant_id: str(r.tenant_id), subject: str(r.subject), role: str(r.role) };
}

/** Adds a policy inside an open write; false when it was already there. */
export async function insertPolicy(w: Write, p: RbacPolicy): Promise<boolean> {
  const n = await w.q.query<Row>(
    'SELECT COUNT(*) AS n FROM rbac_policies WHERE tenant_id = $1 AND role = $2',
    [p.tenant_id, p.role],
  );
  const ins = await w.q.query(
    `INSERT INTO rbac_policies (tenant_id, role, action, object, created_at_ms)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, role, action, object) DO NOTHING
     RETURNING role`,
    [p.tenant_id, p.role, p.action, p.object, w.nowMs()],
  );
  if (ins.length === 0) return false;
  if (num(n[0]?.n ?? 0) >= POLICIES_PER_ROLE_MAX)
    throw new AuthLimitError(`role ${p.role} already has ${POLICIES_PER_ROLE_MAX} policies`);
  return true;
}

/** Adds a binding inside an open write; false when it was already there. */
export async function insertBinding(w: Write, b: RbacBinding): Promise<boolean> {
  const n = await w.q.query<Row>('SELECT COUNT(*) AS n FROM rbac_bindings WHERE tenant_id = $1', [
    b.tenant_id,
  ]);
  const ins = await w.q.query(
    `INSERT INTO rbac_bindings (tenant_id, subject, role, created_at_ms)
     VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, subject, role) DO NOTHING RETURNING role`,
    [b.tenant_id, b.subject, b.role, w.nowMs()],
  );
  if (ins.length === 0) return false;
  if (num(n[0]?.n ?? 0) >= BINDINGS_PER_TENANT_MAX)
    throw new AuthLimitError(`tenant ${b.tenant_id} has ${BINDINGS_PER_TENANT_MAX} bindings`);
  return true;
}

export class RbacRepository {
  constructor(private readonly tx: Transactions) {}

  private async requireTenant(w: Write, tenant: string): Promise<void> {
    if (!(await findTenant(w.q, tenant)))
      throw new TenantNotFoundError(`tenant ${tenant} does not exist`);
  }

  /** Adds a policy; `created: false` when it existed. */
  addPolicy(p: RbacPolicy): Promise<{ item: RbacPolicy; created: boolean }> {
    return this.tx.write(async (w) => {
      await this.requireTenant(w, p.tenant_id);
      return { item: p, created: await insertPolicy(w, p) };
    });
  }

  /** Deletes a policy; false when there was none. */
  deletePolicy(p: RbacPolicy): Promise<boolean> {
    return this.tx.write(async (w) => {
      const del = await w.q.query(
        `DELETE FROM rbac_policies
         WHERE tenant_id = $1 AND role = $2 AND action = $3 AND object = $4 RETURNING role`,
        [p.tenant_id, p.role, p.action, p.object],
      );
      return del.length > 0;
    });
  }

  /** Policies of the tenant (of one role when given), ordered by role, action, object. */
  async listPolicies(tenant: string, role?: string): Promise<RbacPolicy[]> {
    const rows = await this.tx.driver.query<Row>(
      `SELECT tenant_id, role, action, object FROM rbac_policies
       WHERE tenant_id = $1 AND (${this.cast('$2')} IS NULL OR role = $2)
       ORDER BY role, action, object LIMIT $3`,
      [tenant, role ?? null, AUTH_LIST_ROWS_MAX],
    );
    return rows.map(policyOf);
  }

  /** Adds a binding; `created: false` when it existed. */
  addBinding(b: RbacBinding): Promise<{ item: RbacBinding; created: boolean }> {
    return this.tx.write(async (w) => {
      await this.requireTenant(w, b.tenant_id);
      return { item: b, created: await insertBinding(w, b) };
    });
  }

  /** Deletes a binding; false when there was none. */
  deleteBinding(b: RbacBinding): Promise<boolean> {
    return this.tx.write(async (w) => {
      const del = await w.q.query(
        'DELETE FROM rbac_bindings WHERE tenant_id = $1 AND subject = $2 AND role = $3 RETURNING role',
        [b.tenant_id, b.subject, b.role],
      );
      return del.length > 0;
    });
  }

  /** Bindings of the tenant (of one subject and/or role when given). */
  async listBindings(
    tenant: string,
    filter: { subject?: string; role?: string } = {},
  ): Promise<RbacBinding[]> {
    const rows = await this.tx.driver.query<Row>(
      `SELECT tenant_id, subject, role FROM rbac_bindings
       WHERE tenant_id = $1 AND (${this.cast('$2')} IS NULL OR subject = $2)
         AND (${this.cast('$3')} IS NULL OR role = $3)
       ORDER BY subject, role LIMIT $4`,
      [tenant, filter.subject ?? null, filter.role ?? null, AUTH_LIST_ROWS_MAX],
    );
    return rows.map(bindingOf);
  }

  /**
   * The `action:object` permissions of every role bound to any of `subjects` (a principal id
   * and its `group:` subjects), deduplicated and sorted: what an exchange or refresh grants
   * before narrowing.
   */
  async permissionsFor(tenant: string, subjects: readonly string[]): Promise<string[]> {
    if (subjects.length === 0) return [];
    const marks = subjects.map((_, i) => `$${i + 3}`).join(', ');
    const rows = await this.tx.driver.query<Row>(
      `SELECT DISTINCT p.action, p.object FROM rbac_bindings b
       JOIN rbac_policies p ON p.tenant_id = b.tenant_id AND p.role = b.role
       WHERE b.tenant_id = $1 AND b.subject IN (${marks})
       ORDER BY p.action, p.object LIMIT $2`,
      [tenant, AUTH_LIST_ROWS_MAX, ...subjects],
    );
    return rows.map((r) => `${str(r.action)}:${str(r.object)}`);
  }

  /** A nullable text parameter both engines can test with IS NULL (Postgres needs its type). */
  private cast(param: string): string {
    return this.tx.driver.kind === 'postgres' ? `${param}::text` : param;
  }
}
