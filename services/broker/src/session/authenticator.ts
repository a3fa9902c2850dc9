/**
 * Who a token says the client is. `tokens` mode verifies a Felix token with @felix/authz
 * (EdDSA, the tenant's key by kid, issuer `felix-auth`, audience `felix-broker`, expiry with the
 * package's skew, `tid` equal to the tenant the stream names) against the configured key source:
 * `auth.keys_file` (standalone) and/or the control plane's JWKS. A token granting any action a
 * client never needs at the broker (`node.*`, `rbac.*`, `tenant.manage`, `token.delegate`, any
 * `*.manage` but the group's) is refused as a whole: a leaked admin token is no data token.
 * `dev` mode accepts every token as given (the principal is the tenant) and says so at start.
 */
import { readFileSync, statSync } from 'node:fs';
import {
  BROKER_AUDIENCE,
  type KeyResolver,
  TOKEN_CLOCK_SKEW_S,
  TokenError,
  VerifiedTokenCache,
} from '@felix/authz';
import type { Logger } from 'pino';
import type { BrokerConfig } from '../config/types.js';
import { AuthConfigError, JwksFetchError, KeysFileError } from '../errors.js';
import { KEYS_FILE_BYTES_MAX } from '../limits.js';
import { Refusal } from './refusal.js';
import type { Principal } from './grant.js';
import { JwksKeyResolver, type PublicKey, importJwks } from './jwks.js';

/** Actions a data-plane token may carry; anything else makes the whole token unacceptable. */
const CLIENT_ACTIONS: ReadonlySet<string> = new Set([
  'stream.publish',
  'stream.subscribe',
  'cache.read',
  'cache.write',
  'group.consume',
  'group.manage',
]);

/** Tenants of a keys file, each with its public keys by kid. */
export class StaticKeys implements KeyResolver {
  constructor(private readonly tenants: ReadonlyMap<string, ReadonlyMap<string, PublicKey>>) {}

  has(tenant: string): boolean {
    return this.tenants.has(tenant);
  }

  resolve(tenant: string, kid: string): PublicKey | null {
    return this.tenants.get(tenant)?.get(kid) ?? null;
  }
}

/** Reads `auth.keys_file`: `{"tenants": {"t1": {"keys": [<public JWK>...]}}}`. */
export async function readKeysFile(path: string): Promise<StaticKeys> {
  let doc: unknown;
  try {
    if (statSync(path).size > KEYS_FILE_BYTES_MAX) {
      throw new Error(`larger than ${KEYS_FILE_BYTES_MAX} bytes`);
    }
    doc = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new KeysFileError(path, (err as Error).message, { cause: err });
  }
  const tenants = (doc as { tenants?: unknown } | null)?.tenants;
  if (typeof tenants !== 'object' || tenants === null || Array.isArray(tenants)) {
    throw new KeysFileError(path, 'expected {"tenants": {"<tenant>": {"keys": [...]}}}');
  }
  const out = new Map<string, Map<string, PublicKey>>();
  for (const [tenant, jwks] of Object.entries(tenants)) {
    let keys: Map<string, PublicKey>;
    try {
      keys = await importJwks(jwks, tenant);
    } catch (err) {
      throw new KeysFileError(path, `tenant ${tenant}: ${(err as Error).message}`);
    }
    if (keys.size === 0) throw new KeysFileError(path, `tenant ${tenant} has no Ed25519 key`);
    out.set(tenant, keys);
  }
  return new StaticKeys(out);
}

/** The file's tenants from the file; every other tenant from the control plane (if any). */
class LayeredKeys implements KeyResolver {
  constructor(
    private readonly file: StaticKeys | null,
    private readonly jwks: JwksKeyResolver | null,
  ) {}

  resolve(tenant: string, kid: string): PublicKey | null | Promise<PublicKey | null> {
    if (this.file?.has(tenant) || this.jwks === null)
      return this.file?.resolve(tenant, kid) ?? null;
    return this.jwks.resolve(tenant, kid);
  }

  /** Fetches the tenant's keys ahead of verification so a fetch failure is told apart. */
  async prefetch(tenant: string): Promise<void> {
    if (this.file?.has(tenant) || this.jwks === null) return;
    await this.jwks.keysOf(tenant);
  }
}

