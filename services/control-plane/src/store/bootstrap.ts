/**
 * Day-0 initialization of a tenant's auth, in one transaction: the tenant row (created when
 * missing), its first active signing key, its IdP issuers, its roles and bindings, and the
 * `bootstrapped` flag. The flag is claimed with a conditional UPDATE, so of two instances racing
 * on one database exactly one commits; the other finds the flag set and rolls back whole.
 */
import { AlreadyInitializedError } from '../errors.js';
import { insertIssuer } from './issuers.js';
import { insertBinding, insertPolicy } from './rbac.js';
import { type NewSigningKey, insertKey } from './signing-keys.js';
import { findTenant } from './tenants.js';
import type { Transactions } from './transaction.js';
import type { IdpIssuer, Tenant } from './types.js';

export interface BootstrapInput {
  tenant_id: string;
  display_name: string;
  key: NewSigningKey;
  issuers: readonly Omit<IdpIssuer, 'tenant_id'>[];
  /** Roles to create: name → `action:object` permissions. */
  roles: readonly { role: string; permissions: readonly string[] }[];
  /** Bindings to create: subject → role. */
  bindings: readonly { subject: string; role: string }[];
}

export interface BootstrapResult {
  tenant: Tenant;
  /** True when the tenant row was created here (false: it existed, uninitialized). */
  tenant_created: boolean;
  kid: string;
}

function splitPermission(p: string): { action: string; object: string } {
  const i = p.indexOf(':');
  return { action: p.slice(0, i), object: p.slice(i + 1) };
}

export class BootstrapRepository {
  constructor(private readonly tx: Transactions) {}

  /** Whether the tenant's auth has been initialized (false for an unknown tenant). */
  async isBootstrapped(tenant: string): Promise<boolean> {
    const r = await this.tx.driver.query<{ b: unknown }>(
      'SELECT bootstrapped AS b FROM tenants WHERE tenant_id = $1',
      [tenant],
    );
    return Number(r[0]?.b ?? 0) === 1;
  }

  /** Initializes the tenant exactly once; AlreadyInitializedError (409) after that. */
  initialize(input: BootstrapInput): Promise<BootstrapResult> {
    const t = input.tenant_id;
    return this.tx.write(async (w) => {
      const ins = await w.q.query(
        `INSERT INTO tenants (tenant_id, display_name, created_at_ms) VALUES ($1, $2, $3)
         ON CONFLICT (tenant_id) DO NOTHING RETURNING tenant_id`,
        [t, input.display_name, w.nowMs()],
      );
      const claimed = await w.q.query(
        'UPDATE tenants SET bootstrapped = 1 WHERE tenant_id = $1 AND bootstrapped = 0 RETURNING tenant_id',
        [t],
      );
      if (claimed.length === 0)
        throw new AlreadyInitializedError(`tenant ${t} is already initialized`);
      const tenant = (await findTenant(w.q, t))!;
      // An existing, uninitialized tenant (created through the API) keeps its display name.
      if (ins.length > 0) w.change('tenants', 'created', { tenant_id: t }, tenant);
      await insertKey(w, t, input.key, 'active');
      for (const i of input.issuers) await insertIssuer(w, { ...i, tenant_id: t });
      for (const r of input.roles)
        for (const p of r.permissions)
          await insertPolicy(w, { tenant_id: t, role: r.role, ...splitPermission(p) });
      for (const b of input.bindings) await insertBinding(w, { tenant_id: t, ...b });
      return { tenant, tenant_created: ins.length > 0, kid: input.key.kid };
    });
  }
}
