/**
 * The tenants' public keys as the guard sees them: read from the store (staged and active keys
 * verify), cached briefly and boundedly, forgotten at once when this instance changes a key.
 * Also makes new keys in the form the store keeps.
 */
import {
  type KeyResolver,
  exportPrivateJwk,
  generateSigningKey,
  importPublicJwk,
} from '@felix/authz';
import type { Clock } from '../clock.js';
import {
  TENANT_KEYS_CACHE_ENTRIES_MAX,
  TENANT_KEYS_CACHE_TTL_MS,
  TENANT_KEYS_MISS_REREAD_MS,
} from '../limits.js';
import type { NewSigningKey } from '../store/signing-keys.js';
import type { ControlStore } from '../store/store.js';

type PublicKey = Awaited<ReturnType<typeof importPublicJwk>>['publicKey'];

interface Entry {
  atMs: number;
  keys: Promise<Map<string, PublicKey>>;
}

/** A new Ed25519 key as the store keeps it (kid = JWK thumbprint, private JWK). */
export async function newSigningKey(): Promise<NewSigningKey> {
  const k = await generateSigningKey();
  return { kid: k.kid, private_jwk: { ...(await exportPrivateJwk(k.privateKey, k.kid)) } };
}

export class TenantKeyCache implements KeyResolver {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly store: ControlStore,
    private readonly clock: Clock,
    private readonly ttlMs = TENANT_KEYS_CACHE_TTL_MS,
    private readonly capacity = TENANT_KEYS_CACHE_ENTRIES_MAX,
  ) {}

  async resolve(tenant: string, kid: string): Promise<PublicKey | null> {
    const found = (await this.keysOf(tenant)).get(kid);
    if (found !== undefined) return found;
    // A key another instance made (HA) or a tenant it initialized: read again, at most once per
    // TENANT_KEYS_MISS_REREAD_MS per tenant, so unknown kids cannot turn into a read each.
    const hit = this.entries.get(tenant);
    if (hit === undefined || this.clock.monoMs() - hit.atMs < TENANT_KEYS_MISS_REREAD_MS)
      return null;
    this.entries.delete(tenant);
    return (await this.keysOf(tenant)).get(kid) ?? null;
  }

  /**
   * Reads (or finds cached) the tenant's keys. The guard calls this before verifying, so a store
   * failure surfaces as itself (503) rather than as a refused token.
   */
  async preload(tenant: string): Promise<void> {
    await this.keysOf(tenant);
  }

  /** Forgets a tenant's keys (after this instance staged, activated or retired one). */
  invalidate(tenant: string): void {
    this.entries.delete(tenant);
  }

  private keysOf(tenant: string): Promise<Map<string, PublicKey>> {
    const now = this.clock.monoMs();
    const hit = this.entries.get(tenant);
    if (hit && now - hit.atMs < this.ttlMs) return hit.keys;
    if (this.entries.size >= this.capacity && !hit) {
      // Oldest first (insertion order): a flood of unknown tenants evicts itself.
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    // Concurrent misses share one read; a failed read is not cached.
    const keys = this.load(tenant);
    this.entries.delete(tenant);
    this.entries.set(tenant, { atMs: now, keys });
    keys.catch(() => {
      if (this.entries.get(tenant)?.keys === keys) this.entries.delete(tenant);
    });
    return keys;
  }

  private async load(tenant: string): Promise<Map<string, PublicKey>> {
    const out = new Map<string, PublicKey>();
    for (const k of await this.store.signingKeys.published(tenant)) {
      const { publicKey } = await importPublicJwk({ ...k.public_jwk });
      out.set(k.kid, publicKey);
    }
    return out;
  }
}
