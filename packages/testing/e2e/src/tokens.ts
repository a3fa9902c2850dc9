/**
 * Real tenant keys and tokens for tests (issue 21): a key pair per tenant, the broker's
 * `auth.keys_file` written from their public halves, and Felix tokens minted with the private
 * ones, so a test broker runs the secure path (`auth.mode: tokens`) like a deployed one.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  BROKER_AUDIENCE,
  type SigningKeyPair,
  exportPublicJwk,
  generateSigningKey,
  signToken,
} from '@felix/authz';

export interface MintOptions {
  /** The principal id; `user-<tenant>` when omitted. */
  subject?: string;
  /** `action:object` strings; every data action on the tenant's streams and caches when omitted. */
  permissions?: readonly string[];
  /** Seconds from `nowS`; 900 (the reference's access TTL) when omitted. */
  lifetimeS?: number;
  /** Issue time in Unix seconds (set it in the past to mint a token that expires soon). */
  nowS?: number;
}

/** Every data-plane action on every stream, cache and group of `tenant`. */
export function allDataPermissions(tenant: string): string[] {
  return [
    `stream.publish:stream:${tenant}/*/*`,
    `stream.subscribe:stream:${tenant}/*/*`,
    `cache.read:cache:${tenant}/*/*`,
    `cache.write:cache:${tenant}/*/*`,
    `group.manage:group:${tenant}/*/*/*`,
  ];
}

export class TestTenants {
  private constructor(private readonly keys: ReadonlyMap<string, SigningKeyPair>) {}

  /** A signing key per tenant. */
  static async create(tenants: readonly string[] = ['t1']): Promise<TestTenants> {
    const keys = new Map<string, SigningKeyPair>();
    for (const t of tenants) keys.set(t, await generateSigningKey());
    return new TestTenants(keys);
  }

  /** The signing key of `tenant` (a test signing with another tenant's key names it here). */
  key(tenant: string): SigningKeyPair {
    const k = this.keys.get(tenant);
    if (k === undefined) throw new Error(`no test key for tenant ${tenant}`);
    return k;
  }

  /** Writes the broker's keys file (`{"tenants": {t: {keys: [jwk]}}}`) in `dir`; its path. */
  async writeKeysFile(dir: string): Promise<string> {
    const tenants: Record<string, { keys: unknown[] }> = {};
    for (const [t, k] of this.keys)
      tenants[t] = { keys: [await exportPublicJwk(k.publicKey, k.kid)] };
    const path = join(dir, 'broker-keys.json');
    await writeFile(path, JSON.stringify({ tenants }));
    return path;
  }

  /** The env that runs a broker on these keys. */
  async brokerEnv(dir: string): Promise<NodeJS.ProcessEnv> {
    return { FELIX_AUTH_MODE: 'tokens', FELIX_AUTH_KEYS_FILE: await this.writeKeysFile(dir) };
  }

  /** A broker token for `tenant`, signed with `signer`'s key (the tenant's own by default). */
  mint(tenant: string, opts: MintOptions = {}, signer = tenant): Promise<string> {
    return signToken(
      {
        audience: BROKER_AUDIENCE,
        subject: opts.subject ?? `user-${tenant}`,
        tenant,
        permissions: opts.permissions ?? allDataPermissions(tenant),
        lifetimeS: opts.lifetimeS ?? 900,
        ...(opts.nowS !== undefined ? { nowS: opts.nowS } : {}),
      },
      this.key(signer),
    );
  }
}
