/**
 * Tenant signing keys (Ed25519, stored as private JWKs). Rotation is stage → activate →
 * retire: staged and active keys are published (they verify), only the active one signs, and
 * the one-active-per-tenant index makes a second active key impossible whatever races.
 */
import {
  AuthLimitError,
  SigningKeyNotFoundError,
  SigningKeyStateError,
  TenantNotFoundError,
} from '../errors.js';
import { SIGNING_KEYS_PUBLISHED_MAX } from '../limits.js';
import { type Row, num, str } from './rows.js';
import type { Sql } from './sql.js';
import type { Transactions, Write } from './transaction.js';
import type { SigningKeyInfo, SigningKeyStatus, StoredSigningKey } from './types.js';

/** A key to store: its kid and private JWK (from @felix/authz exportPrivateJwk). */
export interface NewSigningKey {
  kid: string;
  private_jwk: Record<string, unknown>;
}

const COLUMNS = 'tenant_id, kid, alg, private_jwk, status, created_at_ms';

function storedOf(r: Row): StoredSigningKey {
  const priv = JSON.parse(str(r.private_jwk)) as Record<string, unknown>;
  const kid = str(r.kid);
  return {
    tenant_id: str(r.tenant_id),
    kid,
    alg: 'EdDSA',
    status: str(r.status) as SigningKeyStatus,
    created_at_ms: num(r.created_at_ms),
    public_jwk: { kty: 'OKP', crv: 'Ed25519', x: str(priv.x), kid, alg: 'EdDSA', use: 'sig' },
    private_jwk: priv,
  };
}

/** The public view of a stored key (never the private JWK). */
export function keyInfo(k: StoredSigningKey): SigningKeyInfo {
  const { private_jwk: _p, ...info } = k;
  return info;
}

function checkPrivateJwk(key: NewSigningKey): void {
  const j = key.private_jwk;
  if (j.kty !== 'OKP' || j.crv !== 'Ed25519' || typeof j.x !== 'string' || typeof j.d !== 'string')
    throw new SigningKeyStateError(`key ${key.kid} is not an Ed25519 private JWK`);
}

/** Inserts a key inside an open write (bootstrap uses this with status `active`). */
export async function insertKey(
  w: Write,
  tenant: string,
  key: NewSigningKey,
  status: 'staged' | 'active',
): Promise<void> {
  checkPrivateJwk(key);
  const published = await w.q.query<Row>(
    "SELECT COUNT(*) AS n FROM tenant_signing_keys WHERE tenant_id = $1 AND status <> 'retired'",
    [tenant],
  );
  if (num(published[0]?.n ?? 0) >= SIGNING_KEYS_PUBLISHED_MAX)
    throw new AuthLimitError(
      `tenant ${tenant} already publishes ${SIGNING_KEYS_PUBLISHED_MAX} keys; retire one first`,
    );
  await w.q.query(
    `INSERT INTO tenant_signing_keys (${COLUMNS}) VALUES ($1, $2, 'EdDSA', $3, $4, $5)`,
    [tenant, key.kid, JSON.stringify(key.private_jwk), status, w.nowMs()],
  );
}

async function findKey(q: Sql, tenant: string, kid: string): Promise<StoredSigningKey | undefined> {
  const r = await q.query<Row>(
    `SELECT ${COLUMNS} FROM tenant_signing_keys WHERE tenant_id = $1 AND kid = $2`,
    [tenant, kid],
  );
  return r[0] ? storedOf(r[0]) : undefined;
}

/** Serialises key changes of one tenant (Postgres row lock; SQLite has one writer anyway). */
async function lockTenant(w: Write, tenant: string, postgres: boolean): Promise<boolean> {
  const r = await w.q.query(
    `SELECT tenant_id FROM tenants WHERE tenant_id = $1${postgres ? ' FOR UPDATE' : ''}`,
    [tenant],
  );
  return r.length > 0;
}

export class SigningKeyRepository {
  constructor(private readonly tx: Transactions) {}

