/**
 * The side-by-side table every bench prints: Markdown rows (pasted into docs/perf.md as they
 * are) and the padded progress lines shown while the rounds run.
 */
import { assert } from '@felix/common';

/** A column's title and alignment (numbers right, words left). */
export interface Column {
  title: string;
  align?: 'left' | 'right';
}

export interface TableOptions {
  /** Pad every cell to its column's widest, so the Markdown also reads as plain text. */
  aligned?: boolean;
}

/** A Markdown table of `rows` under `columns`; every row has one cell per column. */
export function markdownTable(
  columns: readonly (string | Column)[],
  rows: readonly (readonly string[])[],
  options: TableOptions = {},
): string {
  const cols = columns.map((c) => (typeof c === 'string' ? { title: c } : c));
  for (const row of rows) {
    assert(row.length === cols.length, `a row of ${row.length} cells under ${cols.length} columns`);
  }
  const right = cols.map((c) => c.align === 'right');
  const widths = cols.map((c, i) =>
    options.aligned ? Math.max(c.title.length, 4, ...rows.map((r) => r[i]!.length)) : 0,
  );
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  const rule = `| ${widths.map((w, i) => (right[i] ? `${'-'.repeat(Math.max(3, w - 1))}:` : '-'.repeat(Math.max(3, w)))).join(' | ')} |`;
  return [line(cols.map((c) => c.title)), rule, ...rows.map((r) => line(r))].join('\n');
}

/**
 * A progress line: each cell padded to its width (a negative width pads on the left, for
 * numbers; 0 leaves the cell as it is), the cells joined by one space.
 */
export function padCells(cells: readonly string[], widths: readonly number[]): string {
  return cells
    .map((c, i) => {
      const w = widths[i] ?? 0;
      return w < 0 ? c.padStart(-w) : c.padEnd(w);
    })
    .join(' ');
}
