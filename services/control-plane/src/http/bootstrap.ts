/**
 * The bootstrap listener (off by default; docs/security.md, "Bootstrap"): a separate fastify app
 * that initializes a tenant's auth exactly once, guarded by a static token compared in constant
 * time, and, in development only, mints tokens. Every attempt is logged (the audit trail of
 * Day 0), never with the token.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import {
  BROKER_AUDIENCE,
  CONTROL_PLANE_AUDIENCE,
  SUBJECT_BYTES_MAX,
  TOKEN_PERMISSIONS_MAX,
} from '@felix/authz';
import { type Static, Type } from '@sinclair/typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
} from 'fastify';
import { parseIdpIssuer } from '../auth/idp-issuer.js';
import { type TenantKeyCache, newSigningKey } from '../auth/keys.js';
import {
  ADMIN_ROLE,
  OPERATOR_PERMISSIONS,
  OPERATOR_ROLE,
  adminPermissions,
} from '../auth/roles.js';
import type { TokenSigner } from '../auth/signer.js';
import { checkName } from '../catalog-names.js';
import type { BootstrapConfig } from '../config.js';
import { ControlPlaneError, UnauthenticatedError } from '../errors.js';
import { BODY_BYTES_MAX, BOOTSTRAP_ISSUERS_MAX, BOOTSTRAP_PRINCIPALS_MAX } from '../limits.js';
import type { Metrics } from '../metrics.js';
import type { ControlStore } from '../store/store.js';
import { notFound, sendError } from './errors.js';
import { type LazySchemas, lazySchemaController } from './lazy-compilers.js';
import { ErrorBody, PlainText, TenantParams, responses } from './schemas.js';

export const BOOTSTRAP_TOKEN_HEADER = 'x-felix-bootstrap-token';

const Issuer = Type.Object(
  {
    issuer: Type.String({ maxLength: 512 }),
    audiences: Type.Array(PlainText({ maxLength: 512 }), { maxItems: 16 }),
    jwks_url: Type.Optional(Type.String({ maxLength: 2048 })),
    discovery_url: Type.Optional(Type.String({ maxLength: 2048 })),
    subject_claim: Type.Optional(PlainText({ minLength: 1, maxLength: 128 })),
    groups_claim: Type.Optional(PlainText({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
);

const InitializeBody = Type.Object(
  {
    display_name: Type.Optional(PlainText({ maxLength: 256 })),
    idp_issuers: Type.Optional(Type.Array(Issuer, { maxItems: BOOTSTRAP_ISSUERS_MAX })),
    initial_admin_principals: Type.Array(
      PlainText({ minLength: 1, maxLength: SUBJECT_BYTES_MAX }),
      { maxItems: BOOTSTRAP_PRINCIPALS_MAX },
    ),
    /** Also grant the admins the operator role (cluster:* tenant.manage, node.view, node.manage). */
    operator: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const InitializeReply = Type.Object({
  tenant_id: Type.String(),
  kid: Type.String(),
  jwks_url: Type.String(),
  roles: Type.Array(Type.Object({ role: Type.String(), permissions: Type.Array(Type.String()) })),
});

const DevTokenBody = Type.Object(
  {
    principal: PlainText({ minLength: 1, maxLength: SUBJECT_BYTES_MAX }),
    permissions: Type.Array(Type.String({ maxLength: 640 }), { maxItems: TOKEN_PERMISSIONS_MAX }),
    audience: Type.Union([Type.Literal(BROKER_AUDIENCE), Type.Literal(CONTROL_PLANE_AUDIENCE)]),
    ttl_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
  },
  { additionalProperties: false },
);

const DevTokenReply = Type.Object({
  token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  kid: Type.String(),
});

