/**
 * Issuing Felix tokens: the OIDC exchange, the refresh, and delegation. Each evaluates RBAC
 * from the store at the moment of the request (so a policy change applies to the next token
 * without a restart), narrows it (grants.ts), and signs with the tenant's active key.
 *
 * Refresh tokens are `<id>.<secret>`: the store keeps only the secret's SHA-256 and spends a
 * token once (a replay revokes its chain, a wrong secret spends it too). Every refresh failure
 * is the same RefreshTokenRefusedError; the store's outcome is only logged.
 */
import { randomBytes } from 'node:crypto';
import {
  type Audience,
  BROKER_AUDIENCE,
  CONTROL_PLANE_AUDIENCE,
  type Permission,
  printPermission,
} from '@felix/authz';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import {
  DelegationRefusedError,
  InvalidRequestError,
  NoPermissionsError,
  RefreshTokenRefusedError,
} from '../errors.js';
import type { Principal } from '../http/auth/contract.js';
import {
  ACCESS_TOKEN_TTL_S_DEFAULT,
  REFRESH_TOKEN_CHARS_MAX,
  REFRESH_TOKEN_TTL_S_DEFAULT,
} from '../limits.js';
import { groupSubject } from '../store/rbac.js';
import type { ControlStore } from '../store/store.js';
import type { RefreshTokenRecord } from '../store/types.js';
import {
  type Narrowing,
  type NarrowingBody,
  grantedPermissions,
  narrowingBody,
  parseNarrowing,
} from './grants.js';
import { OidcVerifier } from './oidc.js';
import type { TokenSigner } from './signer.js';

export interface TokenSettings {
  /** Lifetime of issued Felix tokens (FELIX_EXCHANGE_TOKEN_TTL_SECONDS, 900). */
  accessTtlS?: number;
  /** Lifetime of a refresh token (FELIX_REFRESH_TOKEN_TTL_SECONDS, 30 days). */
  refreshTtlS?: number;
  /** The upstream verifier (its algorithm allow-list, fetch timeouts). */
  oidc?: OidcVerifier;
}

/** The answer of an exchange or a refresh. */
export interface IssuedTokens {
  felix_token: string;
  expires_in: number;
  token_type: 'Bearer';
  refresh_token: string;
  refresh_expires_in: number;
  principal_id: string;
}

export interface DelegateBody extends NarrowingBody {
  subject?: string;
  ttl_seconds?: number;
}

/** Longest principal id a delegation may name (the @felix/authz `sub` bound). */
const SUBJECT_CHARS_MAX = 256;

function newRefreshParts(): { id: string; secret: string } {
  return {
    id: randomBytes(16).toString('base64url'),
    secret: randomBytes(32).toString('base64url'),
  };
}

/** Splits `<id>.<secret>`; null when it is not of that shape. */
export function splitRefreshToken(raw: string): { id: string; secret: string } | null {
  if (raw.length > REFRESH_TOKEN_CHARS_MAX) return null;
  const dot = raw.indexOf('.');
  if (dot <= 0 || dot === raw.length - 1 || raw.indexOf('.', dot + 1) >= 0) return null;
  return { id: raw.slice(0, dot), secret: raw.slice(dot + 1) };
}

export class TokenService {
  readonly accessTtlS: number;
  readonly refreshTtlS: number;
  readonly oidc: OidcVerifier;
  constructor(
    private readonly store: ControlStore,
    private readonly signer: TokenSigner,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
    settings: TokenSettings = {},
  ) {
    this.accessTtlS = settings.accessTtlS ?? ACCESS_TOKEN_TTL_S_DEFAULT;
    this.refreshTtlS = settings.refreshTtlS ?? REFRESH_TOKEN_TTL_S_DEFAULT;
    this.oidc = settings.oidc ?? new OidcVerifier();
  }

  /** Signs a token for `subject` carrying `permissions` (the signer picks the active key). */
  async mint(
    tenant: string,
    subject: string,
    permissions: readonly Permission[],
    audience: Audience,
    lifetimeS = this.accessTtlS,
    actor?: string,
  ): Promise<{ felix_token: string; expires_in: number; token_type: 'Bearer' }> {
    const m = await this.signer.mint({
      tenant,
      subject,
      audience,
      permissions: permissions.map(printPermission),
      lifetimeS,
      ...(actor === undefined ? {} : { actor }),
    });
    return { felix_token: m.token, expires_in: m.expires_in, token_type: 'Bearer' };
  }

  /** The principal's RBAC permissions now, narrowed. */
  private async grants(
    tenant: string,
    principalId: string,
    groups: readonly string[],
    n: Narrowing,
  ): Promise<Permission[]> {
    const subjects = [principalId, ...groups.map((g) => groupSubject(...splitGroup(g)))];
    const held = await this.store.rbac.permissionsFor(tenant, subjects);
    return grantedPermissions(tenant, held, n);
  }

  private async newRefreshToken(
    tenant: string,
    principalId: string,
    groups: readonly string[],
    n: Narrowing,
    parent: RefreshTokenRecord | null,
  ): Promise<string> {
    const { id, secret } = newRefreshParts();
    const stored = narrowingBody(n);
    await this.store.refreshTokens.insert({
      id,
      secret,
      tenant_id: tenant,
      principal_id: principalId,
      chain_id: parent?.chain_id ?? id,
      parent_id: parent?.id ?? null,
      expires_at_ms: this.clock.nowMs() + this.refreshTtlS * 1000,
      groups: [...groups],
      requested: stored.requested,
      resources: stored.resources,
      audience: stored.audience,
    });
    return `${id}.${secret}`;
  }

