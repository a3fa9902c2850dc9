/**
 * RBAC routes of a tenant: `GET|POST|DELETE /v1/tenants/{t}/rbac/policies` (role → permission)
 * and `…/rbac/bindings` (subject → role; the reference calls them groupings). Reads need
 * `rbac.view`; writes go through the delegation rule (src/auth/rbac-changes.ts). The IdP issuer
 * routes (`…/idp-issuers`) are here too: they decide who can be a principal at all.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseIdpIssuer } from '../../auth/idp-issuer.js';
import {
  RbacChanges,
  bindingView,
  checkRole,
  checkSubject,
  policyView,
} from '../../auth/rbac-changes.js';
import { checkName } from '../../catalog-names.js';
import type { RouteAuth } from '../auth/contract.js';
import type { RouteContext } from '../context.js';
import * as S from '../schemas.js';
import { principalOf } from './tokens.js';

const Text = S.PlainText({ maxLength: 1024 });
const Policy = Type.Object({ role: Type.String(), permission: Type.String() });
const Binding = Type.Object({ subject: Type.String(), role: Type.String() });
const PolicyBody = Type.Object({ role: Text, permission: Text }, { additionalProperties: false });
const BindingBody = Type.Object({ subject: Text, role: Text }, { additionalProperties: false });
const PolicyQuery = Type.Object({ role: Type.Optional(Text) });
const BindingQuery = Type.Object({ subject: Type.Optional(Text), role: Type.Optional(Text) });
const Url = S.PlainText({ maxLength: 1024 });
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) =>
  Type.Optional(Type.Union([t, Type.Null()]));
const IssuerBody = Type.Object(
  {
    issuer: Url,
    audiences: Type.Array(Url, { maxItems: 64 }),
    jwks_url: Nullable(Url),
    discovery_url: Nullable(Url),
    subject_claim: Nullable(Text),
    groups_claim: Nullable(Text),
  },
  { additionalProperties: false },
);
const Issuer = Type.Object({
  issuer: Type.String(),
  audiences: Type.Array(Type.String()),
  jwks_url: Type.Union([Type.String(), Type.Null()]),
  discovery_url: Type.Union([Type.String(), Type.Null()]),
  subject_claim: Type.String(),
  groups_claim: Type.Union([Type.String(), Type.Null()]),
});
const IssuerParams = Type.Object({ tenant_id: Type.String({ maxLength: 512 }), issuer: Url });

const tenantOf = (req: FastifyRequest) =>
  checkName('tenant_id', (req.params as Static<typeof S.TenantParams>).tenant_id);
const onTenant = (action: 'rbac.view' | 'tenant.manage'): RouteAuth => ({
  kind: 'permission',
  action,
  object: (r) => `tenant:${r.params.tenant_id}`,
});
const RBAC_WRITE: RouteAuth = {
  kind: 'principal',
  describe: "rbac.manage on tenant:{tenant_id}, within the caller's scope (delegation rule)",
};

const RBAC_BASE = '/v1/tenants/:tenant_id/rbac';
const RBAC_TAGS = ['rbac'];

export function rbacRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const changes = new RbacChanges(ctx.store);
  policyRoutes(app, ctx, changes);
  bindingRoutes(app, ctx, changes);
  issuerRoutes(app, ctx);
}

function policyRoutes(app: FastifyInstance, ctx: RouteContext, changes: RbacChanges): void {
  const base = RBAC_BASE;
  const tags = RBAC_TAGS;
  app.get(`${base}/policies`, {
    config: { auth: onTenant('rbac.view') },
    schema: {
      tags,
      params: S.TenantParams,
      querystring: PolicyQuery,
      response: S.responses({ 200: Type.Object({ items: Type.Array(Policy) }) }),
    },
    handler: async (req) => {
      const q = req.query as Static<typeof PolicyQuery>;
      const rows = await ctx.store.rbac.listPolicies(
        tenantOf(req),
        q.role ? checkRole(q.role) : undefined,
      );
      return { items: rows.map(policyView) };
    },
  });
  app.post(`${base}/policies`, {
    config: { auth: RBAC_WRITE },
    schema: {
      tags,
      params: S.TenantParams,
      body: PolicyBody,
      response: S.responses({ 200: Policy, 201: Policy }),
    },
    handler: async (req, reply) => {
      const b = req.body as Static<typeof PolicyBody>;
      const r = await changes.addPolicy(tenantOf(req), principalOf(req), b.role, b.permission);
      return reply.code(r.created ? 201 : 200).send(r.item);
    },
  });
  app.delete(`${base}/policies`, {
    config: { auth: RBAC_WRITE },
    schema: {
      tags,
      summary: 'Deletes a policy (idempotent)',
      params: S.TenantParams,
      querystring: PolicyBody,
      response: S.responses({ 204: Type.Null() }),
    },
    handler: async (req, reply) => {
      const q = req.query as Static<typeof PolicyBody>;
      await changes.deletePolicy(tenantOf(req), principalOf(req), q.role, q.permission);
      return reply.code(204).send();
    },
  });
}

function bindingRoutes(app: FastifyInstance, ctx: RouteContext, changes: RbacChanges): void {
  const base = RBAC_BASE;
  const tags = RBAC_TAGS;
  app.get(`${base}/bindings`, {
    config: { auth: onTenant('rbac.view') },
    schema: {
      tags,
      params: S.TenantParams,
      querystring: BindingQuery,
      response: S.responses({ 200: Type.Object({ items: Type.Array(Binding) }) }),
    },
    handler: async (req) => {
      const q = req.query as Static<typeof BindingQuery>;
      const rows = await ctx.store.rbac.listBindings(tenantOf(req), {
        ...(q.subject ? { subject: checkSubject(q.subject) } : {}),
        ...(q.role ? { role: checkRole(q.role) } : {}),
      });
      return { items: rows.map(bindingView) };
    },
  });
  app.post(`${base}/bindings`, {
    config: { auth: RBAC_WRITE },
    schema: {
      tags,
      params: S.TenantParams,
      body: BindingBody,
      response: S.responses({ 200: Binding, 201: Binding }),
    },
    handler: async (req, reply) => {
      const b = req.body as Static<typeof BindingBody>;
      const r = await changes.addBinding(tenantOf(req), principalOf(req), b.subject, b.role);
      return reply.code(r.created ? 201 : 200).send(r.item);
    },
  });
  app.delete(`${base}/bindings`, {
    config: { auth: RBAC_WRITE },
    schema: {
      tags,
      summary: 'Deletes a binding (idempotent)',
      params: S.TenantParams,
      querystring: BindingBody,
      response: S.responses({ 204: Type.Null() }),
    },
    handler: async (req, reply) => {
      const q = req.query as Static<typeof BindingBody>;
      await changes.deleteBinding(tenantOf(req), principalOf(req), q.subject, q.role);
      return reply.code(204).send();
    },
  });
}

function issuerRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const base = '/v1/tenants/:tenant_id/idp-issuers';
  const tags = ['idp-issuers'];
  const view = ({ tenant_id: _t, ...rest }: Static<typeof Issuer> & { tenant_id: string }) => rest;
  app.get(base, {
    config: { auth: onTenant('rbac.view') },
    schema: {
      tags,
      params: S.TenantParams,
      response: S.responses({ 200: Type.Object({ items: Type.Array(Issuer) }) }),
    },
    handler: async (req) => ({ items: (await ctx.store.issuers.list(tenantOf(req))).map(view) }),
  });
  app.post(base, {
    config: { auth: onTenant('tenant.manage') },
    schema: {
      tags,
      summary: 'Adds an upstream OIDC issuer',
      params: S.TenantParams,
      body: IssuerBody,
      response: S.responses({ 200: Issuer, 201: Issuer }),
    },
    handler: async (req, reply) => {
      const issuer = parseIdpIssuer(tenantOf(req), req.body as Static<typeof IssuerBody>);
      const r = await ctx.store.issuers.create(issuer);
      return reply.code(r.created ? 201 : 200).send(view(r.item));
    },
  });
  app.delete(`${base}/:issuer`, {
    config: { auth: { kind: 'permission', action: 'tenant.manage', object: () => 'cluster:*' } },
    schema: {
      tags,
      summary: 'Removes an issuer (an operator action: tenant.manage on cluster:*)',
      params: IssuerParams,
      response: S.responses({ 204: Type.Null() }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof IssuerParams>;
      await ctx.store.issuers.delete(checkName('tenant_id', p.tenant_id), p.issuer);
      return reply.code(204).send();
    },
  });
}