export interface BootstrapDeps {
  store: ControlStore;
  config: BootstrapConfig;
  signer: TokenSigner;
  metrics: Metrics;
  /** The API's key cache, told of a tenant initialized here (its new key verifies at once). */
  keys?: TenantKeyCache;
  logger?: FastifyBaseLogger | false;
  /** The app's deferred schema compilers (lazy-compilers.ts); a test passes its own to force
   *  them all. */
  schemas?: LazySchemas;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Compares a presented token with the accepted ones in constant time (hashes, so lengths match). */
export function tokenMatches(
  presented: string,
  accepted: readonly (string | undefined)[],
): boolean {
  const p = digest(presented);
  let ok = false;
  // Every accepted token is compared, so the time does not tell which one matched.
  for (const a of accepted) if (a !== undefined && timingSafeEqual(p, digest(a))) ok = true;
  return ok;
}

function roleSet(t: string, operator: boolean) {
  const roles = [{ role: ADMIN_ROLE, permissions: adminPermissions(t) }];
  if (operator) roles.push({ role: OPERATOR_ROLE, permissions: [...OPERATOR_PERMISSIONS] });
  return roles;
}

export async function buildBootstrapApp(deps: BootstrapDeps): Promise<FastifyInstance> {
  const { config, metrics } = deps;
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    bodyLimit: BODY_BYTES_MAX,
    genReqId: () => randomUUID(),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    schemaController: (deps.schemas ?? lazySchemaController()).option,
  });
  app.addSchema(ErrorBody);
  app.setErrorHandler((err, req, reply) => sendError(req, reply, err));
  app.setNotFoundHandler((req, reply) => notFound(req, reply));

  const audit: Audit = (req, outcome, extra = {}) => {
    metrics.bootstrapAttempts.inc({ outcome });
    const t = (req.params as { tenant_id?: string } | undefined)?.tenant_id;
    req.log.warn(
      {
        audit: 'bootstrap',
        outcome,
        tenant: t,
        remote: req.ip,
        route: req.routeOptions.url,
        ...extra,
      },
      'bootstrap attempt',
    );
  };
  // The static token is checked before the body is parsed.
  app.addHook('onRequest', async (req) => {
    const presented = req.headers[BOOTSTRAP_TOKEN_HEADER];
    if (
      typeof presented !== 'string' ||
      !tokenMatches(presented, [config.token, config.tokenPrevious])
    ) {
      audit(req, 'bad_token');
      throw new UnauthenticatedError(`missing or wrong ${BOOTSTRAP_TOKEN_HEADER}`);
    }
  });
  app.addHook('onError', async (req, _reply, err) => {
    const code = err instanceof ControlPlaneError ? err.code : 'error';
    if (code === 'FELIX_CONTROLPLANE_ALREADY_INITIALIZED') audit(req, 'already_initialized');
    else if (code !== 'FELIX_CONTROLPLANE_UNAUTHENTICATED') audit(req, 'refused', { code });
  });

  initializeRoute(app, deps, audit);
  if (config.devTokens) devTokenRoute(app, deps, audit);
  return app;
}

type Audit = (req: FastifyRequest, outcome: string, extra?: Record<string, unknown>) => void;

function initializeRoute(app: FastifyInstance, deps: BootstrapDeps, audit: Audit): void {
  const { store } = deps;
  app.post('/internal/bootstrap/tenants/:tenant_id/initialize', {
    schema: {
      params: TenantParams,
      body: InitializeBody,
      response: responses({ 200: InitializeReply }),
    },
    handler: async (req) => {
      const t = checkName('tenant_id', (req.params as Static<typeof TenantParams>).tenant_id);
      const b = req.body as Static<typeof InitializeBody>;
      const issuers = (b.idp_issuers ?? []).map((i) => {
        const { tenant_id: _t, ...rest } = parseIdpIssuer(t, i);
        return rest;
      });
      const roles = roleSet(t, b.operator === true);
      const bindings = b.initial_admin_principals.flatMap((subject) =>
        roles.map((r) => ({ subject, role: r.role })),
      );
      const r = await store.bootstrap.initialize({
        tenant_id: t,
        display_name: b.display_name ?? t,
        key: await newSigningKey(),
        issuers,
        roles,
        bindings,
      });
      deps.keys?.invalidate(t);
      audit(req, 'initialized', {
        kid: r.kid,
        operator: b.operator === true,
        admins: b.initial_admin_principals,
      });
      return {
        tenant_id: t,
        kid: r.kid,
        jwks_url: `/v1/tenants/${t}/.well-known/jwks.json`,
        roles,
      };
    },
  });
}

/** Development only (FELIX_BOOTSTRAP_DEV_TOKENS, loopback): any token of an initialized tenant. */
function devTokenRoute(app: FastifyInstance, deps: BootstrapDeps, audit: Audit): void {
  app.post('/internal/bootstrap/tenants/:tenant_id/dev-token', {
    schema: {
      params: TenantParams,
      body: DevTokenBody,
      response: responses({ 200: DevTokenReply }),
    },
    handler: async (req) => {
      const t = checkName('tenant_id', (req.params as Static<typeof TenantParams>).tenant_id);
      const b = req.body as Static<typeof DevTokenBody>;
      const minted = await deps.signer.mint({
        tenant: t,
        subject: b.principal,
        audience: b.audience,
        permissions: b.permissions,
        ...(b.ttl_seconds === undefined ? {} : { lifetimeS: b.ttl_seconds }),
      });
      audit(req, 'dev_token', { principal: b.principal, audience: b.audience, kid: minted.kid });
      return {
        token: minted.token,
        token_type: 'Bearer' as const,
        expires_in: minted.expires_in,
        kid: minted.kid,
      };
    },
  });
}
