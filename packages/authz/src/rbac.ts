/**
 * RBAC of one tenant: roles hold policies (permissions); bindings attach principals or IdP
 * groups to roles. A principal's effective permissions are the union over its bindings. The
 * `...As` mutations apply the delegation rule: the caller needs `rbac.manage` on the tenant and
 * may add, remove or bind only policies within its own scope.
 */
import {
  AuthzLimitError,
  CrossTenantPermissionError,
  DelegationRefusedError,
  InvalidRoleNameError,
  UnknownRoleError,
} from './errors.js';
import { type Permission, isName, printPermission, tenantOf } from './grammar.js';
import { BINDINGS_PER_TENANT_MAX, POLICIES_PER_ROLE_MAX, ROLES_PER_TENANT_MAX } from './limits.js';
import { PermissionSet } from './matcher.js';
import { assertWithinScope } from './scope.js';

/** Who a binding attaches: a principal id, or an IdP group (`<issuer>#<name>`). */
export interface BindingSubject {
  readonly kind: 'principal' | 'idp_group';
  readonly id: string;
}

export interface Role {
  readonly name: string;
  readonly policies: readonly Permission[];
}

export interface Binding {
  readonly subject: BindingSubject;
  readonly role: string;
}

const subjectKey = (s: BindingSubject) => `${s.kind}\u0000${s.id}`;

export class TenantRbac {
  private readonly roleMap = new Map<string, Role>();
  /** subject key → role names bound to it. */
  private readonly bound = new Map<string, Set<string>>();
  private bindingCount = 0;

  constructor(readonly tenant: string) {}

  roles(): Role[] {
    return [...this.roleMap.values()];
  }

  role(name: string): Role | undefined {
    return this.roleMap.get(name);
  }

  bindings(): Binding[] {
    const out: Binding[] = [];
    for (const [key, roles] of this.bound) {
      const [kind, id] = key.split('\u0000') as [BindingSubject['kind'], string];
      for (const role of roles) out.push({ subject: { kind, id }, role });
    }
    return out;
  }

  /** Creates or replaces a role. Policies on another tenant's objects are refused. */
  putRole(name: string, policies: readonly Permission[]): void {
    if (!isName(name)) throw new InvalidRoleNameError(name);
    if (policies.length > POLICIES_PER_ROLE_MAX) throw new AuthzLimitError('POLICIES_PER_ROLE_MAX');
    if (!this.roleMap.has(name) && this.roleMap.size >= ROLES_PER_TENANT_MAX) {
      throw new AuthzLimitError('ROLES_PER_TENANT_MAX');
    }
    for (const p of policies) {
      const t = tenantOf(p);
      if (t !== null && t !== this.tenant) {
        throw new CrossTenantPermissionError(this.tenant, printPermission(p));
      }
    }
    this.roleMap.set(name, { name, policies: [...policies] });
  }

  /** Deletes a role and every binding to it; false when there was none. */
  deleteRole(name: string): boolean {
    if (!this.roleMap.delete(name)) return false;
    for (const roles of this.bound.values()) {
      if (roles.delete(name)) this.bindingCount--;
    }
    return true;
  }

  bind(subject: BindingSubject, role: string): void {
    if (!this.roleMap.has(role)) throw new UnknownRoleError(role);
    const key = subjectKey(subject);
    let roles = this.bound.get(key);
    if (roles?.has(role)) return;
    if (this.bindingCount >= BINDINGS_PER_TENANT_MAX) {
      throw new AuthzLimitError('BINDINGS_PER_TENANT_MAX');
    }
    if (!roles) {
      roles = new Set();
      this.bound.set(key, roles);
    }
    roles.add(role);
    this.bindingCount++;
  }

  unbind(subject: BindingSubject, role: string): boolean {
    const key = subjectKey(subject);
    const roles = this.bound.get(key);
    if (!roles?.delete(role)) return false;
    this.bindingCount--;
    if (roles.size === 0) this.bound.delete(key);
    return true;
  }

  /** The union of the policies of every role bound to the principal or one of its groups. */
  effectivePermissions(principal: string, groups: readonly string[] = []): Permission[] {
    const roleNames = new Set<string>();
    const collect = (s: BindingSubject) => {
      for (const r of this.bound.get(subjectKey(s)) ?? []) roleNames.add(r);
    };
    collect({ kind: 'principal', id: principal });
    for (const g of groups) collect({ kind: 'idp_group', id: g });
    const seen = new Map<string, Permission>();
    for (const name of roleNames) {
      for (const p of this.roleMap.get(name)?.policies ?? []) seen.set(printPermission(p), p);
    }
    return [...seen.values()];
  }

  /** The compiled set of a principal's effective permissions. */
  permissionSetFor(principal: string, groups: readonly string[] = []): PermissionSet {
    return PermissionSet.compile(this.tenant, this.effectivePermissions(principal, groups));
  }

  // --- mutations under the delegation rule -------------------------------------------------------

  private assertMayChangeRbac(caller: PermissionSet): void {
    if (!caller.allows('rbac.manage', 'tenant', this.tenant)) {
      throw new DelegationRefusedError(`rbac.manage:tenant:${this.tenant}`);
    }
  }

  /** putRole, if the caller may manage RBAC and both the old and new policies are in its scope. */
  putRoleAs(caller: PermissionSet, name: string, policies: readonly Permission[]): void {
    this.assertMayChangeRbac(caller);
    assertWithinScope(policies, caller);
    assertWithinScope(this.roleMap.get(name)?.policies ?? [], caller);
    this.putRole(name, policies);
  }

  /** deleteRole, if every policy of the role is within the caller's scope. */
  deleteRoleAs(caller: PermissionSet, name: string): boolean {
    this.assertMayChangeRbac(caller);
    assertWithinScope(this.roleMap.get(name)?.policies ?? [], caller);
    return this.deleteRole(name);
  }

  /** bind, if every policy of the role is within the caller's scope. */
  bindAs(caller: PermissionSet, subject: BindingSubject, role: string): void {
    this.assertMayChangeRbac(caller);
    const r = this.roleMap.get(role);
    if (!r) throw new UnknownRoleError(role);
    assertWithinScope(r.policies, caller);
    this.bind(subject, role);
  }

  /** unbind, under the same rule as bindAs. */
  unbindAs(caller: PermissionSet, subject: BindingSubject, role: string): boolean {
    this.assertMayChangeRbac(caller);
    assertWithinScope(this.roleMap.get(role)?.policies ?? [], caller);
    return this.unbind(subject, role);
  }
}
