/**
 * The delegation rule: a caller may grant only what lies within its own scope. A grant lies
 * within scope when every entry it expands to (inheritance included) is covered by one of the
 * caller's own grants. So `tenant.manage:tenant:t1` is outside the scope of a caller who holds
 * `namespace.manage:namespace:t1/*` (it would also grant tenant.manage itself), and nothing of
 * another tenant is ever within scope.
 */
import { DelegationRefusedError } from './errors.js';
import { type Permission, printPermission } from './grammar.js';
import { type PermissionSet, expandPermission } from './matcher.js';

/** Does `caller` hold everything `granted` would give? */
export function withinScope(granted: Permission, caller: PermissionSet): boolean {
  for (const entry of expandPermission(granted)) {
    if (!caller.covers(entry)) return false;
  }
  return true;
}

/** Throws DelegationRefusedError naming the first grant outside `caller`'s scope. */
export function assertWithinScope(granted: readonly Permission[], caller: PermissionSet): void {
  for (const p of granted) {
    if (!withinScope(p, caller)) throw new DelegationRefusedError(printPermission(p));
  }
}

/**
 * Keeps the requested permissions that lie within `held` (a token exchange or delegation that
 * narrows). The result never allows more than `held` does.
 */
export function narrowPermissions(
  requested: readonly Permission[],
  held: PermissionSet,
): Permission[] {
  return requested.filter((p) => withinScope(p, held));
}
