// Shared fast-check arbitraries: permissions over a few tenants and names, so that generated
// grants and checks collide often enough to exercise matches and misses alike.
import fc from 'fast-check';
import {
  ACTIONS,
  ACTION_KINDS,
  type Action,
  KIND_DEPTH,
  type ObjectKind,
  type Permission,
  type TenantObjectKind,
} from '../src/index.js';

export const TENANTS = ['t1', 't2', 't3'] as const;
export const NAMES = ['a', 'b', 'orders', 'x.y-z_1'] as const;
export const TENANT_KINDS: readonly TenantObjectKind[] = [
  'tenant',
  'namespace',
  'stream',
  'cache',
  'group',
];

/** A permission; `tenant` pins the tenant segment when given. */
export function permissionArb(tenant?: string): fc.Arbitrary<Permission> {
  return fc
    .record({
      action: fc.constantFrom(...ACTIONS),
      pick: fc.nat(),
      tenant: tenant ? fc.constant(tenant) : fc.constantFrom(...TENANTS),
      names: fc.array(fc.constantFrom(...NAMES), { minLength: 4, maxLength: 4 }),
      concrete: fc.nat(),
    })
    .map(({ action, pick, tenant: t, names, concrete }) => {
      const kinds = ACTION_KINDS[action as Action];
      const kind = kinds[pick % kinds.length] as ObjectKind;
      if (kind === 'cluster') return { action, kind, segments: ['*'] };
      if (kind === 'node') return { action, kind, segments: [names[0] as string] };
      const depth = KIND_DEPTH[kind];
      const keep = 1 + (concrete % depth); // the tenant segment is always concrete
      const segments = [t, ...names.slice(0, depth - 1)].map((s, i) => (i < keep ? s : '*'));
      return { action, kind, segments };
    });
}

/** A check: an action, a tenant-scoped kind and a full concrete path. */
export interface Check {
  action: Action;
  kind: TenantObjectKind;
  path: string[];
}

export const checkArb: fc.Arbitrary<Check> = fc
  .record({
    action: fc.constantFrom(...ACTIONS),
    kind: fc.constantFrom(...TENANT_KINDS),
    tenant: fc.constantFrom(...TENANTS),
    names: fc.array(fc.constantFrom(...NAMES), { minLength: 3, maxLength: 3 }),
  })
  .map(({ action, kind, tenant, names }) => ({
    action,
    kind,
    path: [tenant, ...names].slice(0, KIND_DEPTH[kind]),
  }));
