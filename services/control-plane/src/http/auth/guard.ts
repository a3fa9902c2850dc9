/**
 * The guard: every route declares `config.auth` (a route without it fails the app's start), and
 * every `permission` or `principal` route needs `Authorization: Bearer <felix-controlplane
 * token>`. The token's unverified `tid` only picks which tenant's keys to try; verifyToken then
 * checks signature, issuer, audience, expiry and that `tid`. Authentication runs first thing
 * (onRequest, so an unauthenticated body is never parsed); the permission check runs after
 * validation and before the handler, so a caller without the permission learns nothing of
 * whether the object exists (401/403 before any 404).
 */
import {
  type Action,
  CONTROL_PLANE_AUDIENCE,
  KIND_DEPTH,
  type ObjectKind,
  type PermissionSet,
  TOKEN_BYTES_MAX,
  TokenError,
  VerifiedTokenCache,
  isName,
} from '@felix/authz';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { TenantKeyCache } from '../../auth/keys.js';
import type { Clock } from '../../clock.js';
import { ForbiddenError, UnauthenticatedError } from '../../errors.js';
import type { Metrics } from '../../metrics.js';
import type { RouteAuth, RouteRequestParts } from './contract.js';
import { tableAuth } from './route-table.js';

export interface GuardDeps {
  keys: TenantKeyCache;
  metrics: Metrics;
  clock: Clock;
  /** Verified tokens, so a broker's heartbeats do not verify its token every 5 s. */
  verified?: VerifiedTokenCache;
}

/**
 * At registration: gives a route its entry of the permission table (route-table.ts) unless it
 * declares `config.auth` itself, and refuses a route that has neither, which fails the start.
 */
export function requireRouteAuth(route: RouteOptions): void {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const auth = route.config?.auth ?? tableAuth(String(methods[0]), route.url);
  if (!auth || typeof auth !== 'object' || !('kind' in auth)) {
    throw new Error(
      `route ${methods.join(',')} ${route.url} declares no config.auth and has no entry in the permission table (see http/auth/contract.ts)`,
    );
  }
  route.config = { ...route.config, auth };
}

/** The tenant a token claims, read without verifying (it only selects keys to verify with). */
export function unverifiedTenant(token: string): string | undefined {
  if (token.length > TOKEN_BYTES_MAX) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown;
    const tid = (payload as { tid?: unknown } | null)?.tid;
    return typeof tid === 'string' && isName(tid) ? tid : undefined;
  } catch {
    // Not JSON: the token is malformed, which the caller reports as unauthenticated.
    return undefined;
  }
}

function bearer(req: FastifyRequest): string {
  const h = req.headers.authorization;
  if (typeof h !== 'string' || h.length === 0)
    throw new UnauthenticatedError(
      'this route needs Authorization: Bearer <felix-controlplane token>',
    );
  const m = /^Bearer +(\S+)$/i.exec(h);
  if (!m) throw new UnauthenticatedError('the Authorization header must be "Bearer <token>"');
  return m[1]!;
}

/**
 * Does `set` allow `action` on `object` (`kind:path`)? An object that does not parse (a name
 * with a slash, a wrong segment count) is never allowed. Wildcards in `object` (`stream:t/n/*`)
 * need a grant covering all of it.
 */
export function allowsObject(set: PermissionSet, action: Action, object: string): boolean {
  const colon = object.indexOf(':');
  const kind = object.slice(0, colon) as ObjectKind;
  if (colon < 0 || !(kind in KIND_DEPTH)) return false;
  const segs = object.slice(colon + 1).split('/');
  if (segs.length !== KIND_DEPTH[kind]) return false;
  if (kind === 'cluster') return segs[0] === '*' && set.allowsCluster(action);
  if (kind === 'node') return set.allowsNode(action, segs[0]!);
  return set.allows(action, kind, segs[0]!, segs[1], segs[2], segs[3]);
}

function partsOf(req: FastifyRequest): RouteRequestParts {
  return {
    params: (req.params ?? {}) as Record<string, string>,
    query: req.query,
    body: req.body,
  };
}

/** Why the guard refused a request, for its one response line (app.ts's onResponse). */
const refusals = new WeakMap<FastifyRequest, Record<string, unknown>>();

/** The guard's reason and who was refused, when it refused `req`. */
export function refusalOf(req: FastifyRequest): Record<string, unknown> | undefined {
  return refusals.get(req);
}

export function installGuard(app: FastifyInstance, deps: GuardDeps): void {
  const verified = deps.verified ?? new VerifiedTokenCache();
  const refuse = (req: FastifyRequest, reason: string, detail: Record<string, unknown>) => {
    deps.metrics.authRefusals.inc({ reason });
    refusals.set(req, { reason, route: req.routeOptions.url, ...detail });
  };

  app.addHook('onRoute', requireRouteAuth);

  app.addHook('onRequest', async (req) => {
    const auth = req.routeOptions.config?.auth as RouteAuth | undefined;
    if (!auth || auth.kind === 'open' || auth.kind === 'credential') return;
    try {
      const token = bearer(req);
      const tenant = unverifiedTenant(token);
      if (!tenant) throw new UnauthenticatedError('the token is malformed (no readable tid claim)');
      await deps.keys.preload(tenant);
      const v = await verified.verify(token, {
        audience: CONTROL_PLANE_AUDIENCE,
        tenant,
        keys: deps.keys,
        nowS: Math.floor(deps.clock.nowMs() / 1000),
      });
      req.principal = { claims: v.claims, permissions: v.permissions };
    } catch (err) {
      if (err instanceof TokenError) {
        refuse(req, err.reason, {});
        throw new UnauthenticatedError(`token refused: ${err.message}`, { cause: err });
      }
      if (err instanceof UnauthenticatedError) {
        const h = req.headers.authorization;
        refuse(req, typeof h === 'string' && h !== '' ? 'malformed' : 'no_token', {});
      }
      throw err;
    }
  });

  app.addHook('preHandler', async (req) => {
    const auth = req.routeOptions.config?.auth as RouteAuth | undefined;
    const principal = req.principal;
    if (!auth || !principal) return;
    // A token minted in another's name is logged with its holder too (`act`).
    const act = principal.claims.act?.sub;
    const who = { sub: principal.claims.sub, tid: principal.claims.tid, ...(act ? { act } : {}) };
    if (auth.kind === 'principal') {
      const t = (req.params as Record<string, string> | undefined)?.tenant_id;
      if (t !== undefined && t !== principal.claims.tid) {
        refuse(req, 'forbidden', { ...who, object: `tenant:${t}` });
        throw new ForbiddenError(
          auth.describe,
          `tenant:${t}`,
          `a token of tenant ${principal.claims.tid} cannot act in tenant ${t}`,
        );
      }
      return;
    }
    if (auth.kind !== 'permission') return;
    const object = auth.object(partsOf(req));
    if (!allowsObject(principal.permissions, auth.action, object)) {
      refuse(req, 'forbidden', { ...who, action: auth.action, object });
      throw new ForbiddenError(auth.action, object);
    }
  });
}
