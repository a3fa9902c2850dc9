// The credentials of a demo's standalone broker: one Ed25519 signing key per tenant (kept in the
// broker's directory, so a restarted broker and its demo keep using it), the broker's keys file
// (`auth.keys_file`: the tenants' public keys) and a token per tenant with the data permissions a
// demo uses. With a control plane, tokens come from it instead (secure-cluster.mjs).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK } from 'jose';

const TOKEN_LIFETIME_S = 3600;

/** Everything a demo may do with its own tenant's data, and nothing else. */
const dataPermissions = (t) => [
  `stream.publish:stream:${t}/*/*`,
  `stream.subscribe:stream:${t}/*/*`,
  `cache.read:cache:${t}/*/*`,
  `cache.write:cache:${t}/*/*`,
  `group.manage:group:${t}/*/*/*`,
];

/** The tenants a broker's YAML catalog names (`tenant: X` entries). */
export function tenantsOf(yaml) {
  return [...new Set([...yaml.matchAll(/tenant:\s*([A-Za-z0-9_.-]+)/g)].map((m) => m[1]))];
}

/**
 * Loads or creates the signing keys of `tenants` in `dir`, writes the broker's keys file there,
 * and returns { keysFile, tokenFor(tenant) }.
 */
export async function demoCredentials(dir, tenants) {
  const keyPath = join(dir, 'demo-signing-keys.json');
  const stored = existsSync(keyPath) ? JSON.parse(readFileSync(keyPath, 'utf8')) : {};
  const keys = {};
  const pub = {};
  for (const t of tenants) {
    let jwk = stored[t];
    if (jwk === undefined) {
      const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
      jwk = await exportJWK(privateKey);
      stored[t] = jwk;
    }
    const kid = await calculateJwkThumbprint({ kty: jwk.kty, crv: jwk.crv, x: jwk.x });
    keys[t] = { kid, key: await importJWK(jwk, 'EdDSA') };
    pub[t] = { keys: [{ kty: 'OKP', crv: 'Ed25519', x: jwk.x, kid, alg: 'EdDSA', use: 'sig' }] };
  }
  writeFileSync(keyPath, JSON.stringify(stored), { mode: 0o600 });
  const keysFile = join(dir, 'broker-keys.json');
  writeFileSync(keysFile, JSON.stringify({ tenants: pub }));
  const tokenFor = (tenant) => {
    const k = keys[tenant];
    if (k === undefined) throw new Error(`the demo broker has no key for tenant ${tenant}`);
    return new SignJWT({ tid: tenant, perms: dataPermissions(tenant) })
      .setProtectedHeader({ alg: 'EdDSA', kid: k.kid, typ: 'JWT' })
      .setIssuer('felix-auth')
      .setAudience('felix-broker')
      .setSubject(`demo-${tenant}`)
      .setIssuedAt()
      .setExpirationTime(`${TOKEN_LIFETIME_S}s`)
      .sign(k.key);
  };
  return { keysFile, tokenFor };
}
