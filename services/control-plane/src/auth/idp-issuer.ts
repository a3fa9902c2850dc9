/**
 * A tenant's upstream identity providers: what an issuer's configuration holds, and the checks
 * it passes before the control plane stores it or fetches anything from it (https only, plain
 * http only on loopback, no credentials or fragment in a URL, no issuer containing `#`, no
 * literal private or link-local address). DNS names are not resolved here: an operator who
 * points an issuer at an internal name is trusted to mean it.
 */
import { isIP } from 'node:net';
import { IdpIssuerInvalidError } from '../errors.js';
import { IDP_AUDIENCES_MAX, IDP_FIELD_CHARS_MAX } from '../limits.js';
import type { IdpIssuer } from '../store/types.js';

/**
 * One trusted upstream issuer of a tenant, as stored (`idp_issuers`): `issuer` and `audiences`
 * are compared exactly; keys come from `jwks_url`, or from the discovery document at
 * `discovery_url` (exactly one is set); `subject_claim` (default `sub`) names the subject and
 * `groups_claim` (optional) a string array of IdP groups.
 */
export type IdpIssuerConfig = Omit<IdpIssuer, 'tenant_id'>;

/** The issuer configuration as the API carries it. */
export interface IdpIssuerBody {
  issuer: string;
  audiences: string[];
  jwks_url?: string | null;
  discovery_url?: string | null;
  subject_claim?: string | null;
  groups_claim?: string | null;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function ipv4Private(host: string): boolean {
  const [a = 0, b = 0] = host.split('.').map(Number);
  return (
    a === 10 ||
    a === 0 ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 169 && b === 254) ||
    (a === 100 && b >= 64 && b <= 127)
  );
}

function ipv6Private(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return /^fe[89ab]/.test(h) || /^f[cd]/.test(h) || h === '::' || h.startsWith('::ffff:');
}

/**
 * Parses and checks a URL the control plane will fetch: https, or http to a loopback address
 * (tests and a local IdP); no user info, no fragment, no literal private or link-local address.
 */
export function checkIdpUrl(raw: string, field: string): URL {
  if (raw.length > IDP_FIELD_CHARS_MAX) throw new IdpIssuerInvalidError(`${field} is too long`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new IdpIssuerInvalidError(`${field} is not a URL`);
  }
  if (url.username || url.password) throw new IdpIssuerInvalidError(`${field} carries user info`);
  if (url.hash || raw.includes('#')) throw new IdpIssuerInvalidError(`${field} has a fragment`);
  const loopback = LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol === 'http:' && !loopback) {
    throw new IdpIssuerInvalidError(`${field} must be https (http only on loopback)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new IdpIssuerInvalidError(`${field} must be https`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const ip = isIP(host);
  if (!loopback && ((ip === 4 && ipv4Private(host)) || (ip === 6 && ipv6Private(host)))) {
    throw new IdpIssuerInvalidError(`${field} names a private or link-local address`);
  }
  return url;
}

function field(value: string, name: string): string {
  if (value.length === 0 || value.length > IDP_FIELD_CHARS_MAX) {
    throw new IdpIssuerInvalidError(`${name} must be 1-${IDP_FIELD_CHARS_MAX} characters`);
  }
  return value;
}

/** Checks an issuer configuration from the API (or bootstrap) and returns it as stored. */
export function parseIdpIssuer(tenant: string, body: IdpIssuerBody): IdpIssuer {
  const issuer = field(body.issuer, 'issuer');
  // `#` separates issuer and group name in `group:<issuer>#<name>` subjects.
  if (issuer.includes('#')) throw new IdpIssuerInvalidError('an issuer may not contain #');
  if (body.audiences.length === 0 || body.audiences.length > IDP_AUDIENCES_MAX) {
    throw new IdpIssuerInvalidError(`audiences must list 1-${IDP_AUDIENCES_MAX} values`);
  }
  const audiences = body.audiences.map((a) => field(a, 'audience'));
  const jwks = body.jwks_url ?? null;
  const discovery = body.discovery_url ?? null;
  if ((jwks === null) === (discovery === null)) {
    throw new IdpIssuerInvalidError('give exactly one of jwks_url and discovery_url');
  }
  if (jwks !== null) checkIdpUrl(jwks, 'jwks_url');
  if (discovery !== null) checkIdpUrl(discovery, 'discovery_url');
  return {
    tenant_id: tenant,
    issuer,
    audiences,
    jwks_url: jwks,
    discovery_url: discovery,
    subject_claim: field(body.subject_claim ?? 'sub', 'subject_claim'),
    groups_claim: body.groups_claim ? field(body.groups_claim, 'groups_claim') : null,
  };
}