  private get postgres(): boolean {
    return this.tx.driver.kind === 'postgres';
  }

  /** Stages a new key: published in the JWKS (so verifiers learn it) but not signing yet. */
  stage(tenant: string, key: NewSigningKey): Promise<SigningKeyInfo> {
    return this.tx.write(async (w) => {
      if (!(await lockTenant(w, tenant, this.postgres)))
        throw new TenantNotFoundError(`tenant ${tenant} does not exist`);
      await insertKey(w, tenant, key, 'staged');
      return keyInfo((await findKey(w.q, tenant, key.kid))!);
    });
  }

  /**
   * Makes a staged key the signing key; the previous active key goes back to `staged` (still
   * published, so tokens it signed verify until it is retired). Activating the active key is a
   * no-op; a retired key cannot come back.
   */
  activate(tenant: string, kid: string): Promise<SigningKeyInfo> {
    return this.tx.write(async (w) => {
      await lockTenant(w, tenant, this.postgres);
      const key = await findKey(w.q, tenant, kid);
      if (!key) throw new SigningKeyNotFoundError(`tenant ${tenant} has no key ${kid}`);
      if (key.status === 'active') return keyInfo(key);
      if (key.status === 'retired')
        throw new SigningKeyStateError(`key ${kid} is retired and cannot be activated`);
      await w.q.query(
        "UPDATE tenant_signing_keys SET status = 'staged' WHERE tenant_id = $1 AND status = 'active'",
        [tenant],
      );
      await w.q.query(
        "UPDATE tenant_signing_keys SET status = 'active' WHERE tenant_id = $1 AND kid = $2",
        [tenant, kid],
      );
      return { ...keyInfo(key), status: 'active' };
    });
  }

  /**
   * Retires a key (removed from the JWKS, kept for the record). The active key is refused (409).
   * The tenant lock comes first, as in activate: otherwise a retire that read the key as staged
   * could retire it just after a concurrent activation made it the only active key.
   */
  retire(tenant: string, kid: string): Promise<SigningKeyInfo> {
    return this.tx.write(async (w) => {
      await lockTenant(w, tenant, this.postgres);
      const key = await findKey(w.q, tenant, kid);
      if (!key) throw new SigningKeyNotFoundError(`tenant ${tenant} has no key ${kid}`);
      if (key.status === 'active')
        throw new SigningKeyStateError(
          `key ${kid} is the active signing key; activate another key before retiring it`,
        );
      await w.q.query(
        "UPDATE tenant_signing_keys SET status = 'retired' WHERE tenant_id = $1 AND kid = $2",
        [tenant, kid],
      );
      return { ...keyInfo(key), status: 'retired' };
    });
  }

  /** Every key of the tenant, public parts only, oldest first. */
  async list(tenant: string): Promise<SigningKeyInfo[]> {
    const rows = await this.tx.driver.query<Row>(
      `SELECT ${COLUMNS} FROM tenant_signing_keys WHERE tenant_id = $1 ORDER BY created_at_ms, kid`,
      [tenant],
    );
    return rows.map((r) => keyInfo(storedOf(r)));
  }

  /** The keys that verify (staged and active), public parts: the tenant's JWKS. */
  async published(tenant: string): Promise<SigningKeyInfo[]> {
    return (await this.list(tenant)).filter((k) => k.status !== 'retired');
  }

  /** The active key with its private JWK, or undefined when the tenant has none. */
  async active(tenant: string): Promise<StoredSigningKey | undefined> {
    const rows = await this.tx.driver.query<Row>(
      `SELECT ${COLUMNS} FROM tenant_signing_keys WHERE tenant_id = $1 AND status = 'active'`,
      [tenant],
    );
    return rows[0] ? storedOf(rows[0]) : undefined;
  }

  get(tenant: string, kid: string): Promise<StoredSigningKey | undefined> {
    return findKey(this.tx.driver, tenant, kid);
  }
}
