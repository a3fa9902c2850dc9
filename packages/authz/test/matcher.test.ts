// Goal: a compiled permission set allows exactly what the grammar's plain reading allows (with
// inheritance), never anything of another tenant, and islands stay islands. Method: hand-picked
// grants, and fast-check properties against a naive matcher written straight from the README's
// permission table.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Action,
  CrossTenantPermissionError,
  type Permission,
  PermissionSet,
  narrowPermissions,
  parsePermission,
  withinScope,
} from '../src/index.js';
import { type Check, TENANTS, checkArb, permissionArb } from './arbitraries.js';

const set = (tenant: string, ...perms: string[]) =>
  PermissionSet.compile(tenant, perms.map(parsePermission));

/** (granted action, kind) → the (action, kind) pairs it allows, itself included. */
const IMPLIES: Record<string, string[]> = {
  'tenant.manage/tenant': [
    'namespace.manage/namespace',
    'stream.manage/stream',
    'cache.manage/cache',
    'group.manage/group',
  ],
  'namespace.manage/namespace': [
    'stream.manage/stream',
    'cache.manage/cache',
    'group.manage/group',
  ],
  'stream.manage/stream': ['group.manage/group'],
  'stream.subscribe/stream': ['group.consume/group'],
  'rbac.manage/tenant': ['rbac.view/tenant'],
};

/** The plain reading: same or implied action, and the grant's path is a prefix (`*` ends it). */
function naiveAllows(perms: readonly Permission[], c: Check): boolean {
  return perms.some((p) => {
    const from = `${p.action}/${p.kind}`;
    const to = `${c.action}/${c.kind}`;
    if (from !== to && !(IMPLIES[from] ?? []).includes(to)) return false;
    for (let i = 0; i < p.segments.length; i++) {
      if (p.segments[i] === '*') return true;
      if (p.segments[i] !== c.path[i]) return false;
    }
    return true;
  });
}

const allows = (s: PermissionSet, c: Check) =>
  s.allows(c.action, c.kind, c.path[0] as string, c.path[1], c.path[2], c.path[3]);

