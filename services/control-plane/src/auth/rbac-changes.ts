/**
 * RBAC changes through the API, under the delegation rule: the caller needs `rbac.manage` on
 * the tenant; it may add or delete only a policy that lies within its own scope, and bind or
 * unbind a role only if every policy of the role lies within its scope. Resource-manage actions
 * never authorize an RBAC change. The caller's scope is its token's permissions.
 */
import {
  type Permission,
  isName,
  printPermission,
  tenantOf,
  tryParsePermission,
  withinScope,
} from '@felix/authz';
import { InvalidNameError } from '../errors.js';
import {
  DelegationRefusedError,
  InvalidPermissionError,
  InvalidRequestError,
  RoleNotFoundError,
} from '../errors.js';
import type { Principal } from '../http/auth/contract.js';
import type { ControlStore } from '../store/store.js';
import type { RbacBinding, RbacPolicy } from '../store/types.js';
import { parsePermissionField } from './grants.js';

/** Longest binding subject: `group:` + an issuer (512) + `#` + a group name (256). */
const SUBJECT_CHARS_MAX = 800;
/** Longest principal id a binding may name (the @felix/authz `sub` bound). */
const PRINCIPAL_CHARS_MAX = 256;

export function checkRole(role: string): string {
  if (!isName(role)) throw new InvalidNameError('role', role);
  return role;
}

/** A binding subject: a principal id, or `group:<issuer>#<name>`. */
export function checkSubject(subject: string): string {
  if (subject.length === 0 || subject.length > SUBJECT_CHARS_MAX || /\s/.test(subject)) {
    throw new InvalidRequestError('subject must be a principal id or group:<issuer>#<name>');
  }
  if (subject.startsWith('group:')) {
    const hash = subject.indexOf('#');
    if (
      hash <= 'group:'.length ||
      hash === subject.length - 1 ||
      subject.indexOf('#', hash + 1) >= 0
    ) {
      throw new InvalidRequestError('a group subject is group:<issuer>#<name>');
    }
  } else if (subject.length > PRINCIPAL_CHARS_MAX || subject.includes('#')) {
    throw new InvalidRequestError(
      `a principal id is 1-${PRINCIPAL_CHARS_MAX} characters without #`,
    );
  }
  return subject;
}

function assertMayManage(caller: Principal, tenant: string): void {
  if (!caller.permissions.allows('rbac.manage', 'tenant', tenant)) {
    throw new DelegationRefusedError(`RBAC changes need rbac.manage:tenant:${tenant}`);
  }
}

function assertInScope(caller: Principal, p: Permission): void {
  if (!withinScope(p, caller.permissions)) {
    throw new DelegationRefusedError(`${printPermission(p)} lies outside the caller's scope`);
  }
}

/** Parses a policy's permission; another tenant's object is refused outright. */
function policyPermission(tenant: string, raw: string): Permission {
  const p = parsePermissionField(raw);
  const t = tenantOf(p);
  if (t !== null && t !== tenant) {
    throw new InvalidPermissionError(`${raw} names another tenant than ${tenant}`);
  }
  return p;
}

function policyRow(tenant: string, role: string, p: Permission): RbacPolicy {
  const printed = printPermission(p);
  return {
    tenant_id: tenant,
    role,
    action: p.action,
    object: printed.slice(p.action.length + 1),
  };
}

export const policyView = (p: RbacPolicy) => ({
  role: p.role,
  permission: `${p.action}:${p.object}`,
});
export const bindingView = (b: RbacBinding) => ({ subject: b.subject, role: b.role });

export class RbacChanges {
  constructor(private readonly store: ControlStore) {}

  async addPolicy(tenant: string, caller: Principal, role: string, permission: string) {
    assertMayManage(caller, tenant);
    const p = policyPermission(tenant, permission);
    assertInScope(caller, p);
    const r = await this.store.rbac.addPolicy(policyRow(tenant, checkRole(role), p));
    return { created: r.created, item: policyView(r.item) };
  }

  async deletePolicy(tenant: string, caller: Principal, role: string, permission: string) {
    assertMayManage(caller, tenant);
    const p = policyPermission(tenant, permission);
    assertInScope(caller, p);
    return this.store.rbac.deletePolicy(policyRow(tenant, checkRole(role), p));
  }

  /** Every policy of the role must lie within the caller's scope (an unparseable one never does). */
  private async assertRoleInScope(
    tenant: string,
    caller: Principal,
    role: string,
    mustExist: boolean,
  ) {
    const policies = await this.store.rbac.listPolicies(tenant, role);
    if (policies.length === 0 && mustExist) {
      throw new RoleNotFoundError(`role ${role} has no policy in ${tenant}`);
    }
    for (const row of policies) {
      const raw = `${row.action}:${row.object}`;
      const parsed = tryParsePermission(raw);
      if (!parsed.ok || !withinScope(parsed.permission, caller.permissions)) {
        throw new DelegationRefusedError(`role ${role} holds ${raw}, outside the caller's scope`);
      }
    }
  }

  async addBinding(tenant: string, caller: Principal, subject: string, role: string) {
    assertMayManage(caller, tenant);
    const b = { tenant_id: tenant, subject: checkSubject(subject), role: checkRole(role) };
    await this.assertRoleInScope(tenant, caller, b.role, true);
    const r = await this.store.rbac.addBinding(b);
    return { created: r.created, item: bindingView(r.item) };
  }

  async deleteBinding(tenant: string, caller: Principal, subject: string, role: string) {
    assertMayManage(caller, tenant);
    const b = { tenant_id: tenant, subject: checkSubject(subject), role: checkRole(role) };
    await this.assertRoleInScope(tenant, caller, b.role, false);
    return this.store.rbac.deleteBinding(b);
  }
}
