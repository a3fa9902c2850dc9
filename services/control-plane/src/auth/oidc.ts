/**
 * Verification of upstream OIDC tokens for the token exchange. The tenant's issuer is chosen by
 * the token's `iss` (exact match); its keys come from jose's remote key set (fetch timeout,
 * refetch cooldown on an unknown kid, bounded body, redirects never followed), optionally found
 * through the issuer's discovery document (whose `issuer` must match exactly). Audience and
 * issuer are checked exactly and only allow-listed algorithms verify. Every refusal is one
 * OidcTokenRefusedError whose reason names the check.
 */
import { createHash } from 'node:crypto';
import {
  type JWTPayload,
  type JWTVerifyGetKey,
  createRemoteJWKSet,
  customFetch,
  decodeJwt,
  jwtVerify,
} from 'jose';
import { ConfigInvalidError, OidcTokenRefusedError } from '../errors.js';
import {
  OIDC_CLAIM_CHARS_MAX,
  OIDC_DOCUMENT_BYTES_MAX,
  OIDC_FETCH_TIMEOUT_MS,
  OIDC_GROUPS_MAX,
  OIDC_JWKS_COOLDOWN_MS,
  OIDC_JWKS_MAX_AGE_MS,
  OIDC_KEY_SETS_MAX,
  OIDC_TOKEN_BYTES_MAX,
} from '../limits.js';
import { type IdpIssuerConfig, checkIdpUrl } from './idp-issuer.js';

/** Algorithms an upstream token may use; anything else is refused before key lookup. */
export const OIDC_ALGORITHMS_SUPPORTED = [
  'ES256',
  'ES384',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
] as const;
/** The default allow-list (FELIX_CONTROLPLANE_OIDC_ALLOWED_ALGORITHMS). */
export const OIDC_ALGORITHMS_DEFAULT: readonly string[] = ['ES256', 'RS256'];

/** Clock skew tolerated on an upstream token's `exp`/`nbf`, in seconds. */
const OIDC_CLOCK_SKEW_S = 30;

export interface OidcOptions {
  /** Allowed `alg` values (default ES256, RS256). */
  readonly algorithms?: readonly string[];
  readonly fetchTimeoutMs?: number;
  readonly cooldownMs?: number;
  readonly maxAgeMs?: number;
  /** The fetch used for JWKS and discovery (tests may count calls). */
  readonly fetch?: typeof fetch;
}

/** Who an upstream token says the caller is. */
export interface UpstreamIdentity {
  readonly issuer: string;
  readonly subject: string;
  /** hex SHA-256 of `iss|sub`: the Felix principal id. */
  readonly principalId: string;
  /** IdP groups as binding subjects' ids: `<issuer>#<name>`. */
  readonly groups: readonly string[];
}

/** The Felix principal id of an upstream identity: hex SHA-256 of `iss|sub`. */
export function principalIdOf(issuer: string, subject: string): string {
  return createHash('sha256').update(`${issuer}|${subject}`).digest('hex');
}

/** Reads a response body up to `max` bytes; more is refused without parsing. */
async function boundedText(res: Response, max: number): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw new OidcTokenRefusedError('identity provider document too large');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function refusalOf(err: unknown): OidcTokenRefusedError {
  if (err instanceof OidcTokenRefusedError) return err;
  const e = err as { code?: string; claim?: string };
  const reason =
    {
      ERR_JWT_EXPIRED: 'expired',
      ERR_JOSE_ALG_NOT_ALLOWED: 'algorithm not allowed',
      ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'bad signature',
      ERR_JWKS_NO_MATCHING_KEY: 'no key with that kid',
      ERR_JWKS_MULTIPLE_MATCHING_KEYS: 'ambiguous key',
      ERR_JWKS_TIMEOUT: 'keys could not be fetched in time',
      ERR_JWKS_INVALID: 'the key set is invalid',
      ERR_JOSE_GENERIC: 'keys could not be fetched',
      ERR_JWT_CLAIM_VALIDATION_FAILED: `claim ${e.claim ?? '?'} rejected`,
    }[e.code ?? ''] ?? (e.code ? `malformed (${e.code})` : 'keys could not be fetched');
  return new OidcTokenRefusedError(reason, { cause: err });
}

