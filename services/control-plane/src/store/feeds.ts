/**
 * The change feeds: appending a write's change rows (inside its transaction, just before commit)
 * and reading feeds back as snapshots and pages of changes. Sequence numbers come from the feed's
 * row in `feed_seq`, which stays locked until commit, so sequence order is commit order on both
 * engines.
 */
import { InternalError } from '../errors.js';
import { CHANGE_TRIM_STEP_ROWS, INSERT_BATCH_ROWS } from '../limits.js';
import {
  type Row,
  assignmentOf,
  cacheOf,
  namespaceOf,
  num,
  str,
  streamOf,
  tenantOf,
} from './rows.js';
import type { Sql, SqlDriver, SqlParam } from './sql.js';
import type { ChangeRecord, ChangesPage, FeedName, Snapshot } from './types.js';

/** One change row a write has collected and not yet appended. */
export interface PendingChange {
  feed: FeedName;
  op: string;
  key: Record<string, string | number>;
  payload: unknown;
}

/** A feed's snapshot: every row in key order (keyset order is the feed's item order). */
const SNAPSHOT_QUERIES: Record<FeedName, { sql: string; item: (r: Row) => unknown }> = {
  tenants: {
    sql: 'SELECT tenant_id, display_name FROM tenants ORDER BY tenant_id LIMIT $1',
    item: tenantOf,
  },
  namespaces: {
    sql: 'SELECT * FROM namespaces ORDER BY tenant_id, namespace LIMIT $1',
    item: namespaceOf,
  },
  streams: {
    sql: 'SELECT * FROM streams ORDER BY tenant_id, namespace, stream LIMIT $1',
    item: streamOf,
  },
  caches: {
    sql: 'SELECT * FROM caches ORDER BY tenant_id, namespace, cache LIMIT $1',
    item: cacheOf,
  },
  assignments: {
    sql: 'SELECT * FROM shard_assignments ORDER BY tenant_id, namespace, kind, name, shard LIMIT $1',
    item: assignmentOf,
  },
};

/**
 * Appends `changes` to their feeds and returns the feeds touched. Feeds are taken in a fixed
 * order so two writers touching several feeds never lock them in opposite orders.
 */
export async function appendChanges(
  q: Sql,
  changes: readonly PendingChange[],
  opts: { nowMs: number; retentionRows: number },
): Promise<FeedName[]> {
  const byFeed = new Map<FeedName, PendingChange[]>();
  for (const c of changes) {
    const list = byFeed.get(c.feed) ?? [];
    list.push(c);
    byFeed.set(c.feed, list);
  }
  const feeds = [...byFeed.keys()].sort();
  for (const feed of feeds) {
    const list = byFeed.get(feed)!;
    const rows = await q.query<{ last_seq: number }>(
      'UPDATE feed_seq SET last_seq = last_seq + $2 WHERE feed = $1 RETURNING last_seq',
      [feed, list.length],
    );
    const last = num(rows[0]?.last_seq);
    await insertChangeRows(q, feed, list, last - list.length + 1, opts.nowMs);
    // Trim only when the sequence crosses a multiple of the trim step: the kept history stays
    // within retention + step rows, and most writes skip the DELETE.
    const step = Math.min(CHANGE_TRIM_STEP_ROWS, opts.retentionRows);
    if (Math.floor(last / step) > Math.floor((last - list.length) / step)) {
      await q.query('DELETE FROM changes WHERE feed = $1 AND seq <= $2', [
        feed,
        last - opts.retentionRows,
      ]);
    }
  }
  return feeds;
}

/** Inserts one feed's rows from sequence `first` on, a bounded batch per statement. */
async function insertChangeRows(
  q: Sql,
  feed: FeedName,
  list: readonly PendingChange[],
  first: number,
  nowMs: number,
): Promise<void> {
  for (let i = 0; i < list.length; i += INSERT_BATCH_ROWS) {
    const chunk = list.slice(i, i + INSERT_BATCH_ROWS);
    const params: SqlParam[] = [];
    const values = chunk.map((c, j) => {
      const payload = c.payload === undefined ? null : JSON.stringify(c.payload);
      params.push(feed, first + i + j, c.op, JSON.stringify(c.key), payload, nowMs);
      const b = params.length - 6;
      return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6})`;
    });
    await q.query(
      `INSERT INTO changes (feed, seq, op, key, payload, ts_ms) VALUES ${values.join(', ')}`,
      params,
    );
  }
}

function changeOf(feed: FeedName, r: Row): ChangeRecord {
  const c: ChangeRecord = {
    seq: num(r.seq),
    op: str(r.op) as ChangeRecord['op'],
    key: JSON.parse(str(r.key)),
  };
  if (r.payload !== null && r.payload !== undefined) {
    const payload = JSON.parse(str(r.payload)) as unknown;
    if (feed === 'assignments') c.assignment = payload;
    else c.item = payload;
  }
  return c;
}

/** Reads the feeds: snapshots to start from and pages of changes to follow. */
export class FeedRepository {
  constructor(
    private readonly driver: SqlDriver,
    private readonly snapshotRowsMax: number,
  ) {}

  /** Every item of a feed plus the sequence to follow from, read at one consistent point. */
  snapshot(feed: FeedName): Promise<Snapshot> {
    return this.driver.tx(
      async (q) => {
        const seq = await q.query<Row>('SELECT last_seq FROM feed_seq WHERE feed = $1', [feed]);
        const next_seq = num(seq[0]?.last_seq) + 1;
        const { sql, item } = SNAPSHOT_QUERIES[feed];
        const items = (await q.query<Row>(sql, [this.snapshotRowsMax + 1])).map(item);
        if (items.length > this.snapshotRowsMax)
          throw new InternalError(`the ${feed} snapshot exceeds ${this.snapshotRowsMax} rows`);
        return { items, next_seq };
      },
      { snapshot: true },
    );
  }

  /**
   * Changes with `seq >= since`, oldest first, at most `limit`. The feed's high mark is read
   * first and only rows at or below it are returned, so a page never skips a row committed
   * while it was being read.
   */
  async changes(feed: FeedName, since: number, limit: number): Promise<ChangesPage> {
    const seq = await this.driver.query<Row>('SELECT last_seq FROM feed_seq WHERE feed = $1', [
      feed,
    ]);
    const last = num(seq[0]?.last_seq);
    if (since > last) return { items: [], next_seq: last + 1 };
    const rows = await this.driver.query<Row>(
      'SELECT seq, op, key, payload FROM changes WHERE feed = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq LIMIT $4',
      [feed, since, last, limit],
    );
    const items = rows.map((r) => changeOf(feed, r));
    const lastItem = items[items.length - 1];
    const next_seq = items.length === limit && lastItem ? lastItem.seq + 1 : last + 1;
    return { items, next_seq };
  }
}
