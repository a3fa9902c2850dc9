/**
 * Token routes: `POST /v1/tenants/{t}/token/exchange` (an upstream OIDC token for a Felix
 * token), `…/token/refresh` (a refresh token for a new pair), `…/token/delegate` (a token within
 * the caller's scope for another principal or audience) and `…/refresh-tokens/revoke`. The logic
 * is src/auth/tokens.ts; this file declares schemas and who may call.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DelegateBody, TokenService } from '../../auth/tokens.js';
import { checkName } from '../../catalog-names.js';
import { InternalError, OidcTokenRefusedError } from '../../errors.js';
import { NARROWING_ENTRIES_MAX, REFRESH_TOKEN_CHARS_MAX } from '../../limits.js';
import type { Principal, RouteAuth } from '../auth/contract.js';
import type { RouteContext } from '../context.js';
import * as S from '../schemas.js';

const Strings = Type.Array(Type.String({ maxLength: 1024 }), { maxItems: NARROWING_ENTRIES_MAX });
const Audience = Type.String({ maxLength: 64 });

const ExchangeBody = Type.Object(
  {
    requested: Type.Optional(Strings),
    resources: Type.Optional(Strings),
    audience: Type.Optional(Audience),
  },
  { additionalProperties: false },
);
const Issued = Type.Object({
  felix_token: Type.String(),
  expires_in: Type.Integer(),
  token_type: Type.Literal('Bearer'),
  refresh_token: Type.String(),
  refresh_expires_in: Type.Integer(),
  principal_id: Type.String(),
});
const RefreshBody = Type.Object(
  {
    refresh_token: Type.String({ maxLength: REFRESH_TOKEN_CHARS_MAX * 2 }),
    audience: Type.Optional(Audience),
  },
  { additionalProperties: false },
);
const DelegateBodySchema = Type.Object(
  {
    subject: Type.Optional(S.PlainText({ maxLength: 512 })),
    requested: Type.Optional(Strings),
    resources: Type.Optional(Strings),
    audience: Type.Optional(Audience),
    ttl_seconds: Type.Optional(Type.Integer()),
  },
  { additionalProperties: false },
);
const Delegated = Type.Object({
  felix_token: Type.String(),
  expires_in: Type.Integer(),
  token_type: Type.Literal('Bearer'),
  subject: Type.String(),
});
const RevokeBody = Type.Object(
  { principal_id: S.PlainText({ minLength: 1, maxLength: 512 }) },
  { additionalProperties: false },
);

const tenantOf = (req: FastifyRequest) =>
  checkName('tenant_id', (req.params as Static<typeof S.TenantParams>).tenant_id);

/** The guard sets `request.principal` on `principal` routes; its absence is a wiring bug. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal)
    throw new InternalError('route declared principal auth but no caller was set');
  return req.principal;
}

/** The upstream token from `Authorization: Bearer …`. */
function bearerOf(req: FastifyRequest): string {
  const h = req.headers.authorization ?? '';
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  if (!m) throw new OidcTokenRefusedError('no Authorization: Bearer <upstream token>');
  return m[1] as string;
}

const EXCHANGE_AUTH: RouteAuth = {
  kind: 'credential',
  describe: 'Authorization: Bearer <upstream OIDC token of a tenant issuer>',
};
const REFRESH_AUTH: RouteAuth = {
  kind: 'credential',
  describe: 'the refresh token in the body, no Authorization header',
};
const DELEGATE_AUTH: RouteAuth = {
  kind: 'principal',
  describe: "token.delegate on tenant:{tenant_id}, within the caller's scope",
};
const REVOKE_AUTH: RouteAuth = {
  kind: 'principal',
  describe: 'the principal itself, or rbac.manage on tenant:{tenant_id}',
};

export function tokenRoutes(app: FastifyInstance, _ctx: RouteContext, tokens: TokenService): void {
  const base = '/v1/tenants/:tenant_id';
  app.post(`${base}/token/exchange`, {
    config: { auth: EXCHANGE_AUTH },
    schema: {
      tags: ['tokens'],
      summary: 'Exchanges an upstream OIDC token for a Felix token and a refresh token',
      params: S.TenantParams,
      body: ExchangeBody,
      response: S.responses({ 200: Issued }),
    },
    // The body is optional: a bare POST with only the bearer token asks for everything RBAC grants.
    preValidation: async (req) => {
      if (req.body === undefined || req.body === null) req.body = {};
    },
    handler: async (req) =>
      tokens.exchange(
        tenantOf(req),
        bearerOf(req),
        (req.body ?? {}) as Static<typeof ExchangeBody>,
      ),
  });
  app.post(`${base}/token/refresh`, {
    config: { auth: REFRESH_AUTH },
    schema: {
      tags: ['tokens'],
      summary: 'Spends a refresh token for a new Felix token and refresh token (single use)',
      params: S.TenantParams,
      body: RefreshBody,
      response: S.responses({ 200: Issued }),
    },
    handler: async (req) => {
      const b = req.body as Static<typeof RefreshBody>;
      return tokens.refresh(tenantOf(req), b.refresh_token, b.audience);
    },
  });
  app.post(`${base}/token/delegate`, {
    config: { auth: DELEGATE_AUTH },
    schema: {
      tags: ['tokens'],
      summary: "Mints a token within the caller's scope, by default for the brokers",
      params: S.TenantParams,
      body: DelegateBodySchema,
      response: S.responses({ 200: Delegated }),
    },
    handler: async (req) =>
      tokens.delegate(tenantOf(req), principalOf(req), req.body as DelegateBody),
  });
  app.post(`${base}/refresh-tokens/revoke`, {
    config: { auth: REVOKE_AUTH },
    schema: {
      tags: ['tokens'],
      summary: 'Revokes every live refresh token of a principal',
      params: S.TenantParams,
      body: RevokeBody,
      response: S.responses({ 200: Type.Object({ revoked: Type.Integer() }) }),
    },
    handler: async (req) => {
      const b = req.body as Static<typeof RevokeBody>;
      return { revoked: await tokens.revoke(tenantOf(req), principalOf(req), b.principal_id) };
    },
  });
}
