// Goal: a tenant's RBAC resolves a principal's permissions from its own and its IdP groups'
// bindings, refuses other tenants' objects, and enforces the delegation rule on every change.
// Method: direct calls on TenantRbac with callers compiled from hand-written grants.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CrossTenantPermissionError,
  DelegationRefusedError,
  InvalidRoleNameError,
  PermissionSet,
  TenantRbac,
  UnknownRoleError,
  parsePermission,
  printPermission,
} from '../src/index.js';
import { checkArb, permissionArb } from './arbitraries.js';

const perms = (...s: string[]) => s.map(parsePermission);
const caller = (...s: string[]) => PermissionSet.compile('t1', perms(...s));
const alice = { kind: 'principal', id: 'alice' } as const;
const devs = { kind: 'idp_group', id: 'https://idp.example#devs' } as const;

function rbac(): TenantRbac {
  const r = new TenantRbac('t1');
  r.putRole('publisher', perms('stream.publish:stream:t1/ns/*'));
  r.putRole('reader', perms('stream.subscribe:stream:t1/*/*', 'cache.read:cache:t1/*/*'));
  return r;
}

describe('tenant rbac', () => {
  it('a_principal_holds_the_union_of_its_own_and_its_idp_groups_roles', () => {
    const r = rbac();
    r.bind(alice, 'publisher');
    r.bind(devs, 'reader');
    expect(r.effectivePermissions('alice').map(printPermission)).toEqual([
      'stream.publish:stream:t1/ns/*',
    ]);
    const s = r.permissionSetFor('alice', [devs.id]);
    expect(s.allows('stream.publish', 'stream', 't1', 'ns', 'orders')).toBe(true);
    expect(s.allows('group.consume', 'group', 't1', 'other', 'orders', 'g')).toBe(true);
    expect(s.allows('cache.write', 'cache', 't1', 'ns', 'c')).toBe(false);
    expect(r.permissionSetFor('bob').allows('cache.read', 'cache', 't1', 'ns', 'c')).toBe(false);
  });

  it('deleting_a_role_removes_its_bindings', () => {
    const r = rbac();
    r.bind(alice, 'publisher');
    expect(r.deleteRole('publisher')).toBe(true);
    expect(r.bindings()).toEqual([]);
    expect(r.effectivePermissions('alice')).toEqual([]);
    expect(() => r.bind(alice, 'publisher')).toThrow(UnknownRoleError);
    expect(() => r.putRole('bad name', [])).toThrow(InvalidRoleNameError);
  });

  it('an_rbac_policy_on_another_tenants_object_is_refused', () => {
    const r = rbac();
    expect(() => r.putRole('x', perms('cache.read:cache:t2/ns/c'))).toThrow(
      CrossTenantPermissionError,
    );
    // Islands are not another tenant's: an operator tenant's role may hold them.
    r.putRole('operator', perms('tenant.manage:cluster:*', 'node.view:cluster:*'));
  });

  it('a_caller_may_grant_only_what_lies_within_its_own_scope', () => {
    const r = rbac();
    const nsAdmin = caller(
      'rbac.manage:tenant:t1',
      'namespace.manage:namespace:t1/ns',
      'stream.publish:stream:t1/ns/*',
    );
    r.putRoleAs(nsAdmin, 'ns-streams', perms('stream.manage:stream:t1/ns/*'));
    r.putRoleAs(nsAdmin, 'ns-pub', perms('stream.publish:stream:t1/ns/orders'));
    expect(() => r.putRoleAs(nsAdmin, 'wider', perms('stream.manage:stream:t1/*/*'))).toThrow(
      DelegationRefusedError,
    );
    expect(() => r.putRoleAs(nsAdmin, 'up', perms('tenant.manage:tenant:t1'))).toThrow(
      DelegationRefusedError,
    );
    expect(() => r.putRoleAs(nsAdmin, 'ops', perms('node.view:cluster:*'))).toThrow(
      DelegationRefusedError,
    );
    // Replacing or deleting a role whose current policies lie outside the scope is refused too.
    expect(() => r.putRoleAs(nsAdmin, 'reader', [])).toThrow(DelegationRefusedError);
    expect(() => r.deleteRoleAs(nsAdmin, 'reader')).toThrow(DelegationRefusedError);
    expect(r.deleteRoleAs(nsAdmin, 'ns-pub')).toBe(true);
  });

  it('binding_a_role_with_a_policy_outside_the_callers_scope_is_refused', () => {
    const r = rbac();
    const pubAdmin = caller('rbac.manage:tenant:t1', 'stream.publish:stream:t1/ns/*');
    r.bindAs(pubAdmin, alice, 'publisher');
    expect(() => r.bindAs(pubAdmin, alice, 'reader')).toThrow(DelegationRefusedError);
    expect(() => r.unbindAs(pubAdmin, devs, 'reader')).toThrow(DelegationRefusedError);
    expect(r.unbindAs(pubAdmin, alice, 'publisher')).toBe(true);
  });

  it('managing_resources_never_authorizes_an_rbac_change', () => {
    const r = rbac();
    const tenantAdmin = caller('tenant.manage:tenant:t1');
    expect(() => r.putRoleAs(tenantAdmin, 'x', perms('stream.manage:stream:t1/ns/*'))).toThrow(
      DelegationRefusedError,
    );
    expect(() => r.bindAs(tenantAdmin, alice, 'publisher')).toThrow(DelegationRefusedError);
  });

  it('a_role_a_caller_creates_and_binds_never_allows_more_than_the_caller', () => {
    const grants = fc.array(permissionArb('t1'), { maxLength: 6 });
    fc.assert(
      fc.property(grants, grants, fc.array(checkArb, { maxLength: 16 }), (held, wanted, checks) => {
        const grantor = PermissionSet.compile('t1', [...perms('rbac.manage:tenant:t1'), ...held]);
        const r = new TenantRbac('t1');
        try {
          r.putRoleAs(grantor, 'delegated', wanted);
          r.bindAs(grantor, alice, 'delegated');
        } catch (err) {
          if (err instanceof DelegationRefusedError) return; // refused: nothing was granted
          throw err;
        }
        const got = r.permissionSetFor('alice');
        for (const c of checks) {
          const [t, n, s1, s2] = c.path as [string, string?, string?, string?];
          if (got.allows(c.action, c.kind, t, n, s1, s2)) {
            expect(grantor.allows(c.action, c.kind, t, n, s1, s2)).toBe(true);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });
});
