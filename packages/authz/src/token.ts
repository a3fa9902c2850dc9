/**
 * Felix tokens: JWTs signed with a tenant's Ed25519 key (EdDSA, `kid` in the header). Signing
 * and signature checks are jose's; this file adds Felix's claim rules and maps every failure to
 * one typed error with a stable code.
 */
import { type JWTPayload, SignJWT, decodeJwt, jwtVerify } from 'jose';
import {
  TokenBadSignatureError,
  TokenClaimsError,
  TokenError,
  TokenExpiredError,
  TokenMalformedError,
  TokenNotYetValidError,
  TokenUnknownKidError,
  TokenWrongAlgorithmError,
  TokenWrongAudienceError,
  TokenWrongIssuerError,
  TokenWrongTenantError,
} from './errors.js';
import { type Permission, parsePermission, printPermission, tenantOf } from './grammar.js';
import { type KeyResolver, type SigningKey, TOKEN_ALGORITHM } from './keys.js';
import {
  KID_BYTES_MAX,
  NAME_BYTES_MAX,
  SUBJECT_BYTES_MAX,
  TOKEN_BYTES_MAX,
  TOKEN_CLOCK_SKEW_S,
  TOKEN_LIFETIME_S_MAX,
  TOKEN_PERMISSIONS_MAX,
} from './limits.js';
import { PermissionSet } from './matcher.js';

/** `iss` of every Felix token. */
export const FELIX_ISSUER = 'felix-auth';
/** `aud` of a token for the data plane (brokers). */
export const BROKER_AUDIENCE = 'felix-broker';
/** `aud` of a token for the control plane's `/v1` API. */
export const CONTROL_PLANE_AUDIENCE = 'felix-controlplane';
export type Audience = typeof BROKER_AUDIENCE | typeof CONTROL_PLANE_AUDIENCE;

/** The claims of a verified Felix token. */
export interface FelixClaims {
  readonly iss: typeof FELIX_ISSUER;
  readonly aud: Audience;
  readonly sub: string;
  readonly tid: string;
  readonly iat: number;
  readonly exp: number;
  readonly perms: readonly string[];
  /**
   * Present only on a token minted by one principal in another's name (delegation): `sub` is
   * who the token speaks for, `act.sub` who actually holds it (RFC 8693's actor claim).
   */
  readonly act?: { readonly sub: string };
}

export interface VerifiedToken {
  readonly kid: string;
  readonly claims: FelixClaims;
  /** The token's permissions, parsed and compiled for its tenant. */
  readonly permissions: PermissionSet;
}

export interface SignTokenInput {
  readonly audience: Audience;
  readonly subject: string;
  readonly tenant: string;
  readonly permissions: readonly (Permission | string)[];
  readonly lifetimeS: number;
  /** The principal minting the token in `subject`'s name (the `act` claim); none when omitted. */
  readonly actor?: string;
  /** Issue time in Unix seconds; now when omitted. */
  readonly nowS?: number;
}