  /** `POST …/token/exchange`: an upstream OIDC token for a Felix token and a refresh token. */
  async exchange(tenant: string, bearer: string, body: NarrowingBody): Promise<IssuedTokens> {
    const who = await this.oidc.verify(bearer, await this.store.issuers.list(tenant));
    const n = parseNarrowing(body, CONTROL_PLANE_AUDIENCE);
    const perms = await this.grants(tenant, who.principalId, who.groups, n);
    if (perms.length === 0) {
      throw new NoPermissionsError(`principal ${who.principalId} is granted nothing in ${tenant}`);
    }
    const access = await this.mint(tenant, who.principalId, perms, n.audience);
    const refresh = await this.newRefreshToken(tenant, who.principalId, who.groups, n, null);
    return this.issued(access, refresh, who.principalId);
  }

  private issued(
    access: { felix_token: string; expires_in: number },
    refresh: string,
    principalId: string,
  ): IssuedTokens {
    return {
      felix_token: access.felix_token,
      expires_in: access.expires_in,
      token_type: 'Bearer',
      refresh_token: refresh,
      refresh_expires_in: this.refreshTtlS,
      principal_id: principalId,
    };
  }

  /**
   * `POST …/token/refresh`: spends the refresh token and issues a new pair, RBAC re-evaluated
   * under the original narrowing. `audience`, when given, picks the new access token's audience.
   */
  async refresh(tenant: string, raw: string, audience?: string | null): Promise<IssuedTokens> {
    const parts = splitRefreshToken(raw);
    if (!parts) throw new RefreshTokenRefusedError();
    const spent = await this.store.refreshTokens.spend(
      tenant,
      parts.id,
      parts.secret,
      this.clock.nowMs(),
    );
    if (spent.outcome !== 'spent') {
      this.log.warn({ tenant, refresh_id: parts.id, outcome: spent }, 'refresh refused');
      throw new RefreshTokenRefusedError();
    }
    const t = spent.token;
    let n: Narrowing;
    let accessAudience: Audience;
    try {
      const original = t.audience ?? CONTROL_PLANE_AUDIENCE;
      n = parseNarrowing(
        { requested: t.requested, resources: t.resources, audience: original },
        CONTROL_PLANE_AUDIENCE,
      );
      accessAudience = parseNarrowing({ audience }, n.audience).audience;
    } catch {
      throw new RefreshTokenRefusedError();
    }
    const perms = await this.grants(tenant, t.principal_id, t.groups, {
      ...n,
      audience: accessAudience,
    });
    if (perms.length === 0) throw new RefreshTokenRefusedError();
    const access = await this.mint(tenant, t.principal_id, perms, accessAudience);
    const refresh = await this.newRefreshToken(tenant, t.principal_id, t.groups, n, t);
    return this.issued(access, refresh, t.principal_id);
  }

  /**
   * `POST …/token/delegate`: a caller holding `token.delegate` on the tenant mints a token for
   * itself, within the caller's own token's scope (default audience: the brokers; lifetime at
   * most the access TTL). Naming another subject also needs `rbac.manage` on the tenant (it
   * speaks for that principal); such a token carries the true holder in its `act` claim.
   */
  async delegate(
    tenant: string,
    caller: Principal,
    body: DelegateBody,
  ): Promise<{ felix_token: string; expires_in: number; token_type: 'Bearer'; subject: string }> {
    if (!caller.permissions.allows('token.delegate', 'tenant', tenant)) {
      throw new DelegationRefusedError(`delegation needs token.delegate:tenant:${tenant}`);
    }
    const subject = body.subject ?? caller.claims.sub;
    if (subject.length === 0 || subject.length > SUBJECT_CHARS_MAX) {
      throw new InvalidRequestError(`subject must be 1-${SUBJECT_CHARS_MAX} characters`);
    }
    if (
      subject !== caller.claims.sub &&
      !caller.permissions.allows('rbac.manage', 'tenant', tenant)
    ) {
      throw new DelegationRefusedError(
        `delegating to a subject other than the caller needs rbac.manage:tenant:${tenant}`,
      );
    }
    const ttl = body.ttl_seconds ?? this.accessTtlS;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > this.accessTtlS) {
      throw new InvalidRequestError(`ttl_seconds must be 1-${this.accessTtlS}`);
    }
    const n = parseNarrowing(body, BROKER_AUDIENCE);
    const perms = grantedPermissions(tenant, caller.claims.perms, n);
    if (perms.length === 0) {
      throw new NoPermissionsError("nothing within the caller's scope matches the request");
    }
    const holder = principalOf(caller);
    const actor = holder === subject ? undefined : holder;
    return { ...(await this.mint(tenant, subject, perms, n.audience, ttl, actor)), subject };
  }

  /**
   * `POST …/refresh-tokens/revoke`: the caller itself, or a holder of rbac.manage. A token
   * minted in another's name is its holder (`act`), never the principal it names.
   */
  async revoke(tenant: string, caller: Principal, principalId: string): Promise<number> {
    const self = principalOf(caller) === principalId;
    if (!self && !caller.permissions.allows('rbac.manage', 'tenant', tenant)) {
      throw new DelegationRefusedError(
        `revoking another principal's refresh tokens needs rbac.manage:tenant:${tenant}`,
      );
    }
    return this.store.refreshTokens.revokeByPrincipal(tenant, principalId);
  }
}

/** Who truly holds the caller's token: its `act` (a delegation in another's name), or `sub`. */
function principalOf(caller: Principal): string {
  return caller.claims.act?.sub ?? caller.claims.sub;
}

/** `<issuer>#<name>` → [issuer, name] (an issuer never contains `#`). */
function splitGroup(g: string): [string, string] {
  const i = g.indexOf('#');
  return [g.slice(0, i), g.slice(i + 1)];
}