export function unauthenticated(message: string, reason: string): Refusal {
  return new Refusal('unauthenticated', message, reason, { fatalToStream: true });
}

export class Authenticator {
  private readonly cache = new VerifiedTokenCache();

  private constructor(
    readonly mode: 'tokens' | 'dev',
    private readonly keys: LayeredKeys | null,
  ) {}

  /** Dev mode without the start-up warning: for in-process tests of the session alone. */
  static dev(): Authenticator {
    return new Authenticator('dev', null);
  }

  /**
   * Builds the key source the config names; refuses `tokens` with none (the broker must not
   * start unable to authenticate anyone, nor quietly fall back to accepting every token).
   */
  static async create(
    cfg: BrokerConfig,
    log: Logger,
    bearer: () => Promise<string | null>,
    /** The fetch of JWKS calls (the test partition's when set); the global one otherwise. */
    fetchFn?: typeof fetch,
  ): Promise<Authenticator> {
    if (cfg.auth.mode === 'dev') {
      log.warn(
        'auth.mode is dev: tokens are accepted as given and every request is allowed; ' +
          'never run a shared broker like this',
      );
      return new Authenticator('dev', null);
    }
    const url = cfg.cluster.controlplane_url;
    if (cfg.auth.keys_file === null && !url) {
      throw new AuthConfigError(
        'auth.mode is tokens but no key source is configured: set auth.keys_file ' +
          '(FELIX_AUTH_KEYS_FILE) to tenant public keys, or cluster.controlplane_url to fetch ' +
          'them, or auth.mode: dev (FELIX_AUTH_MODE=dev) for a local test broker',
      );
    }
    const file = cfg.auth.keys_file === null ? null : await readKeysFile(cfg.auth.keys_file);
    const jwks = url
      ? new JwksKeyResolver({ baseUrl: url, bearer, ...(fetchFn ? { fetch: fetchFn } : {}) })
      : null;
    return new Authenticator('tokens', new LayeredKeys(file, jwks));
  }

  /** The principal `token` proves for `tenant`, or the refusal (`unauthenticated`). */
  async verify(token: string, tenant: string): Promise<Principal> {
    if (this.keys === null) {
      return {
        tenant,
        subject: tenant,
        permissions: null,
        expiresAtMs: Number.POSITIVE_INFINITY,
        expMs: undefined,
        token,
      };
    }
    if (token === '') {
      // Said plainly: a client that passed no token would otherwise read "malformed token".
      throw unauthenticated(
        `no token given: this broker verifies Felix tokens (auth.mode tokens); pass a broker-audience token of tenant ${tenant}`,
        'token_missing',
      );
    }
    try {
      await this.keys.prefetch(tenant);
      const v = await this.cache.verify(token, {
        audience: BROKER_AUDIENCE,
        tenant,
        keys: this.keys,
      });
      const foreign = v.claims.perms.find((p) => !CLIENT_ACTIONS.has(p.slice(0, p.indexOf(':'))));
      if (foreign !== undefined) {
        throw unauthenticated(
          `the token carries ${foreign}, which no data-plane token may; use a client token`,
          'token_non_client_action',
        );
      }
      return {
        tenant,
        subject: v.claims.sub,
        permissions: v.permissions,
        expiresAtMs: (v.claims.exp + TOKEN_CLOCK_SKEW_S) * 1000,
        expMs: v.claims.exp * 1000,
        token,
      };
    } catch (err) {
      throw authRefusal(err);
    }
  }
}

function authRefusal(err: unknown): Refusal {
  if (err instanceof Refusal) return err;
  if (err instanceof TokenError) {
    return unauthenticated(`token refused: ${err.message}`, `token_${err.reason}`);
  }
  if (err instanceof JwksFetchError) {
    // The broker, not the token, is at fault: a retry may succeed once the control plane answers.
    return new Refusal('unauthenticated', err.message, 'jwks_unavailable', {
      fatalToStream: true,
      retry: 'retry',
    });
  }
  return unauthenticated(`token refused: ${(err as Error).message}`, 'token_unverifiable');
}
