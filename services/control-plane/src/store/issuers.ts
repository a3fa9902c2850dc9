/**
 * The upstream OIDC issuers a tenant accepts for token exchange. The store keeps what the
 * exchange needs to validate a token (issuer, audiences, where its keys are, which claims name
 * the subject and groups); URL policy (https, no private addresses) is checked by the routes.
 */
import {
  AlreadyExistsError,
  AuthLimitError,
  IssuerNotFoundError,
  TenantNotFoundError,
} from '../errors.js';
import { IDP_ISSUERS_PER_TENANT_MAX } from '../limits.js';
import { type Row, num, str } from './rows.js';
import type { Sql, SqlParam } from './sql.js';
import { findTenant } from './tenants.js';
import type { Transactions, Write } from './transaction.js';
import type { IdpIssuer } from './types.js';

const COLUMNS =
  'tenant_id, issuer, audiences, jwks_url, discovery_url, subject_claim, groups_claim';

const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : str(v));

function issuerOf(r: Row): IdpIssuer {
  return {
    tenant_id: str(r.tenant_id),
    issuer: str(r.issuer),
    audiences: JSON.parse(str(r.audiences)) as string[],
    jwks_url: strOrNull(r.jwks_url),
    discovery_url: strOrNull(r.discovery_url),
    subject_claim: str(r.subject_claim),
    groups_claim: strOrNull(r.groups_claim),
  };
}

const same = (a: IdpIssuer, b: IdpIssuer) => JSON.stringify(a) === JSON.stringify(b);

async function findIssuer(q: Sql, tenant: string, issuer: string): Promise<IdpIssuer | undefined> {
  const r = await q.query<Row>(
    `SELECT ${COLUMNS} FROM idp_issuers WHERE tenant_id = $1 AND issuer = $2`,
    [tenant, issuer],
  );
  return r[0] ? issuerOf(r[0]) : undefined;
}

/**
 * Adds an issuer inside an open write. An identical existing one is left alone (created false);
 * a different one under the same name conflicts (changing an issuer is `replace`).
 */
/** An issuer's columns in COLUMNS order ($1..$7 of its insert and update). */
function issuerParams(i: IdpIssuer): SqlParam[] {
  const { tenant_id, issuer, audiences, jwks_url, discovery_url, subject_claim, groups_claim } = i;
  return [
    ...[tenant_id, issuer, JSON.stringify(audiences), jwks_url, discovery_url],
    ...[subject_claim, groups_claim],
  ];
}

export async function insertIssuer(w: Write, i: IdpIssuer): Promise<boolean> {
  const count = await w.q.query<Row>('SELECT COUNT(*) AS n FROM idp_issuers WHERE tenant_id = $1', [
    i.tenant_id,
  ]);
  const ins = await w.q.query(
    `INSERT INTO idp_issuers (${COLUMNS}, created_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (tenant_id, issuer) DO NOTHING RETURNING issuer`,
    [...issuerParams(i), w.nowMs()],
  );
  if (ins.length === 0) {
    const existing = await findIssuer(w.q, i.tenant_id, i.issuer);
    if (existing && same(existing, i)) return false;
    throw new AlreadyExistsError(`issuer ${i.issuer} exists in ${i.tenant_id} with other settings`);
  }
  if (num(count[0]?.n ?? 0) >= IDP_ISSUERS_PER_TENANT_MAX)
    throw new AuthLimitError(`tenant ${i.tenant_id} has ${IDP_ISSUERS_PER_TENANT_MAX} issuers`);
  return true;
}

export class IssuerRepository {
  constructor(private readonly tx: Transactions) {}

  /** Adds an issuer; identical → `created: false`, different settings → AlreadyExistsError. */
  create(i: IdpIssuer): Promise<{ item: IdpIssuer; created: boolean }> {
    return this.tx.write(async (w) => {
      if (!(await findTenant(w.q, i.tenant_id)))
        throw new TenantNotFoundError(`tenant ${i.tenant_id} does not exist`);
      return { item: i, created: await insertIssuer(w, i) };
    });
  }

  /** Changes an existing issuer's settings (the route asks for more rights than adding one). */
  replace(i: IdpIssuer): Promise<IdpIssuer> {
    return this.tx.write(async (w) => {
      const upd = await w.q.query(
        `UPDATE idp_issuers SET audiences = $3, jwks_url = $4, discovery_url = $5,
           subject_claim = $6, groups_claim = $7
         WHERE tenant_id = $1 AND issuer = $2 RETURNING issuer`,
        issuerParams(i),
      );
      if (upd.length === 0)
        throw new IssuerNotFoundError(`tenant ${i.tenant_id} has no issuer ${i.issuer}`);
      return i;
    });
  }

  async get(tenant: string, issuer: string): Promise<IdpIssuer> {
    const found = await findIssuer(this.tx.driver, tenant, issuer);
    if (!found) throw new IssuerNotFoundError(`tenant ${tenant} has no issuer ${issuer}`);
    return found;
  }

  /** The tenant's issuers by name (bounded by IDP_ISSUERS_PER_TENANT_MAX). */
  async list(tenant: string): Promise<IdpIssuer[]> {
    const rows = await this.tx.driver.query<Row>(
      `SELECT ${COLUMNS} FROM idp_issuers WHERE tenant_id = $1 ORDER BY issuer LIMIT $2`,
      [tenant, IDP_ISSUERS_PER_TENANT_MAX],
    );
    return rows.map(issuerOf);
  }

  /** Deletes an issuer; IssuerNotFoundError when there was none. */
  delete(tenant: string, issuer: string): Promise<void> {
    return this.tx.write(async (w) => {
      const del = await w.q.query(
        'DELETE FROM idp_issuers WHERE tenant_id = $1 AND issuer = $2 RETURNING issuer',
        [tenant, issuer],
      );
      if (del.length === 0)
        throw new IssuerNotFoundError(`tenant ${tenant} has no issuer ${issuer}`);
    });
  }
}
