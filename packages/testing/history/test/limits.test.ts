// Goal: the checker's bounds agree with each other and its errors keep their stable codes.
// Method: compare the constants of limits.ts; build each error class and read its code.
import { describe, expect, it } from 'vitest';
import {
  HISTORY_BYTES_MAX,
  HISTORY_LINE_BYTES_MAX,
  HistoryError,
  HistoryLineMalformedError,
  HistoryLineTooLongError,
  HistoryReadError,
  HistoryTooLargeError,
  SVG_BUCKETS_PER_ROW,
  SVG_OPS_PER_ROW_MAX,
  TEXT_VIOLATIONS_PER_RULE_SHOWN,
  VIOLATION_LINES_MAX,
  VIOLATIONS_PER_RULE_MAX,
} from '../src/index.js';

describe('history limits and errors', () => {
  it('the_history_bounds_agree_with_each_other', () => {
    expect(HISTORY_LINE_BYTES_MAX).toBeLessThan(HISTORY_BYTES_MAX);
    expect(SVG_BUCKETS_PER_ROW).toBeLessThanOrEqual(SVG_OPS_PER_ROW_MAX);
    expect(TEXT_VIOLATIONS_PER_RULE_SHOWN).toBeLessThanOrEqual(VIOLATIONS_PER_RULE_MAX);
    expect(VIOLATION_LINES_MAX).toBeGreaterThanOrEqual(2);
  });

  it('every_history_error_has_its_stable_code_and_name', () => {
    const errors = [
      new HistoryLineTooLongError(3, 10, 5),
      new HistoryTooLargeError(10, 5, 'bytes'),
      new HistoryLineMalformedError(4, 'not JSON'),
      new HistoryReadError('/nowhere'),
    ];
    expect(errors.map((e) => [e.name, e.code])).toEqual([
      ['HistoryLineTooLongError', 'FELIX_HISTORY_LINE_TOO_LONG'],
      ['HistoryTooLargeError', 'FELIX_HISTORY_TOO_LARGE'],
      ['HistoryLineMalformedError', 'FELIX_HISTORY_LINE_MALFORMED'],
      ['HistoryReadError', 'FELIX_HISTORY_READ_FAILED'],
    ]);
    for (const e of errors) expect(e).toBeInstanceOf(HistoryError);
  });
});
