/**
 * A tenant's signing keys: list (public parts), stage a new one, activate, retire (409 for the
 * active key), and the tenant's JWKS (open: brokers fetch it without a token). Rotation steps
 * are in docs/security.md.
 */
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { newSigningKey } from '../../auth/keys.js';
import { checkName } from '../../catalog-names.js';
import type { RouteContext } from '../context.js';
import * as S from '../schemas.js';

const PublicJwk = Type.Object({
  kty: Type.Literal('OKP'),
  crv: Type.Literal('Ed25519'),
  x: Type.String(),
  kid: Type.String(),
  alg: Type.Literal('EdDSA'),
  use: Type.Literal('sig'),
});

const SigningKey = Type.Object({
  kid: Type.String(),
  alg: Type.Literal('EdDSA'),
  status: Type.Union([Type.Literal('staged'), Type.Literal('active'), Type.Literal('retired')]),
  created_at_ms: Type.Integer(),
  public_jwk: PublicJwk,
});

const KeyParams = Type.Object({
  tenant_id: S.TenantParams.properties.tenant_id,
  kid: Type.String({ minLength: 1, maxLength: 128 }),
});

const view = (k: Static<typeof SigningKey>) => ({
  kid: k.kid,
  alg: k.alg,
  status: k.status,
  created_at_ms: k.created_at_ms,
  public_jwk: k.public_jwk,
});

export function signingKeyRoutes(app: FastifyInstance, ctx: RouteContext): void {
  jwksRoute(app, ctx);
  keyListAndStageRoutes(app, ctx);
  keyChangeRoutes(app, ctx);
}

const base = '/v1/tenants/:tenant_id/signing-keys';

function jwksRoute(app: FastifyInstance, ctx: RouteContext): void {
  const { store } = ctx;

  app.get('/v1/tenants/:tenant_id/.well-known/jwks.json', {
    schema: {
      tags: ['auth'],
      summary:
        "The tenant's public keys that verify (staged and active); empty for an unknown tenant",
      params: S.TenantParams,
      response: S.responses({ 200: Type.Object({ keys: Type.Array(PublicJwk) }) }),
    },
    handler: async (req, reply) => {
      const p = req.params as Static<typeof S.TenantParams>;
      const published = await store.signingKeys.published(checkName('tenant_id', p.tenant_id));
      // Brokers cache for an hour themselves; intermediaries may keep it a few minutes.
      reply.header('cache-control', 'public, max-age=300');
      return { keys: published.map((k) => k.public_jwk) };
    },
  });
}

function keyListAndStageRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { store, keys } = ctx;
  app.get(base, {
    schema: {
      tags: ['auth'],
      summary: "The tenant's signing keys, every status, public parts only",
      params: S.TenantParams,
      response: S.responses({ 200: Type.Object({ items: Type.Array(SigningKey) }) }),
    },
    handler: async (req) => {
      const p = req.params as Static<typeof S.TenantParams>;
      const items = await store.signingKeys.list(checkName('tenant_id', p.tenant_id));
      return { items: items.map(view) };
    },
  });

  app.post(base, {
    schema: {
      tags: ['auth'],
      summary: 'Generates and stages a key: published in the JWKS, not signing until activated',
      params: S.TenantParams,
      response: S.responses({ 201: SigningKey }),
    },
    handler: async (req, reply) => {
      const t = checkName('tenant_id', (req.params as Static<typeof S.TenantParams>).tenant_id);
      const staged = await store.signingKeys.stage(t, await newSigningKey());
      keys.invalidate(t);
      req.log.info({ tenant: t, kid: staged.kid, ...byWhom(req) }, 'signing key staged');
      return reply.code(201).send(view(staged));
    },
  });
}

function keyChangeRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { store, keys } = ctx;
  /** One key's change: made in the store, the tenant's cached keys dropped, logged with who. */
  const change =
    (
      act: (tenant: string, kid: string) => ReturnType<typeof store.signingKeys.retire>,
      what: string,
    ) =>
    async (req: FastifyRequest) => {
      const p = req.params as Static<typeof KeyParams>;
      const t = checkName('tenant_id', p.tenant_id);
      const k = await act(t, p.kid);
      keys.invalidate(t);
      req.log.info({ tenant: t, kid: k.kid, ...byWhom(req) }, `signing key ${what}`);
      return view(k);
    };
  app.post(`${base}/:kid/activate`, {
    schema: {
      tags: ['auth'],
      summary: 'Makes a staged key the signing key; the previous one stays published (staged)',
      params: KeyParams,
      response: S.responses({ 200: SigningKey }),
    },
    handler: change((t, kid) => store.signingKeys.activate(t, kid), 'activated'),
  });

  app.delete(`${base}/:kid`, {
    schema: {
      tags: ['auth'],
      summary: 'Retires a key (gone from the JWKS); 409 when it is the active key',
      params: KeyParams,
      response: S.responses({ 200: SigningKey }),
    },
    handler: change((t, kid) => store.signingKeys.retire(t, kid), 'retired'),
  });
}

/** Who made a change, for its log line: the token's principal, and its holder when the token
 *  was minted in that principal's name (`act`). */
function byWhom(req: FastifyRequest): { by?: string; act?: string } {
  const claims = req.principal?.claims;
  if (claims === undefined) return {};
  return claims.act === undefined ? { by: claims.sub } : { by: claims.sub, act: claims.act.sub };
}
