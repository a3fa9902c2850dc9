/**
 * Refresh tokens: single use, stored only as the SHA-256 of their secret. Spending one is one
 * transaction: a live token with the right secret is marked spent and returned; an already spent
 * one is a replay and revokes its whole chain; a wrong secret spends the token anyway, so a
 * guessed id gives one guess at most. Secrets are compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { AuthLimitError, TenantNotFoundError } from '../errors.js';
import { REFRESH_TOKENS_PER_PRINCIPAL_MAX } from '../limits.js';
import { type Row, num, str } from './rows.js';
import type { Sql } from './sql.js';
import { findTenant } from './tenants.js';
import type { Transactions } from './transaction.js';
import type {
  NewRefreshToken,
  RefreshTokenRecord,
  RefreshTokenState,
  SpendOutcome,
} from './types.js';

/** The stored form of a secret: hex SHA-256. */
export function secretHash(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

const COLUMNS = `id, tenant_id, principal_id, secret_sha256, chain_id, parent_id, state,
  created_at_ms, expires_at_ms, groups_json, requested_json, resources_json, audience`;

const jsonOrNull = (v: unknown): string[] | null =>
  v === null || v === undefined ? null : (JSON.parse(str(v)) as string[]);

function tokenOf(r: Row): RefreshTokenRecord {
  return {
    id: str(r.id),
    tenant_id: str(r.tenant_id),
    principal_id: str(r.principal_id),
    chain_id: str(r.chain_id),
    parent_id: r.parent_id === null || r.parent_id === undefined ? null : str(r.parent_id),
    state: str(r.state) as RefreshTokenState,
    created_at_ms: num(r.created_at_ms),
    expires_at_ms: num(r.expires_at_ms),
    groups: JSON.parse(str(r.groups_json)) as string[],
    requested: jsonOrNull(r.requested_json),
    resources: jsonOrNull(r.resources_json),
    audience: r.audience === null || r.audience === undefined ? null : str(r.audience),
  };
}

const json = (v: string[] | null | undefined) =>
  v === null || v === undefined ? null : JSON.stringify(v);

async function revokeChainIn(q: Sql, chainId: string): Promise<number> {
  const rows = await q.query(
    "UPDATE refresh_tokens SET state = 'revoked' WHERE chain_id = $1 AND state <> 'revoked' RETURNING id",
    [chainId],
  );
  return rows.length;
}

export class RefreshTokenRepository {
  constructor(private readonly tx: Transactions) {}

  /**
   * Stores a new live token (its secret's hash only). A token of a chain that was revoked is
   * stored revoked: a refresh racing a replay cannot revive the chain.
   */
  insert(t: NewRefreshToken): Promise<RefreshTokenRecord> {
    return this.tx.write(async (w) => {
      if (!(await findTenant(w.q, t.tenant_id)))
        throw new TenantNotFoundError(`tenant ${t.tenant_id} does not exist`);
      const live = await w.q.query<Row>(
        "SELECT COUNT(*) AS n FROM refresh_tokens WHERE tenant_id = $1 AND principal_id = $2 AND state = 'live'",
        [t.tenant_id, t.principal_id],
      );
      if (num(live[0]?.n ?? 0) >= REFRESH_TOKENS_PER_PRINCIPAL_MAX)
        throw new AuthLimitError(
          `principal ${t.principal_id} holds ${REFRESH_TOKENS_PER_PRINCIPAL_MAX} live refresh tokens; revoke them first`,
        );
      const revoked = await w.q.query(
        "SELECT id FROM refresh_tokens WHERE chain_id = $1 AND state = 'revoked' LIMIT 1",
        [t.chain_id],
      );
      const state: RefreshTokenState = revoked.length > 0 ? 'revoked' : 'live';
      await w.q.query(
        `INSERT INTO refresh_tokens (${COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
        [
          t.id,
          t.tenant_id,
          t.principal_id,
          secretHash(t.secret),
          t.chain_id,
          t.parent_id,
          state,
          w.nowMs(),
          t.expires_at_ms,
          JSON.stringify(t.groups ?? []),
          json(t.requested),
          json(t.resources),
          t.audience ?? null,
        ],
      );
      return tokenOf(
        (await w.q.query<Row>(`SELECT ${COLUMNS} FROM refresh_tokens WHERE id = $1`, [t.id]))[0]!,
      );
    });
  }

  async get(id: string): Promise<RefreshTokenRecord | undefined> {
    const r = await this.tx.driver.query<Row>(
      `SELECT ${COLUMNS} FROM refresh_tokens WHERE id = $1`,
      [id],
    );
    return r[0] ? tokenOf(r[0]) : undefined;
  }

  /**
   * Spends token `id` of `tenant` presented with `secret`, at `nowMs`. See SpendOutcome: only
   * `spent` hands the token back; a replay revokes the chain in the same transaction.
   */
  spend(tenant: string, id: string, secret: string, nowMs: number): Promise<SpendOutcome> {
    const presented = secretHash(secret);
    return this.tx.write(async (w): Promise<SpendOutcome> => {
      const rows = await w.q.query<Row>(
        // Postgres: the row lock makes two concurrent spends of one token see each other;
        // SQLite runs one writer at a time already (and has no FOR UPDATE).
        `SELECT ${COLUMNS} FROM refresh_tokens WHERE id = $1 AND tenant_id = $2${
          this.tx.driver.kind === 'postgres' ? ' FOR UPDATE' : ''
        }`,
        [id, tenant],
      );
      const row = rows[0];
      if (!row) return { outcome: 'unknown' };
      const t = tokenOf(row);
      if (t.state === 'revoked') return { outcome: 'revoked' };
      if (t.state === 'spent')
        return { outcome: 'replayed', revoked: await revokeChainIn(w.q, t.chain_id) };
      await w.q.query("UPDATE refresh_tokens SET state = 'spent' WHERE id = $1", [id]);
      if (!sameHash(str(row.secret_sha256), presented)) return { outcome: 'wrong_secret' };
      if (t.expires_at_ms <= nowMs) return { outcome: 'expired' };
      return { outcome: 'spent', token: { ...t, state: 'spent' } };
    });
  }

  /** Revokes every token of a chain; the number newly revoked. */
  revokeChain(chainId: string): Promise<number> {
    return this.tx.write((w) => revokeChainIn(w.q, chainId));
  }

  /** Revokes every live token of a principal in a tenant; the number revoked. */
  revokeByPrincipal(tenant: string, principalId: string): Promise<number> {
    return this.tx.write(async (w) => {
      const rows = await w.q.query(
        `UPDATE refresh_tokens SET state = 'revoked'
         WHERE tenant_id = $1 AND principal_id = $2 AND state = 'live' RETURNING id`,
        [tenant, principalId],
      );
      return rows.length;
    });
  }

  /** Deletes tokens that expired before `beforeMs` (housekeeping); the number deleted. */
  deleteExpired(beforeMs: number): Promise<number> {
    return this.tx.write(async (w) => {
      const rows = await w.q.query(
        'DELETE FROM refresh_tokens WHERE expires_at_ms < $1 RETURNING id',
        [beforeMs],
      );
      return rows.length;
    });
  }
}
