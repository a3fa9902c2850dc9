/**
 * The roles bootstrap creates. `admin` runs one tenant: everything inside it (the manage
 * actions, RBAC, delegation, and every data action) and nothing outside it. `operator` is added
 * only for a tenant bootstrapped with `operator: true`: it creates and deletes tenants and sees
 * and manages every node, and still reads no tenant's data (cluster:* is an island).
 */

export const ADMIN_ROLE = 'admin';
export const OPERATOR_ROLE = 'operator';

export function adminPermissions(t: string): string[] {
  return [
    `tenant.manage:tenant:${t}`,
    `rbac.manage:tenant:${t}`,
    `token.delegate:tenant:${t}`,
    `stream.publish:stream:${t}/*/*`,
    `stream.subscribe:stream:${t}/*/*`,
    `cache.read:cache:${t}/*/*`,
    `cache.write:cache:${t}/*/*`,
    `group.consume:group:${t}/*/*/*`,
  ];
}

export const OPERATOR_PERMISSIONS: readonly string[] = [
  'tenant.manage:cluster:*',
  'node.view:cluster:*',
  'node.manage:cluster:*',
];
