/**
 * The transaction every repository shares. A write runs in one driver transaction with a `Write`
 * context that collects change rows and carries the injected clock; the rows are appended just
 * before commit, and local listeners hear of the feeds touched once the commit has happened.
 */
import { InternalError } from '../errors.js';
import { CASCADE_ROWS_MAX } from '../limits.js';
import { type PendingChange, appendChanges } from './feeds.js';
import type { Sql, SqlDriver } from './sql.js';
import type { Clock } from '../clock.js';
import type { FeedName } from './types.js';

/** A write in progress: its statements, its clock, and the change rows it has collected. */
export class Write {
  readonly changes: PendingChange[] = [];
  constructor(
    readonly q: Sql,
    private readonly clock: Clock,
  ) {}

  /** Wall-clock ms from the injected clock: every stamp a write stores comes from here. */
  nowMs(): number {
    return this.clock.nowMs();
  }

  change(
    feed: FeedName,
    op: string,
    key: Record<string, string | number>,
    payload?: unknown,
  ): void {
    if (this.changes.length >= CASCADE_ROWS_MAX)
      throw new InternalError('one write changed too many rows');
    this.changes.push({ feed, op, key, payload });
  }
}

/** Runs writes (one transaction each, change rows included) and tells listeners after commit. */
export class Transactions {
  private readonly listeners = new Set<(feeds: readonly FeedName[]) => void>();

  constructor(
    readonly driver: SqlDriver,
    readonly clock: Clock,
    private readonly retentionRows: number,
  ) {}

  /** Runs `fn` as one transaction; it commits with its change rows or rolls back whole. */
  async write<T>(fn: (w: Write) => Promise<T>): Promise<T> {
    let feeds: FeedName[] = [];
    const out = await this.driver.tx(async (q) => {
      const w = new Write(q, this.clock);
      const result = await fn(w);
      // NOTIFY is delivered at commit wherever it stands, so it goes before the sequence rows
      // are locked: the locks are then held for as little as possible.
      const touched = [...new Set(w.changes.map((c) => c.feed))].sort();
      if (touched.length) await this.driver.announce(q, touched);
      feeds = await appendChanges(q, w.changes, {
        nowMs: this.clock.nowMs(),
        retentionRows: this.retentionRows,
      });
      return result;
    });
    this.emit(feeds);
    return out;
  }

  /** Subscribes to committed local writes (and, on Postgres, other instances' writes). */
  onChange(fn: (feeds: readonly FeedName[]) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Starts listening for other instances' commits (Postgres NOTIFY). */
  async listenRemote(): Promise<void> {
    await this.driver.onRemoteChange((feed) => this.emit([feed as FeedName]));
  }

  private emit(feeds: readonly FeedName[]): void {
    if (feeds.length === 0) return;
    for (const fn of this.listeners) fn(feeds);
  }
}
