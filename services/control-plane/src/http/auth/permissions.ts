/**
 * Builders for the RouteAuth of each route (the table in docs/control-plane.md), and the text
 * the OpenAPI document carries for each (`x-felix-auth`), so the table can be checked against
 * the routes (`every_v1_route_requires_a_permission`).
 */
import type { Action } from '@felix/authz';
import type { RouteAuth, RouteRequestParts } from './contract.js';

export const OPEN: RouteAuth = { kind: 'open' };

type Part = (r: RouteRequestParts) => string;

/** A path parameter. */
export const param =
  (name: string): Part =>
  (r) =>
    r.params[name] ?? '';

/** A field of the (validated) JSON body. */
export const bodyField =
  (name: string): Part =>
  (r) => {
    const v = (r.body as Record<string, unknown> | null | undefined)?.[name];
    return typeof v === 'string' ? v : '';
  };

/** `action` on `kind:` followed by the parts joined with `/` (a literal string is a part too). */
export function perm(action: Action, kind: string, ...parts: (Part | string)[]): RouteAuth {
  return {
    kind: 'permission',
    action,
    object: (r) => `${kind}:${parts.map((p) => (typeof p === 'string' ? p : p(r))).join('/')}`,
  };
}

/** `action` on `cluster:*` (operators). */
export const onCluster = (action: Action): RouteAuth => perm(action, 'cluster', '*');

/** Text for the OpenAPI document and the permission table: `action on object-template`. */
export function describeAuth(auth: RouteAuth): string {
  switch (auth.kind) {
    case 'open':
      return 'open';
    case 'principal':
      return `principal: ${auth.describe}`;
    case 'credential':
      return `credential: ${auth.describe}`;
    case 'permission': {
      // Placeholders in place of the request: `{tenant_id}` for a parameter, `{body.x}` for a field.
      const params = new Proxy({}, { get: (_, k) => `{${String(k)}}` }) as Record<string, string>;
      const body = new Proxy({}, { get: (_, k) => `{body.${String(k)}}` });
      return `${auth.action} on ${auth.object({ params, query: {}, body })}`;
    }
  }
}
