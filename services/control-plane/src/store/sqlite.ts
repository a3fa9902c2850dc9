/**
 * The SQLite driver (better-sqlite3, WAL). better-sqlite3 is synchronous and one connection is
 * one writer, so all work runs one item at a time from a queue, and queued transactions share
 * one commit (group commit); statements are prepared once.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { StoreUnavailableError } from '../errors.js';
import { SQLITE_GROUP_COMMIT_MAX, SQLITE_STATEMENT_CACHE_MAX } from '../limits.js';
import { MIGRATIONS_TABLE } from './migrations.js';
import type { Migration, Sql, SqlDriver, SqlParam } from './sql.js';

interface TxJob {
  kind: 'tx';
  fn: (q: Sql) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}
interface StmtJob {
  kind: 'stmt';
  run: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}
type Job = TxJob | StmtJob;

interface Prepared {
  stmt: Database.Statement;
  order: number[];
}

export class SqliteDriver implements SqlDriver {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Prepared>();
  private readonly queue: Job[] = [];
  private pumping = false;
  private inTx = false;

  /** Opens (creating) the database file; `:memory:` works for throwaway use. */
  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    // FULL: a commit is on disk before it is acknowledged; a lost assignment write could hand one
    // generation to two owners after a power cut.
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
  }

  private prepare(text: string): Prepared {
    let p = this.statements.get(text);
    if (p) return p;
    // `$n` placeholders become positional `?`, remembering which parameter each one reads.
    const order: number[] = [];
    const converted = text.replace(/\$(\d+)/g, (_, n: string) => {
      order.push(Number(n) - 1);
      return '?';
    });
    p = { stmt: this.db.prepare(converted), order };
    if (this.statements.size >= SQLITE_STATEMENT_CACHE_MAX) this.statements.clear();
    this.statements.set(text, p);
    return p;
  }

  private run<T>(text: string, params: readonly SqlParam[] = []): T[] {
    const p = this.prepare(text);
    const args = p.order.map((i) => {
      const v = params[i];
      return v === undefined ? null : typeof v === 'boolean' ? (v ? 1 : 0) : v;
    });
    if (p.stmt.reader) return p.stmt.all(...args) as T[];
    p.stmt.run(...args);
    return [];
  }

  private enqueue<T>(
    job: Omit<TxJob, 'resolve' | 'reject'> | Omit<StmtJob, 'resolve' | 'reject'>,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ ...job, resolve, reject } as Job);
      void this.pump();
    });
  }

  /**
   * Runs queued work one item at a time. Consecutive transactions are committed as a group: each
   * runs inside its own SAVEPOINT (a failure rolls back only its own writes) and one COMMIT, one
   * fsync, covers them all; none is answered before that COMMIT returns.
   */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0) {
        const head = this.queue[0]!;
        if (head.kind === 'stmt') {
          this.queue.shift();
          try {
            head.resolve(head.run());
          } catch (err) {
            head.reject(err);
          }
          continue;
        }
        const group: TxJob[] = [];
        while (group.length < SQLITE_GROUP_COMMIT_MAX && this.queue[0]?.kind === 'tx') {
          group.push(this.queue.shift() as TxJob);
        }
        await this.runGroup(group);
        // Let I/O callbacks queue more work, so the next group can be larger than one.
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      this.pumping = false;
    }
  }

  private async runGroup(group: TxJob[]): Promise<void> {
    const q: Sql = { query: async (text, params) => this.run(text, params) };
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      for (const job of group) job.reject(err);
      return;
    }
    this.inTx = true;
    for (const job of group) {
      this.db.exec('SAVEPOINT felix_job');
      try {
        const value = await job.fn(q);
        this.db.exec('RELEASE felix_job');
        outcomes.push({ ok: true, value });
      } catch (error) {
        this.db.exec('ROLLBACK TO felix_job');
        this.db.exec('RELEASE felix_job');
        outcomes.push({ ok: false, error });
      }
    }
    this.inTx = false;
    try {
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      for (const job of group)
        job.reject(
          new StoreUnavailableError(`sqlite commit failed: ${String(err)}`, { cause: err }),
        );
      return;
    }
    group.forEach((job, i) => {
      const o = outcomes[i]!;
      if (o.ok) job.resolve(o.value);
      else job.reject(o.error);
    });
  }

  query<T>(text: string, params?: readonly SqlParam[]): Promise<T[]> {
    return this.enqueue({ kind: 'stmt', run: () => this.run<T>(text, params) });
  }

  queryRelaxed<T>(text: string, params?: readonly SqlParam[]): Promise<T[]> {
    return this.enqueue({
      kind: 'stmt',
      run: () => {
        // In WAL mode NORMAL skips the fsync at commit; the next FULL commit syncs these frames too.
        this.db.pragma('synchronous = NORMAL');
        try {
          return this.run<T>(text, params);
        } finally {
          this.db.pragma('synchronous = FULL');
        }
      },
    });
  }

  tx<T>(fn: (q: Sql) => Promise<T>): Promise<T> {
    return this.enqueue({ kind: 'tx', fn: fn as (q: Sql) => Promise<unknown> });
  }

  async lockPlacement(): Promise<void> {
    if (!this.inTx) throw new StoreUnavailableError('lockPlacement outside a transaction');
  }

  async migrate(migrations: readonly Migration[], appliedAtMs: number): Promise<number[]> {
    return this.tx(async (q) => {
      await q.query(MIGRATIONS_TABLE);
      const done = new Set(
        (await q.query<{ version: number }>('SELECT version FROM schema_migrations')).map((r) =>
          Number(r.version),
        ),
      );
      const applied: number[] = [];
      for (const m of migrations) {
        if (done.has(m.version)) continue;
        for (const s of m.statements) await q.query(s);
        await q.query(
          'INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES ($1, $2, $3)',
          [m.version, m.name, appliedAtMs],
        );
        applied.push(m.version);
      }
      return applied;
    });
  }

  async schemaVersion(): Promise<number> {
    const rows = await this.query<{ v: number | null }>(
      'SELECT MAX(version) AS v FROM schema_migrations',
    );
    return Number(rows[0]?.v ?? 0);
  }

  async onRemoteChange(): Promise<void> {
    // One process owns the file: every write is local and wakes waiters directly.
  }

  async announce(): Promise<void> {}

  async close(): Promise<void> {
    await this.enqueue({ kind: 'stmt', run: () => this.db.close() });
  }
}