export class OidcVerifier {
  private readonly algorithms: string[];
  private readonly timeoutMs: number;
  private readonly cooldownMs: number;
  private readonly maxAgeMs: number;
  private readonly fetchImpl: typeof fetch;
  /** JWKS URL → remote key set (insertion order = age; bounded by OIDC_KEY_SETS_MAX). */
  private readonly keySets = new Map<string, JWTVerifyGetKey>();
  /** discovery URL + issuer → the jwks_uri it named, and when it was read. */
  private readonly discovered = new Map<string, { jwksUrl: string; atMs: number }>();

  constructor(opts: OidcOptions = {}) {
    this.algorithms = [...(opts.algorithms ?? OIDC_ALGORITHMS_DEFAULT)];
    this.timeoutMs = opts.fetchTimeoutMs ?? OIDC_FETCH_TIMEOUT_MS;
    this.cooldownMs = opts.cooldownMs ?? OIDC_JWKS_COOLDOWN_MS;
    this.maxAgeMs = opts.maxAgeMs ?? OIDC_JWKS_MAX_AGE_MS;
    this.fetchImpl = opts.fetch ?? fetch;
  }

  /** A fetch that never follows a redirect and reads at most OIDC_DOCUMENT_BYTES_MAX. */
  private readonly boundedFetch = async (url: string | URL, init?: RequestInit) => {
    const res = await this.fetchImpl(url, {
      ...init,
      redirect: 'manual',
      signal: init?.signal ?? AbortSignal.timeout(this.timeoutMs),
    });
    const text = await boundedText(res, OIDC_DOCUMENT_BYTES_MAX);
    return new Response(text, { status: res.status, headers: res.headers });
  };

  private keySet(jwksUrl: string): JWTVerifyGetKey {
    const known = this.keySets.get(jwksUrl);
    if (known) return known;
    const set = createRemoteJWKSet(checkIdpUrl(jwksUrl, 'jwks_url'), {
      timeoutDuration: this.timeoutMs,
      cooldownDuration: this.cooldownMs,
      cacheMaxAge: this.maxAgeMs,
      [customFetch]: this.boundedFetch,
    });
    if (this.keySets.size >= OIDC_KEY_SETS_MAX) {
      const oldest = this.keySets.keys().next().value;
      if (oldest !== undefined) this.keySets.delete(oldest);
    }
    this.keySets.set(jwksUrl, set);
    return set;
  }

  /** The JWKS URL of an issuer, reading (and caching) its discovery document if it has one. */
  private async jwksUrlOf(idp: IdpIssuerConfig): Promise<string> {
    if (idp.jwks_url !== null) return idp.jwks_url;
    const discoveryUrl = idp.discovery_url as string;
    const key = `${discoveryUrl}\u0000${idp.issuer}`;
    const hit = this.discovered.get(key);
    if (hit && Date.now() - hit.atMs < this.maxAgeMs) return hit.jwksUrl;
    const url = checkIdpUrl(discoveryUrl, 'discovery_url');
    let doc: { issuer?: unknown; jwks_uri?: unknown };
    try {
      const res = await this.boundedFetch(url, { headers: { accept: 'application/json' } });
      if (res.status !== 200) throw new OidcTokenRefusedError(`discovery answered ${res.status}`);
      doc = JSON.parse(await res.text()) as typeof doc;
    } catch (err) {
      if (err instanceof OidcTokenRefusedError) throw err;
      throw new OidcTokenRefusedError('discovery document unavailable', { cause: err });
    }
    if (doc.issuer !== idp.issuer) {
      throw new OidcTokenRefusedError('discovery document names another issuer');
    }
    if (typeof doc.jwks_uri !== 'string') {
      throw new OidcTokenRefusedError('discovery document has no jwks_uri');
    }
    checkIdpUrl(doc.jwks_uri, 'jwks_uri');
    if (this.discovered.size >= OIDC_KEY_SETS_MAX) this.discovered.clear();
    this.discovered.set(key, { jwksUrl: doc.jwks_uri, atMs: Date.now() });
    return doc.jwks_uri;
  }

