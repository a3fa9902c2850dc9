/**
 * The narrow SQL surface the store is written against. SQL text uses `$1..$n` placeholders and
 * types both engines accept (TEXT, BIGINT), so one store implementation runs on both.
 */

export type SqlParam = string | number | boolean | null | undefined;

export interface Sql {
  /** Runs one statement and returns its rows (empty for statements without rows). */
  query<T = Record<string, unknown>>(text: string, params?: readonly SqlParam[]): Promise<T[]>;
}

export interface TxOptions {
  /** A consistent read of several statements (REPEATABLE READ on Postgres). */
  snapshot?: boolean;
}

export interface SqlDriver extends Sql {
  readonly kind: 'sqlite' | 'postgres';
  /**
   * Runs one statement whose commit need not reach the disk before it is answered (heartbeat
   * stamps: a stamp lost to a power cut only delays a down-marking, which restarts its window
   * on startup anyway). Everything else commits durably.
   */
  queryRelaxed<T = Record<string, unknown>>(
    text: string,
    params?: readonly SqlParam[],
  ): Promise<T[]>;
  /** Runs `fn` in one transaction; it commits when `fn` resolves and rolls back when it throws. */
  tx<T>(fn: (q: Sql) => Promise<T>, opts?: TxOptions): Promise<T>;
  /**
   * Inside a write transaction: serialises placement passes across every process sharing the
   * database (an advisory transaction lock on Postgres; SQLite is single-writer already).
   */
  lockPlacement(q: Sql): Promise<void>;
  /**
   * Applies the migrations not yet applied, once, even when several instances start together;
   * each is recorded as applied at `appliedAtMs` (the store's clock).
   */
  migrate(migrations: readonly Migration[], appliedAtMs: number): Promise<number[]>;
  /** Highest applied migration version (0 when none). */
  schemaVersion(): Promise<number>;
  /** Calls `fn` with a feed name whenever another process commits a change to it. */
  onRemoteChange(fn: (feed: string) => void): Promise<void>;
  /** Tells other processes that `feeds` changed; called inside the writing transaction. */
  announce(q: Sql, feeds: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

export interface Migration {
  version: number;
  name: string;
  statements: readonly string[];
}
