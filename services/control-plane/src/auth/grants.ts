/**
 * What goes into an issued token: a principal's RBAC permissions narrowed by what the caller
 * asked for. Every filter only narrows: `requested` keeps the permissions that lie within the
 * held ones, `resources` keeps held permissions restricted to the named objects, and a
 * broker-audience token keeps only the actions a broker checks. The result never allows more
 * than the held set (`narrowing_never_widens_what_rbac_grants`).
 */
import {
  ACTION_KINDS,
  type Action,
  type Audience,
  BROKER_AUDIENCE,
  CONTROL_PLANE_AUDIENCE,
  type ObjectKind,
  type Permission,
  PermissionSet,
  narrowPermissions,
  printPermission,
  tenantOf,
  tryParsePermission,
  withinScope,
} from '@felix/authz';
import { InvalidPermissionError, InvalidRequestError } from '../errors.js';
import { NARROWING_ENTRIES_MAX } from '../limits.js';

/** The actions a broker checks (README of @felix/authz, "What each broker request needs"). */
export const BROKER_ACTIONS: ReadonlySet<Action> = new Set<Action>([
  'stream.publish',
  'stream.subscribe',
  'cache.read',
  'cache.write',
  'group.consume',
  'group.manage',
]);

/** An object a narrowing names: `kind:path` (trailing `*` allowed, as in the grammar). */
export interface ResourceObject {
  readonly kind: ObjectKind;
  readonly segments: readonly string[];
}

/** What an exchange, refresh or delegation asked for, already parsed. */
export interface Narrowing {
  readonly requested: readonly Permission[] | null;
  readonly resources: readonly ResourceObject[] | null;
  readonly audience: Audience;
}

/** The narrowing as stored with a refresh token and carried in request bodies. */
export interface NarrowingBody {
  requested?: string[] | null;
  resources?: string[] | null;
  audience?: string | null;
}

export function parseAudience(raw: string | null | undefined, fallback: Audience): Audience {
  if (raw === undefined || raw === null) return fallback;
  if (raw === BROKER_AUDIENCE || raw === CONTROL_PLANE_AUDIENCE) return raw;
  throw new InvalidRequestError(
    `audience must be ${BROKER_AUDIENCE} or ${CONTROL_PLANE_AUDIENCE}, not '${raw.slice(0, 64)}'`,
  );
}

function bounded(list: readonly string[], what: string): readonly string[] {
  if (list.length > NARROWING_ENTRIES_MAX) {
    throw new InvalidRequestError(`at most ${NARROWING_ENTRIES_MAX} ${what}`);
  }
  return list;
}

/** Parses `action:kind:path`; a string outside the grammar is a 400 naming the rule. */
export function parsePermissionField(raw: string): Permission {
  const r = tryParsePermission(raw);
  if (!r.ok) throw new InvalidPermissionError(r.error.message);
  return r.permission;
}

/** Parses `kind:path` by borrowing an action that applies to the kind. */
export function parseResource(raw: string): ResourceObject {
  const kind = raw.slice(0, raw.indexOf(':')) as ObjectKind;
  const action = (Object.keys(ACTION_KINDS) as Action[]).find((a) =>
    ACTION_KINDS[a].includes(kind),
  );
  if (!action) throw new InvalidPermissionError(`resource '${raw.slice(0, 64)}': unknown kind`);
  const p = parsePermissionField(`${action}:${raw}`);
  return { kind: p.kind, segments: p.segments };
}

export function parseNarrowing(body: NarrowingBody, fallback: Audience): Narrowing {
  const requested = body.requested ?? null;
  const resources = body.resources ?? null;
  return {
    requested:
      requested === null ? null : bounded(requested, 'requested').map(parsePermissionField),
    resources: resources === null ? null : bounded(resources, 'resources').map(parseResource),
    audience: parseAudience(body.audience, fallback),
  };
}

export function narrowingBody(n: Narrowing): Required<NarrowingBody> {
  return {
    requested: n.requested?.map(printPermission) ?? null,
    resources: n.resources?.map((r) => `${r.kind}:${r.segments.join('/')}`) ?? null,
    audience: n.audience,
  };
}

/**
 * Restricts `held` to the named objects: a held permission inside a resource is kept whole; a
 * held permission covering a resource is kept only on that resource.
 */
function restrictToResources(
  tenant: string,
  held: readonly Permission[],
  resources: readonly ResourceObject[],
): Permission[] {
  const out: Permission[] = [];
  for (const r of resources) {
    const t = r.kind === 'cluster' || r.kind === 'node' ? null : r.segments[0];
    if (t !== null && t !== tenant) continue; // another tenant's object narrows to nothing
    for (const p of held) {
      if (!ACTION_KINDS[p.action].includes(r.kind)) continue;
      const onResource: Permission = { action: p.action, kind: r.kind, segments: r.segments };
      const single = PermissionSet.compile(tenant, [p]);
      if (withinScope(onResource, single)) out.push(onResource);
      else if (withinScope(p, PermissionSet.compile(tenant, [onResource]))) out.push(p);
    }
  }
  return out;
}

function dedupe(perms: readonly Permission[]): Permission[] {
  const seen = new Map<string, Permission>();
  for (const p of perms) seen.set(printPermission(p), p);
  return [...seen.values()];
}

/**
 * The permissions a token gets: `held` (the principal's RBAC grants, as strings from the store)
 * narrowed by `n`. Unparseable or foreign stored grants are skipped, never widened.
 */
export function grantedPermissions(
  tenant: string,
  held: readonly (string | Permission)[],
  n: Narrowing,
): Permission[] {
  let perms: Permission[] = [];
  for (const raw of held) {
    const p =
      typeof raw === 'string' ? tryParsePermission(raw) : { ok: true as const, permission: raw };
    if (!p.ok) continue;
    const t = tenantOf(p.permission);
    if (t === null || t === tenant) perms.push(p.permission);
  }
  perms = dedupe(perms);
  if (n.requested !== null) {
    perms = narrowPermissions(n.requested, PermissionSet.compile(tenant, perms));
  }
  if (n.resources !== null) perms = restrictToResources(tenant, perms, n.resources);
  if (n.audience === BROKER_AUDIENCE) perms = perms.filter((p) => BROKER_ACTIONS.has(p.action));
  return dedupe(perms);
}