  /**
   * Verifies an upstream token against a tenant's issuers and returns who it names. Throws
   * OidcTokenRefusedError on any failure.
   */
  async verify(token: string, issuers: readonly IdpIssuerConfig[]): Promise<UpstreamIdentity> {
    if (token.length === 0 || token.length > OIDC_TOKEN_BYTES_MAX) {
      throw new OidcTokenRefusedError('token missing or too long');
    }
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch (err) {
      throw new OidcTokenRefusedError('not a JWT', { cause: err });
    }
    const idp = issuers.find((i) => i.issuer === unverified.iss);
    if (!idp) throw new OidcTokenRefusedError('issuer not trusted by this tenant');
    let payload: JWTPayload;
    try {
      const keys = this.keySet(await this.jwksUrlOf(idp));
      ({ payload } = await jwtVerify(token, keys, {
        issuer: idp.issuer,
        audience: [...idp.audiences],
        algorithms: this.algorithms,
        clockTolerance: OIDC_CLOCK_SKEW_S,
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      throw refusalOf(err);
    }
    return this.identityOf(idp, payload);
  }

  private identityOf(idp: IdpIssuerConfig, payload: JWTPayload): UpstreamIdentity {
    const subject = payload[idp.subject_claim];
    if (typeof subject !== 'string' || subject.length === 0) {
      throw new OidcTokenRefusedError(`claim ${idp.subject_claim} missing`);
    }
    if (subject.length > OIDC_CLAIM_CHARS_MAX) {
      throw new OidcTokenRefusedError(`claim ${idp.subject_claim} too long`);
    }
    return {
      issuer: idp.issuer,
      subject,
      principalId: principalIdOf(idp.issuer, subject),
      groups: groupsOf(idp, payload),
    };
  }
}

function groupsOf(idp: IdpIssuerConfig, payload: JWTPayload): string[] {
  if (idp.groups_claim === null) return [];
  const raw = payload[idp.groups_claim];
  if (raw === undefined) return [];
  if (!Array.isArray(raw) || raw.length > OIDC_GROUPS_MAX) {
    throw new OidcTokenRefusedError(`claim ${idp.groups_claim} is not a list of groups`);
  }
  const out = new Set<string>();
  for (const g of raw) {
    if (typeof g !== 'string' || g.length === 0 || g.length > OIDC_CLAIM_CHARS_MAX) {
      throw new OidcTokenRefusedError(`claim ${idp.groups_claim} holds a bad group name`);
    }
    out.add(`${idp.issuer}#${g}`);
  }
  return [...out];
}

/** Parses FELIX_CONTROLPLANE_OIDC_ALLOWED_ALGORITHMS (comma-separated); null when unset. */
export function parseOidcAlgorithms(raw: string | undefined): string[] | null {
  if (raw === undefined || raw.trim() === '') return null;
  const algs = raw.split(',').map((s) => s.trim());
  const supported: readonly string[] = OIDC_ALGORITHMS_SUPPORTED;
  const bad = algs.filter((a) => !supported.includes(a));
  if (bad.length > 0 || algs.length === 0) {
    throw new ConfigInvalidError(
      `FELIX_CONTROLPLANE_OIDC_ALLOWED_ALGORITHMS: unsupported ${bad.join(', ')}`,
    );
  }
  return algs;
}
