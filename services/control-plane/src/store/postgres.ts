/**
 * The Postgres driver (pg). Migrations run under a session advisory lock so concurrent starts
 * apply each version once; placement passes take a transaction advisory lock; writes announce
 * their feeds with NOTIFY so long polls on other instances wake at once.
 */
import pg from 'pg';
import { StoreUnavailableError } from '../errors.js';
import { MIGRATIONS_TABLE } from './migrations.js';
import type { Migration, Sql, SqlDriver, SqlParam, TxOptions } from './sql.js';

const CHANNEL = 'felix_controlplane_feed';
const INT8_OID = 20;

const types = {
  getTypeParser(oid: number, format?: string) {
    // BIGINT columns hold safe integers (ms timestamps, sequence numbers, counts).
    if (oid === INT8_OID) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

export interface PostgresOptions {
  url: string;
  /** Schema to create and use (search_path); default `public`. */
  schema?: string | undefined;
  maxConnections: number;
  connectTimeoutMs: number;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function unavailable(err: unknown): never {
  if (
    err instanceof Error &&
    'code' in err &&
    typeof err.code === 'string' &&
    /^(08|57P|53)/.test(err.code)
  ) {
    throw new StoreUnavailableError(`postgres: ${err.message}`, { cause: err });
  }
  if (err instanceof Error && /ECONNREFUSED|ECONNRESET|timeout|terminated/i.test(err.message)) {
    throw new StoreUnavailableError(`postgres: ${err.message}`, { cause: err });
  }
  throw err;
}

export class PostgresDriver implements SqlDriver {
  readonly kind = 'postgres' as const;
  readonly schema: string;
  private readonly pool: pg.Pool;
  /** Sessions with synchronous_commit off, for statements that need not wait for the WAL flush. */
  private readonly relaxedPool: pg.Pool;
  private readonly opts: PostgresOptions;
  private listener: pg.Client | undefined;

  constructor(opts: PostgresOptions) {
    this.opts = opts;
    this.schema = opts.schema ?? 'public';
    this.pool = new pg.Pool(this.clientConfig(opts.maxConnections));
    this.relaxedPool = new pg.Pool(this.clientConfig(opts.maxConnections, 'off'));
    for (const p of [this.pool, this.relaxedPool]) {
      p.on('error', () => {
        // An idle client died (server restart); the pool replaces it on the next checkout.
      });
    }
  }

  private clientConfig(max?: number, synchronousCommit = 'on'): pg.PoolConfig {
    return {
      connectionString: this.opts.url,
      max,
      connectionTimeoutMillis: this.opts.connectTimeoutMs,
      options: `-c search_path=${quoteIdent(this.schema)} -c synchronous_commit=${synchronousCommit}`,
      types,
    };
  }

  async query<T>(text: string, params: readonly SqlParam[] = []): Promise<T[]> {
    try {
      const r = await this.pool.query(text, params as unknown[]);
      return r.rows as T[];
    } catch (err) {
      return unavailable(err);
    }
  }

  async queryRelaxed<T>(text: string, params: readonly SqlParam[] = []): Promise<T[]> {
    try {
      const r = await this.relaxedPool.query(text, params as unknown[]);
      return r.rows as T[];
    } catch (err) {
      return unavailable(err);
    }
  }

  async tx<T>(fn: (q: Sql) => Promise<T>, opts: TxOptions = {}): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      return unavailable(err);
    }
    const q: Sql = {
      query: async <R>(text: string, params: readonly SqlParam[] = []) =>
        (await client.query(text, params as unknown[])).rows as R[],
    };
    try {
      await client.query(
        opts.snapshot ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN',
      );
      const out = await fn(q);
      await client.query('COMMIT');
      client.release();
      return out;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
        client.release();
      } catch (rollbackErr) {
        client.release(rollbackErr as Error);
      }
      return unavailable(err);
    }
  }

  async lockPlacement(q: Sql): Promise<void> {
    await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
      `felix-controlplane-placement:${this.schema}`,
    ]);
  }

  async migrate(migrations: readonly Migration[], appliedAtMs: number): Promise<number[]> {
    const client = new pg.Client({ ...this.clientConfig(), types });
    try {
      await client.connect();
    } catch (err) {
      return unavailable(err);
    }
    const applied: number[] = [];
    try {
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [
        `felix-controlplane-migrate:${this.schema}`,
      ]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(this.schema)}`);
      await client.query(MIGRATIONS_TABLE);
      const done = new Set(
        (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map(
          (r) => Number(r.version),
        ),
      );
      for (const m of migrations) {
        if (done.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          for (const s of m.statements) await client.query(s);
          await client.query(
            'INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES ($1, $2, $3)',
            [m.version, m.name, appliedAtMs],
          );
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw err;
        }
        applied.push(m.version);
      }
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [
        `felix-controlplane-migrate:${this.schema}`,
      ]);
    } finally {
      await client.end();
    }
    return applied;
  }

  async schemaVersion(): Promise<number> {
    const rows = await this.query<{ v: number | null }>(
      'SELECT MAX(version) AS v FROM schema_migrations',
    );
    return Number(rows[0]?.v ?? 0);
  }

  async onRemoteChange(fn: (feed: string) => void): Promise<void> {
    const client = new pg.Client(this.clientConfig());
    client.on('error', () => {
      // Lost LISTEN connection: long polls fall back to their periodic re-read.
      this.listener = undefined;
    });
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    const prefix = `${this.schema}:`;
    client.on('notification', (n) => {
      if (n.payload?.startsWith(prefix)) fn(n.payload.slice(prefix.length));
    });
    this.listener = client;
  }

  async announce(q: Sql, feeds: readonly string[]): Promise<void> {
    if (feeds.length === 0) return;
    const calls = feeds.map((_, i) => `pg_notify($1, $${i + 2})`).join(', ');
    await q.query(`SELECT ${calls}`, [CHANNEL, ...feeds.map((f) => `${this.schema}:${f}`)]);
  }

  /** Drops the schema (tests use one schema per run). */
  async dropSchema(): Promise<void> {
    await this.query(`DROP SCHEMA IF EXISTS ${quoteIdent(this.schema)} CASCADE`);
  }

  async close(): Promise<void> {
    const l = this.listener;
    this.listener = undefined;
    // A listener whose connection already broke has nothing left to end; the pools still must.
    if (l) await l.end().catch(() => undefined);
    await this.pool.end();
    await this.relaxedPool.end();
  }
}
