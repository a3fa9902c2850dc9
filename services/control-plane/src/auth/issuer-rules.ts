/**
 * The shape rules of an IdP issuer, shared by bootstrap and the issuer routes: an issuer name
 * without `#` (it separates issuer from group in `group:<issuer>#<name>` subjects), at least one
 * audience, exactly one of `jwks_url` / `discovery_url`, https URLs (http only for a loopback
 * host, for local IdPs in development). Resolving a host to a private address is checked where
 * the keys are fetched, not here.
 */
import { isLoopback } from '../config.js';
import { InvalidRequestError } from '../errors.js';
import type { IdpIssuer } from '../store/types.js';

/** Longest issuer, URL or claim name accepted. */
export const ISSUER_CHARS_MAX = 512;

export interface IssuerInput {
  issuer: string;
  audiences: string[];
  jwks_url?: string | null;
  discovery_url?: string | null;
  subject_claim?: string;
  groups_claim?: string | null;
}

function checkUrl(field: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Not a URL at all: reported as the field's refusal.
    throw new InvalidRequestError(`${field} '${raw.slice(0, 200)}' is not a URL`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(host))) return raw;
  throw new InvalidRequestError(`${field} must be https (http only on a loopback host)`);
}

/** The issuer as stored, or InvalidRequestError naming the first rule broken. */
export function checkIssuer(tenant: string, i: IssuerInput): IdpIssuer {
  if (i.issuer.length === 0 || i.issuer.length > ISSUER_CHARS_MAX || i.issuer.includes('#'))
    throw new InvalidRequestError(`issuer must be 1-${ISSUER_CHARS_MAX} characters without '#'`);
  if (
    i.audiences.length === 0 ||
    i.audiences.some((a) => a.length === 0 || a.length > ISSUER_CHARS_MAX)
  )
    throw new InvalidRequestError('an issuer needs at least one non-empty audience');
  const jwks = i.jwks_url ?? null;
  const discovery = i.discovery_url ?? null;
  if ((jwks === null) === (discovery === null))
    throw new InvalidRequestError('give exactly one of jwks_url and discovery_url');
  return {
    tenant_id: tenant,
    issuer: i.issuer,
    audiences: [...i.audiences],
    jwks_url: jwks === null ? null : checkUrl('jwks_url', jwks),
    discovery_url: discovery === null ? null : checkUrl('discovery_url', discovery),
    subject_claim: i.subject_claim ?? 'sub',
    groups_claim: i.groups_claim ?? null,
  };
}
