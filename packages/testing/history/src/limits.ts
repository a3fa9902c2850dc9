/** Bounds of the history checker: every input size, set and report it keeps is capped here. */

/** Longest accepted history line; a final read of a whole shard is the largest line. */
export const HISTORY_LINE_BYTES_MAX = 8 * 1024 * 1024;
/** Largest accepted history file (under V8's longest string); campaigns stay far below it. */
export const HISTORY_BYTES_MAX = 256 * 1024 * 1024;
/** Most lines a history may have (bounds every per-line map the checker builds). */
export const HISTORY_LINES_MAX = 5_000_000;
/** Widest range of sums (lowest to highest subset sum) the counter rule searches for one key. */
export const COUNTER_SUM_RANGE_MAX = 1_000_000;
/** Most cells (range width times distinct unknown deltas) the counter rule visits for one key. */
export const COUNTER_SEARCH_CELLS_MAX = 50_000_000;
/** Violations kept per rule in a report; the count in byRule goes on past it. */
export const VIOLATIONS_PER_RULE_MAX = 200;
/** Lines a violation quotes. */
export const VIOLATION_LINES_MAX = 4;
/** Violations renderText prints per rule. */
export const TEXT_VIOLATIONS_PER_RULE_SHOWN = 5;
/** Characters of one quoted line renderText prints before cutting it. */
export const TEXT_LINE_CHARS_MAX = 240;
/** Operations a timeline row draws one by one; past it the row is drawn as buckets. */
export const SVG_OPS_PER_ROW_MAX = 400;
/** Buckets of an aggregated timeline row. */
export const SVG_BUCKETS_PER_ROW = 200;
/** Rows (processes) a timeline draws; the rest are summed up in one line of text. */
export const SVG_ROWS_MAX = 64;
/** Fault intervals a timeline shades. */
export const SVG_FAULTS_MAX = 200;
/** Violating operations a timeline marks in red. */
export const SVG_MARKS_MAX = 400;
/** Width of the timeline's plotting area. */
export const SVG_PLOT_WIDTH_PX = 1200;
/** Height of one timeline row. */
export const SVG_ROW_HEIGHT_PX = 18;
