/**
 * The permission grammar: `action:kind:path`, e.g. `stream.publish:stream:t1/orders/*`.
 * Which actions exist, which object kinds each may name, and parse/print that round-trip.
 */
import { PermissionParseError, type PermissionRefusal } from './errors.js';
import { NAME_BYTES_MAX, PERMISSION_BYTES_MAX } from './limits.js';

/** Every action, in the order of the table in the README. */
export const ACTIONS = [
  'stream.publish',
  'stream.subscribe',
  'cache.read',
  'cache.write',
  'group.consume',
  'tenant.manage',
  'namespace.manage',
  'stream.manage',
  'cache.manage',
  'group.manage',
  'rbac.view',
  'rbac.manage',
  'token.delegate',
  'node.view',
  'node.manage',
] as const;
export type Action = (typeof ACTIONS)[number];

/** Object kinds inside a tenant: the first path segment is always the tenant id. */
export type TenantObjectKind = 'tenant' | 'namespace' | 'stream' | 'cache' | 'group';
/** Islands: objects outside every tenant. */
export type IslandObjectKind = 'cluster' | 'node';
export type ObjectKind = TenantObjectKind | IslandObjectKind;

/** Path segments each kind takes (cluster takes the single segment `*`). */
export const KIND_DEPTH: Readonly<Record<ObjectKind, number>> = {
  tenant: 1,
  namespace: 2,
  stream: 3,
  cache: 3,
  group: 4,
  cluster: 1,
  node: 1,
};

/** The object kinds each action may be granted on (the grammar refuses the rest). */
export const ACTION_KINDS: Readonly<Record<Action, readonly ObjectKind[]>> = {
  'stream.publish': ['stream'],
  'stream.subscribe': ['stream'],
  'cache.read': ['cache'],
  'cache.write': ['cache'],
  'group.consume': ['group'],
  'tenant.manage': ['tenant', 'cluster'],
  'namespace.manage': ['namespace'],
  'stream.manage': ['stream'],
  'cache.manage': ['cache'],
  'group.manage': ['group'],
  'rbac.view': ['tenant'],
  'rbac.manage': ['tenant'],
  'token.delegate': ['tenant'],
  'node.view': ['cluster'],
  'node.manage': ['cluster', 'node'],
};

/** One parsed permission. `segments` keeps `*` entries so printing round-trips exactly. */
export interface Permission {
  readonly action: Action;
  readonly kind: ObjectKind;
  readonly segments: readonly string[];
}

const ACTION_SET: ReadonlySet<string> = new Set(ACTIONS);
const KINDS: ReadonlySet<string> = new Set(Object.keys(KIND_DEPTH));

/** True for an island kind (`cluster`, `node`): never part of a tenant. */
export function isIslandKind(kind: ObjectKind): kind is IslandObjectKind {
  return kind === 'cluster' || kind === 'node';
}

/** The tenant a permission's object lies in, or null for an island. */
export function tenantOf(p: Permission): string | null {
  return isIslandKind(p.kind) ? null : (p.segments[0] ?? null);
}

/** Segments before the first `*`: the object prefix the permission covers. */
export function concretePrefix(p: Permission): readonly string[] {
  const i = p.segments.indexOf('*');
  return i < 0 ? p.segments : p.segments.slice(0, i);
}

/** A catalog name: 1–128 of `[A-Za-z0-9_.-]`, starting with a letter or digit. */
export function isName(s: string): boolean {
  if (s.length === 0 || s.length > NAME_BYTES_MAX) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const alnum = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    if (alnum) continue;
    if (i === 0 || (c !== 95 && c !== 46 && c !== 45)) return false;
  }
  return true;
}

function refuse(reason: PermissionRefusal, input: string): never {
  throw new PermissionParseError(reason, input);
}

/** Checks the path segments of `kind`; returns the refusal or null. */
function pathRefusal(kind: ObjectKind, segments: readonly string[]): PermissionRefusal | null {
  if (segments.length !== KIND_DEPTH[kind]) return 'wrong_segment_count';
  if (kind === 'cluster') return segments[0] === '*' ? null : 'cluster_must_be_wildcard';
  let wild = false;
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i] as string;
    if (s === '*') {
      if (i === 0) return kind === 'node' ? 'wildcard_node' : 'wildcard_tenant';
      wild = true;
    } else if (wild) {
      return 'wildcard_not_trailing';
    } else if (!isName(s)) {
      return 'bad_name';
    }
  }
  return null;
}

/**
 * Parses `action:kind:path`. Refuses, with a reason, anything outside the grammar: unknown
 * actions or kinds, wrong segment counts, bad names, `*` in the tenant or node position or
 * before a name, and an action on a kind it does not apply to.
 */
export function parsePermission(input: string): Permission {
  if (input.length > PERMISSION_BYTES_MAX) refuse('too_long', input);
  const c1 = input.indexOf(':');
  if (c1 <= 0) refuse('missing_action', input);
  const action = input.slice(0, c1);
  if (!ACTION_SET.has(action)) refuse('unknown_action', input);
  const c2 = input.indexOf(':', c1 + 1);
  if (c2 < 0 || c2 === input.length - 1) refuse('missing_object', input);
  const kind = input.slice(c1 + 1, c2);
  if (!KINDS.has(kind)) refuse('unknown_object_kind', input);
  const segments = input.slice(c2 + 1).split('/');
  const bad = pathRefusal(kind as ObjectKind, segments);
  if (bad) refuse(bad, input);
  if (!ACTION_KINDS[action as Action].includes(kind as ObjectKind)) {
    refuse('action_not_applicable', input);
  }
  return { action: action as Action, kind: kind as ObjectKind, segments };
}

/** Parses, returning the refusal instead of throwing (for filters and UIs). */
export function tryParsePermission(
  input: string,
): { ok: true; permission: Permission } | { ok: false; error: PermissionParseError } {
  try {
    return { ok: true, permission: parsePermission(input) };
  } catch (err) {
    if (err instanceof PermissionParseError) return { ok: false, error: err };
    throw err;
  }
}

/** Prints the canonical string; `parsePermission(printPermission(p))` equals `p`. */
export function printPermission(p: Permission): string {
  return `${p.action}:${p.kind}:${p.segments.join('/')}`;
}