describe('compiled permission set', () => {
  it('tenant_manage_implies_every_manage_action_below_it_and_no_data_action', () => {
    const s = set('t1', 'tenant.manage:tenant:t1');
    expect(s.allows('tenant.manage', 'tenant', 't1')).toBe(true);
    expect(s.allows('namespace.manage', 'namespace', 't1', 'ns')).toBe(true);
    expect(s.allows('stream.manage', 'stream', 't1', 'ns', 'orders')).toBe(true);
    expect(s.allows('cache.manage', 'cache', 't1', 'ns', 'c')).toBe(true);
    expect(s.allows('group.manage', 'group', 't1', 'ns', 'orders', 'g')).toBe(true);
    expect(s.allows('stream.publish', 'stream', 't1', 'ns', 'orders')).toBe(false);
    expect(s.allows('cache.read', 'cache', 't1', 'ns', 'c')).toBe(false);
    expect(s.allows('rbac.manage', 'tenant', 't1')).toBe(false);
    expect(s.allowsCluster('tenant.manage')).toBe(false);
  });

  it('stream_subscribe_implies_group_consume_on_that_streams_groups_only', () => {
    const s = set('t1', 'stream.subscribe:stream:t1/ns/orders');
    expect(s.allows('group.consume', 'group', 't1', 'ns', 'orders', 'billing')).toBe(true);
    expect(s.allows('group.consume', 'group', 't1', 'ns', 'payments', 'billing')).toBe(false);
    expect(s.allows('group.manage', 'group', 't1', 'ns', 'orders', 'billing')).toBe(false);
    expect(s.allows('stream.publish', 'stream', 't1', 'ns', 'orders')).toBe(false);
  });

  it('a_cache_read_grant_never_allows_a_cache_write', () => {
    const s = set('t1', 'cache.read:cache:t1/*/*');
    expect(s.allows('cache.read', 'cache', 't1', 'ns', 'sessions')).toBe(true);
    expect(s.allows('cache.write', 'cache', 't1', 'ns', 'sessions')).toBe(false);
  });

  it('a_wildcard_grant_covers_every_name_below_its_prefix_and_nothing_beside_it', () => {
    const s = set('t1', 'stream.publish:stream:t1/ns/*');
    expect(s.allows('stream.publish', 'stream', 't1', 'ns', 'a')).toBe(true);
    expect(s.allows('stream.publish', 'stream', 't1', 'ns', 'b')).toBe(true);
    expect(s.allows('stream.publish', 'stream', 't1', 'other', 'a')).toBe(false);
  });

  it('cluster_grants_answer_cluster_and_node_checks_and_nothing_inside_a_tenant', () => {
    const s = set('t1', 'tenant.manage:cluster:*', 'node.view:cluster:*', 'node.manage:cluster:*');
    expect(s.allowsCluster('tenant.manage')).toBe(true);
    expect(s.allowsNode('node.manage', 'broker-9')).toBe(true);
    expect(s.allowsNode('node.view', 'broker-9')).toBe(true);
    for (const kind of ['tenant', 'namespace', 'stream', 'cache', 'group'] as const) {
      expect(s.allows('tenant.manage', kind, 't1', 'a', 'b', 'c')).toBe(false);
      expect(s.allows(`${kind}.manage` as Action, kind, 't1', 'a', 'b', 'c')).toBe(false);
    }
  });

  it('a_node_grant_covers_only_its_own_node', () => {
    const s = set('t1', 'node.manage:node:broker-1');
    expect(s.allowsNode('node.manage', 'broker-1')).toBe(true);
    expect(s.allowsNode('node.manage', 'broker-2')).toBe(false);
    expect(s.allowsCluster('node.manage')).toBe(false);
  });

  it('compiling_a_permission_on_another_tenants_object_is_refused', () => {
    expect(() => set('t1', 'stream.publish:stream:t2/ns/orders')).toThrow(
      CrossTenantPermissionError,
    );
  });

  it('the_compiled_matcher_agrees_with_the_plain_reading_of_the_permission_table', () => {
    fc.assert(
      fc.property(fc.array(permissionArb('t1'), { maxLength: 8 }), checkArb, (perms, c) => {
        expect(allows(PermissionSet.compile('t1', perms), c)).toBe(naiveAllows(perms, c));
      }),
      { numRuns: 5000 },
    );
  });

  it('no_permission_ever_matches_another_tenants_object', () => {
    // Every grant a token of `home` may hold (its own objects, cluster:*, node:ID) misses every
    // object of another tenant; a grant naming another tenant cannot even be compiled.
    const arb = fc
      .constantFrom(...TENANTS)
      .chain((home) =>
        fc.tuple(
          fc.constant(home),
          fc.array(permissionArb(home), { maxLength: 8 }),
          permissionArb(),
          checkArb,
        ),
      );
    fc.assert(
      fc.property(arb, ([home, perms, foreign, c]) => {
        const s = PermissionSet.compile(home, perms);
        if (c.path[0] !== home) expect(allows(s, c)).toBe(false);
        const t = foreign.segments[0];
        if (foreign.kind !== 'cluster' && foreign.kind !== 'node' && t !== home) {
          expect(() => PermissionSet.compile(home, [...perms, foreign])).toThrow(
            CrossTenantPermissionError,
          );
        }
      }),
      { numRuns: 5000 },
    );
  });

  it('narrowing_never_widens', () => {
    const perms = fc.array(permissionArb('t1'), { maxLength: 8 });
    fc.assert(
      fc.property(perms, perms, fc.array(checkArb, { maxLength: 16 }), (held, wanted, checks) => {
        const heldSet = PermissionSet.compile('t1', held);
        const narrowed = narrowPermissions(wanted, heldSet);
        const narrowedSet = PermissionSet.compile('t1', narrowed);
        for (const p of narrowed) expect(withinScope(p, heldSet)).toBe(true);
        for (const c of checks) {
          if (allows(narrowedSet, c)) expect(allows(heldSet, c)).toBe(true);
        }
        for (const a of ['tenant.manage', 'node.view', 'node.manage'] as Action[]) {
          if (narrowedSet.allowsCluster(a)) expect(heldSet.allowsCluster(a)).toBe(true);
          if (narrowedSet.allowsNode(a, 'a')) expect(heldSet.allowsNode(a, 'a')).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('a_grant_is_within_scope_exactly_when_the_holder_already_allows_all_it_would_allow', () => {
    const held = set('t1', 'namespace.manage:namespace:t1/ns');
    const inside = (s: string) => withinScope(parsePermission(s), held);
    expect(inside('stream.manage:stream:t1/ns/*')).toBe(true);
    expect(inside('group.manage:group:t1/ns/orders/*')).toBe(true);
    expect(inside('namespace.manage:namespace:t1/ns')).toBe(true);
    expect(inside('namespace.manage:namespace:t1/*')).toBe(false);
    expect(inside('tenant.manage:tenant:t1')).toBe(false);
    expect(inside('stream.publish:stream:t1/ns/orders')).toBe(false);
    expect(inside('node.view:cluster:*')).toBe(false);
  });
});
