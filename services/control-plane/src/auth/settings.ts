/**
 * Token settings from the environment: FELIX_CONTROLPLANE_OIDC_ALLOWED_ALGORITHMS,
 * FELIX_EXCHANGE_TOKEN_TTL_SECONDS and FELIX_REFRESH_TOKEN_TTL_SECONDS (the reference's names).
 * Pure: it takes the env object.
 */
import { TOKEN_LIFETIME_S_MAX } from '@felix/authz';
import { ConfigInvalidError } from '../errors.js';
import { ACCESS_TOKEN_TTL_S_DEFAULT, REFRESH_TOKEN_TTL_S_DEFAULT } from '../limits.js';
import { OidcVerifier, parseOidcAlgorithms } from './oidc.js';
import type { TokenSettings } from './tokens.js';

/** A refresh chain may not be given more than a year per link. */
const REFRESH_TOKEN_TTL_S_MAX = 366 * 86_400;

function seconds(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  max: number,
) {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new ConfigInvalidError(`${name}=${raw} must be an integer in 1..${max}`);
  }
  return n;
}

export function tokenSettingsFromEnv(env: Record<string, string | undefined>): TokenSettings {
  const algorithms = parseOidcAlgorithms(env.FELIX_CONTROLPLANE_OIDC_ALLOWED_ALGORITHMS);
  return {
    accessTtlS: seconds(
      env,
      'FELIX_EXCHANGE_TOKEN_TTL_SECONDS',
      ACCESS_TOKEN_TTL_S_DEFAULT,
      TOKEN_LIFETIME_S_MAX,
    ),
    refreshTtlS: seconds(
      env,
      'FELIX_REFRESH_TOKEN_TTL_SECONDS',
      REFRESH_TOKEN_TTL_S_DEFAULT,
      REFRESH_TOKEN_TTL_S_MAX,
    ),
    oidc: new OidcVerifier(algorithms ? { algorithms } : {}),
  };
}