export interface VerifyTokenOptions {
  readonly audience: Audience;
  /** The tenant the caller expects (the connection's, or the route's). */
  readonly tenant: string;
  readonly keys: KeyResolver;
  /** Current time in Unix seconds; the wall clock when omitted. */
  readonly nowS?: number;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

function claimsPermissions(input: SignTokenInput): string[] {
  if (input.permissions.length > TOKEN_PERMISSIONS_MAX) {
    throw new TokenClaimsError('too many permissions');
  }
  return input.permissions.map((raw) => {
    const p = typeof raw === 'string' ? parsePermission(raw) : raw;
    const t = tenantOf(p);
    if (t !== null && t !== input.tenant) {
      throw new TokenClaimsError(`${printPermission(p)} names another tenant`);
    }
    return printPermission(p);
  });
}

/** Signs a Felix token; refuses lifetimes, subjects and permissions a verifier would refuse. */
export async function signToken(input: SignTokenInput, key: SigningKey): Promise<string> {
  const { lifetimeS, subject } = input;
  if (!Number.isInteger(lifetimeS) || lifetimeS <= 0 || lifetimeS > TOKEN_LIFETIME_S_MAX) {
    throw new TokenClaimsError(`lifetime ${lifetimeS} s is outside 1..${TOKEN_LIFETIME_S_MAX}`);
  }
  if (!isSubject(subject)) {
    throw new TokenClaimsError('subject length');
  }
  if (input.actor !== undefined && !isSubject(input.actor)) {
    throw new TokenClaimsError('actor length');
  }
  const iat = input.nowS ?? nowSeconds();
  const act = input.actor === undefined ? {} : { act: { sub: input.actor } };
  return new SignJWT({ tid: input.tenant, perms: claimsPermissions(input), ...act })
    .setProtectedHeader({ alg: TOKEN_ALGORITHM, kid: key.kid, typ: 'JWT' })
    .setIssuer(FELIX_ISSUER)
    .setAudience(input.audience)
    .setSubject(subject)
    .setIssuedAt(iat)
    .setExpirationTime(iat + lifetimeS)
    .sign(key.privateKey);
}

/** Maps jose's error codes (and our own throws from the key function) to Felix token errors. */
function mapJoseError(err: unknown, opts: VerifyTokenOptions): TokenError {
  if (err instanceof TokenError) return err;
  const e = err as { code?: string; claim?: string; message?: string };
  switch (e.code) {
    case 'ERR_JWT_EXPIRED':
      return new TokenExpiredError();
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return new TokenBadSignatureError();
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return new TokenWrongAlgorithmError();
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (e.claim === 'aud') return new TokenWrongAudienceError(opts.audience);
      if (e.claim === 'iss') return new TokenWrongIssuerError();
      if (e.claim === 'nbf') return new TokenNotYetValidError();
      return new TokenMalformedError(`claim ${e.claim ?? '?'}: ${e.message ?? ''}`);
    default:
      // JWSInvalid, JWTInvalid, JOSENotSupported and anything else jose refuses to parse.
      return new TokenMalformedError(e.code ?? 'unparseable');
  }
}

async function verifySignature(token: string, opts: VerifyTokenOptions) {
  try {
    return await jwtVerify(
      token,
      async (header) => {
        const kid = header.kid;
        if (typeof kid !== 'string' || kid.length === 0 || kid.length > KID_BYTES_MAX) {
          throw new TokenMalformedError('kid');
        }
        const key = await opts.keys.resolve(opts.tenant, kid);
        if (key === null) throw new TokenUnknownKidError(kid);
        return key;
      },
      {
        algorithms: [TOKEN_ALGORITHM],
        issuer: FELIX_ISSUER,
        audience: opts.audience,
        clockTolerance: TOKEN_CLOCK_SKEW_S,
        requiredClaims: ['iss', 'aud', 'sub', 'iat', 'exp'],
        ...(opts.nowS === undefined ? {} : { currentDate: new Date(opts.nowS * 1000) }),
      },
    );
  } catch (err) {
    throw mapJoseError(err, opts);
  }
}

function checkClaims(p: JWTPayload, opts: VerifyTokenOptions): FelixClaims {
  // jose accepts a list containing our audience; a Felix token names exactly one.
  if (p.aud !== opts.audience) throw new TokenWrongAudienceError(opts.audience);
  if (typeof p.tid !== 'string') throw new TokenMalformedError('tid');
  if (p.tid !== opts.tenant) throw new TokenWrongTenantError(opts.tenant);
  const { sub, iat, exp } = p as { sub: unknown; iat: number; exp: number };
  if (!isSubject(sub)) throw new TokenMalformedError('sub');
  if (iat > (opts.nowS ?? nowSeconds()) + TOKEN_CLOCK_SKEW_S) throw new TokenNotYetValidError();
  if (exp - iat > TOKEN_LIFETIME_S_MAX) throw new TokenMalformedError('lifetime too long');
  const perms = p.perms;
  if (!Array.isArray(perms) || perms.length > TOKEN_PERMISSIONS_MAX) {
    throw new TokenMalformedError('perms');
  }
  if (!perms.every((s) => typeof s === 'string')) throw new TokenMalformedError('perms');
  const claims: FelixClaims = {
    iss: FELIX_ISSUER,
    aud: opts.audience,
    sub,
    tid: p.tid,
    iat,
    exp,
    perms,
  };
  return p.act === undefined ? claims : { ...claims, act: { sub: actorOf(p.act) } };
}

function isSubject(s: unknown): s is string {
  return typeof s === 'string' && s.length > 0 && s.length <= SUBJECT_BYTES_MAX;
}

/** `act.sub` of a token's `act` claim; anything else there makes the token malformed. */
function actorOf(act: unknown): string {
  const sub = typeof act === 'object' && act !== null ? (act as { sub?: unknown }).sub : undefined;
  if (!isSubject(sub)) throw new TokenMalformedError('act');
  return sub;
}

function compileClaims(claims: FelixClaims): PermissionSet {
  try {
    return PermissionSet.compile(claims.tid, claims.perms.map(parsePermission));
  } catch (err) {
    const detail = err instanceof Error ? err.message : 'perms';
    throw new TokenMalformedError(detail);
  }
}

/**
 * Verifies a Felix token for one audience and one tenant: EdDSA only, the tenant's key by `kid`,
 * issuer, exactly one audience, `exp`/`nbf`/`iat` within TOKEN_CLOCK_SKEW_S, `tid`, and
 * well-formed permissions (none of another tenant). Throws a TokenError subclass on any failure.
 */
/** The `tid` a token claims, unverified: only ever used to refuse it with a clearer reason. */
function unverifiedTenant(token: string): string | undefined {
  try {
    const tid = decodeJwt(token).tid;
    return typeof tid === 'string' && tid.length <= NAME_BYTES_MAX ? tid : undefined;
  } catch {
    // Not decodable: the signature check that follows refuses it as malformed.
    return undefined;
  }
}

export async function verifyToken(token: string, opts: VerifyTokenOptions): Promise<VerifiedToken> {
  if (token.length > TOKEN_BYTES_MAX) throw new TokenMalformedError('too long');
  // A token of another tenant is refused as that, by name, before its `kid` is looked up among
  // this tenant's keys (where it would read as an unknown key, and could cost a JWKS fetch).
  const claimed = unverifiedTenant(token);
  if (claimed !== undefined && claimed !== opts.tenant) {
    throw new TokenWrongTenantError(opts.tenant, claimed);
  }
  const { payload, protectedHeader } = await verifySignature(token, opts);
  const claims = checkClaims(payload, opts);
  return { kid: protectedHeader.kid as string, claims, permissions: compileClaims(claims) };
}
