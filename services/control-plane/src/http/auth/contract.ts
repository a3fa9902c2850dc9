/**
 * What a route declares about who may call it, and what a verified caller looks like. The
 * guard (guard.ts) reads `config.auth` of every route: a route without it fails the app's
 * start, so no route can be added without saying which permission it needs
 * (`every_v1_route_requires_a_permission` walks the OpenAPI document as well).
 */
import type { Action, FelixClaims, PermissionSet } from '@felix/authz';

/** The request parts a permission's object is built from (fastify's, already validated). */
export interface RouteRequestParts {
  readonly params: Readonly<Record<string, string>>;
  readonly query: unknown;
  readonly body: unknown;
}

export type RouteAuth =
  /** No token: `/v1/system/*` probes, `/metrics`, the OpenAPI document, a tenant's JWKS. */
  | { readonly kind: 'open' }
  /**
   * A control-plane-audience token whose permissions allow `action` on the object built from
   * the request (`stream:t1/ns/orders`, `cluster:*`, `node:n1`), checked before the handler.
   */
  | {
      readonly kind: 'permission';
      readonly action: Action;
      readonly object: (req: RouteRequestParts) => string;
    }
  /**
   * A valid control-plane-audience token of the route's tenant; the handler checks what the
   * caller may do (RBAC writes under the delegation rule, token delegation). `describe` names
   * that check for the permission table.
   */
  | { readonly kind: 'principal'; readonly describe: string }
  /** No bearer token: the body carries its own credential (token refresh, OIDC exchange). */
  | { readonly kind: 'credential'; readonly describe: string };

/** A caller whose token the guard verified. */
export interface Principal {
  readonly claims: FelixClaims;
  readonly permissions: PermissionSet;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    /** Set by the guard on `permission` and `principal` routes. */
    principal?: Principal;
  }
}
