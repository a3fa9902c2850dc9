/**
 * Keyset paging shared by every list: rows ordered by their key columns, the page after a cursor
 * read as "key greater than the cursor's key", and one extra row fetched to know whether more
 * follow. No OFFSET, so a page costs the same wherever it starts.
 */
import { type CursorKey, cursorTag, decodeCursor, encodeCursor } from './cursor.js';
import type { Row } from './rows.js';
import type { Sql, SqlParam } from './sql.js';
import type { Page } from './types.js';

export interface PageQuery<T> {
  /** `SELECT ... FROM table`, without WHERE or ORDER BY. */
  select: string;
  /** Conditions on the fixed parameters, numbered from `$1`. */
  fixedWhere: string[];
  fixed: SqlParam[];
  /** The ordering key; the cursor holds its values for the last row returned. */
  keyCols: string[];
  shape: ('s' | 'n')[];
  limit: number;
  cursor: string | undefined;
  map: (r: Row) => T;
  keyOf: (r: Row) => CursorKey;
}

/** Runs one keyset page: the cursor's placeholders follow the fixed parameters. */
export async function page<T>(q: Sql, opts: PageQuery<T>): Promise<Page<T>> {
  const where = [...opts.fixedWhere];
  const params: SqlParam[] = [...opts.fixed];
  const tag = cursorTag(JSON.stringify([opts.select, opts.fixedWhere, opts.fixed]));
  if (opts.cursor !== undefined) {
    const key = decodeCursor(opts.cursor, opts.shape, tag);
    const ph = key.map((_, i) => `$${params.length + i + 1}`);
    params.push(...key);
    where.push(`(${opts.keyCols.join(', ')}) > (${ph.join(', ')})`);
  }
  params.push(opts.limit + 1);
  const whereSql = where.length ? ` WHERE ${where.join(' AND ')}` : '';
  const sql = `${opts.select}${whereSql} ORDER BY ${opts.keyCols.join(', ')} LIMIT $${params.length}`;
  const rows = await q.query<Row>(sql, params);
  const more = rows.length > opts.limit;
  const kept = more ? rows.slice(0, opts.limit) : rows;
  const last = kept[kept.length - 1];
  return {
    items: kept.map(opts.map),
    next_cursor: more && last ? encodeCursor(opts.keyOf(last), tag) : null,
  };
}
