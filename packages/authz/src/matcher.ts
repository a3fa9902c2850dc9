/**
 * The compiled permission set: what a token or a principal may do, answered without allocating.
 *
 * Each permission is expanded once (inheritance) into entries (action, kind, prefix), where the
 * prefix is the object path up to its first `*`. Entries live in one trie per (action, kind),
 * keyed by path segments. A check walks at most four Map lookups with the caller's own strings:
 * no concatenation, no splitting, no arrays.
 */
import { CrossTenantPermissionError } from './errors.js';
import {
  type Action,
  type ObjectKind,
  type Permission,
  type TenantObjectKind,
  concretePrefix,
  printPermission,
  tenantOf,
} from './grammar.js';

/** One expanded grant: `action` on every object of `kind` whose path starts with `prefix`. */
export interface GrantEntry {
  readonly action: Action;
  readonly kind: ObjectKind;
  readonly prefix: readonly string[];
}

/** The manage actions of containers: each implies managing what the container holds. */
type ContainerManage = 'tenant.manage' | 'namespace.manage' | 'stream.manage';
const CONTAINER_MANAGE: ReadonlySet<Action> = new Set<Action>([
  'tenant.manage',
  'namespace.manage',
  'stream.manage',
]);

/** tenant ⊃ namespace ⊃ (stream ⊃ group, cache): one entry per kind below the container. */
function expandManage(action: ContainerManage, prefix: readonly string[], out: GrantEntry[]) {
  switch (action) {
    case 'tenant.manage':
      out.push({ action, kind: 'tenant', prefix });
      expandManage('namespace.manage', prefix, out);
      return;
    case 'namespace.manage':
      out.push({ action, kind: 'namespace', prefix });
      out.push({ action: 'cache.manage', kind: 'cache', prefix });
      expandManage('stream.manage', prefix, out);
      return;
    case 'stream.manage':
      out.push({ action, kind: 'stream', prefix });
      out.push({ action: 'group.manage', kind: 'group', prefix });
  }
}

/** Expands inheritance. Islands never expand into a tenant: `tenant.manage:cluster:*` stays put. */
export function expandPermission(p: Permission): GrantEntry[] {
  const prefix = concretePrefix(p);
  const out: GrantEntry[] = [];
  if (p.kind === 'cluster') {
    out.push({ action: p.action, kind: 'cluster', prefix: [] });
    // An operator's node grant on the cluster covers every node.
    if (p.action === 'node.view' || p.action === 'node.manage') {
      out.push({ action: p.action, kind: 'node', prefix: [] });
    }
    return out;
  }
  if (CONTAINER_MANAGE.has(p.action)) {
    expandManage(p.action as ContainerManage, prefix, out);
    return out;
  }
  out.push({ action: p.action, kind: p.kind, prefix });
  if (p.action === 'stream.subscribe') out.push({ action: 'group.consume', kind: 'group', prefix });
  if (p.action === 'rbac.manage') out.push({ action: 'rbac.view', kind: 'tenant', prefix });
  return out;
}

interface TrieNode {
  terminal: boolean;
  children: Map<string, TrieNode> | null;
}

type KindRoots = Partial<Record<ObjectKind, TrieNode>>;

function insert(root: TrieNode, prefix: readonly string[]): void {
  let node = root;
  for (const seg of prefix) {
    if (node.terminal) return; // a shorter prefix already covers this one
    node.children ??= new Map();
    let next = node.children.get(seg);
    if (!next) {
      next = { terminal: false, children: null };
      node.children.set(seg, next);
    }
    node = next;
  }
  node.terminal = true;
  node.children = null; // everything below is covered now
}

/**
 * Compiled permissions of one tenant (plus islands). Checks are pure and allocation-free; the
 * set is immutable once built.
 */
export class PermissionSet {
  private readonly byAction = new Map<string, KindRoots>();

  private constructor(
    readonly tenant: string,
    readonly permissions: readonly Permission[],
  ) {
    for (const p of permissions) {
      for (const e of expandPermission(p)) this.add(e);
    }
  }

  /**
   * Compiles `permissions` for `tenant`. A permission naming another tenant's object is refused
   * (CrossTenantPermissionError): such a grant must never reach a check.
   */
  static compile(tenant: string, permissions: readonly Permission[]): PermissionSet {
    for (const p of permissions) {
      const t = tenantOf(p);
      if (t !== null && t !== tenant) {
        throw new CrossTenantPermissionError(tenant, printPermission(p));
      }
    }
    return new PermissionSet(tenant, permissions);
  }

  private add(e: GrantEntry): void {
    let roots = this.byAction.get(e.action);
    if (!roots) {
      roots = {};
      this.byAction.set(e.action, roots);
    }
    let root = roots[e.kind];
    if (!root) {
      root = { terminal: false, children: null };
      roots[e.kind] = root;
    }
    insert(root, e.prefix);
  }

  /**
   * May `action` be done on the object `kind:tenant/namespace/name/sub`? Pass as many path
   * segments as the kind has (tenant: 1, namespace: 2, stream and cache: 3, group: 4). Another
   * tenant than the set's own never matches. Allocates nothing.
   */
  allows(
    action: Action,
    kind: TenantObjectKind,
    tenant: string,
    namespace?: string,
    name?: string,
    sub?: string,
  ): boolean {
    if (tenant !== this.tenant) return false;
    const root = this.byAction.get(action)?.[kind];
    if (root === undefined) return false;
    let node = root.children?.get(tenant);
    if (node === undefined) return false;
    if (node.terminal || kind === 'tenant') return node.terminal;
    node = node.children?.get(namespace as string);
    if (node === undefined) return false;
    if (node.terminal || kind === 'namespace') return node.terminal;
    node = node.children?.get(name as string);
    if (node === undefined) return false;
    if (node.terminal || kind !== 'group') return node.terminal;
    return node.children?.get(sub as string)?.terminal === true;
  }

  /** May `action` be done on `cluster:*`? Tenant grants never reach here. */
  allowsCluster(action: Action): boolean {
    return this.byAction.get(action)?.cluster?.terminal === true;
  }

  /** May `action` be done on `node:nodeId`? True for that node's own grant or a cluster grant. */
  allowsNode(action: Action, nodeId: string): boolean {
    const root = this.byAction.get(action)?.node;
    if (root === undefined) return false;
    return root.terminal || root.children?.get(nodeId)?.terminal === true;
  }

  /** True when one grant of this set covers the whole of `entry` (used by the delegation rule). */
  covers(entry: GrantEntry): boolean {
    if (entry.kind !== 'cluster' && entry.kind !== 'node' && entry.prefix[0] !== this.tenant) {
      return false;
    }
    let node = this.byAction.get(entry.action)?.[entry.kind];
    for (let i = 0; node !== undefined; i++) {
      if (node.terminal) return true;
      if (i === entry.prefix.length) return false;
      node = node.children?.get(entry.prefix[i] as string);
    }
    return false;
  }
}

/** Compiles from permission objects; see PermissionSet.compile. */
export function compilePermissions(
  tenant: string,
  permissions: readonly Permission[],
): PermissionSet {
  return PermissionSet.compile(tenant, permissions);
}
