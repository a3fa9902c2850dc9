/**
 * Signing keys: Ed25519 key pairs named by their JWK thumbprint, JWK export/import, and the key
 * resolver the verifier asks for a tenant's public key by `kid`. The in-memory key set is enough
 * for tests and standalone brokers; a JWKS-fetching resolver plugs in behind the same interface.
 */
import {
  type CryptoKey,
  type JWK,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
} from 'jose';
import { InvalidKeyError, KeySetFullError } from './errors.js';
import { KEYS_PER_TENANT_MAX, KID_BYTES_MAX } from './limits.js';

/** The only signature algorithm Felix tokens use. */
export const TOKEN_ALGORITHM = 'EdDSA';

/** A private key with its `kid`: what signToken needs. */
export interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
}

/** A generated key pair; `kid` is the RFC 7638 thumbprint of the public JWK. */
export interface SigningKeyPair extends SigningKey {
  readonly publicKey: CryptoKey;
}

/** A public key as published in a tenant's JWKS. */
export interface PublicJwk {
  readonly kty: 'OKP';
  readonly crv: 'Ed25519';
  readonly x: string;
  readonly kid: string;
  readonly alg: 'EdDSA';
  readonly use: 'sig';
}

/**
 * Finds a tenant's public key by `kid`; null when the tenant has no such key. A JWKS fetcher
 * (with its caching and fetch guards) implements this in the broker.
 */
export interface KeyResolver {
  resolve(tenant: string, kid: string): CryptoKey | null | Promise<CryptoKey | null>;
}

/** Generates an Ed25519 pair; the private key is extractable so the control plane can store it. */
export async function generateSigningKey(): Promise<SigningKeyPair> {
  const { publicKey, privateKey } = await generateKeyPair(TOKEN_ALGORITHM, {
    crv: 'Ed25519',
    extractable: true,
  });
  const jwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(jwk);
  return { kid, publicKey, privateKey };
}

/** The public JWK (with kid, alg and use) for a JWKS document. */
export async function exportPublicJwk(publicKey: CryptoKey, kid: string): Promise<PublicJwk> {
  const jwk = await exportJWK(publicKey);
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || !jwk.x || jwk.d) {
    throw new InvalidKeyError('not an Ed25519 public key');
  }
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x, kid, alg: 'EdDSA', use: 'sig' };
}

/** The private JWK, for the control plane's key store only. */
export async function exportPrivateJwk(privateKey: CryptoKey, kid: string): Promise<JWK> {
  const jwk = await exportJWK(privateKey);
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || !jwk.d) {
    throw new InvalidKeyError('not an Ed25519 private key');
  }
  return { ...jwk, kid, alg: TOKEN_ALGORITHM };
}

function checkOkp(jwk: JWK, wantPrivate: boolean): string {
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') {
    throw new InvalidKeyError('expected kty OKP, crv Ed25519');
  }
  if (jwk.alg !== undefined && jwk.alg !== TOKEN_ALGORITHM) throw new InvalidKeyError('alg');
  if (wantPrivate !== (typeof jwk.d === 'string')) {
    throw new InvalidKeyError(wantPrivate ? 'missing d' : 'a public JWK must not carry d');
  }
  if (typeof jwk.kid !== 'string' || jwk.kid.length === 0 || jwk.kid.length > KID_BYTES_MAX) {
    throw new InvalidKeyError('kid');
  }
  return jwk.kid;
}

/** Imports a public JWK (as found in a JWKS); returns the key and its kid. */
export async function importPublicJwk(jwk: JWK): Promise<{ kid: string; publicKey: CryptoKey }> {
  const kid = checkOkp(jwk, false);
  const { kid: _k, alg: _a, use: _u, ...bare } = jwk;
  const publicKey = (await importJWK(bare, TOKEN_ALGORITHM)) as CryptoKey;
  return { kid, publicKey };
}

/** Imports a private JWK written by exportPrivateJwk. */
export async function importPrivateJwk(jwk: JWK): Promise<SigningKey> {
  const kid = checkOkp(jwk, true);
  const { kid: _k, alg: _a, use: _u, ...bare } = jwk;
  const privateKey = (await importJWK(bare, TOKEN_ALGORITHM)) as CryptoKey;
  return { kid, privateKey };
}

/** Public keys per tenant, in memory. */
export class InMemoryKeySet implements KeyResolver {
  private readonly tenants = new Map<string, Map<string, CryptoKey>>();

  add(tenant: string, kid: string, publicKey: CryptoKey): void {
    let keys = this.tenants.get(tenant);
    if (!keys) {
      keys = new Map();
      this.tenants.set(tenant, keys);
    }
    if (!keys.has(kid) && keys.size >= KEYS_PER_TENANT_MAX) throw new KeySetFullError(tenant);
    keys.set(kid, publicKey);
  }

  /** Imports every key of a JWKS document for `tenant`. */
  async addJwks(tenant: string, jwks: { keys: readonly JWK[] }): Promise<void> {
    for (const jwk of jwks.keys) {
      const { kid, publicKey } = await importPublicJwk(jwk);
      this.add(tenant, kid, publicKey);
    }
  }

  remove(tenant: string, kid: string): boolean {
    return this.tenants.get(tenant)?.delete(kid) ?? false;
  }

  resolve(tenant: string, kid: string): CryptoKey | null {
    return this.tenants.get(tenant)?.get(kid) ?? null;
  }
}
