// Goal: the side-by-side table is valid Markdown with the columns' alignment, and progress lines
// pad as asked. Method: render small tables and compare with the exact expected text.
import { AssertionError } from '@felix/common';
import { describe, expect, it } from 'vitest';
import { markdownTable, padCells } from '../src/index.js';

describe('side-by-side table', () => {
  it('a_markdown_table_marks_right_aligned_columns_in_its_rule', () => {
    const t = markdownTable(
      ['scenario', { title: 'p50', align: 'right' }],
      [
        ['cache get', '71 µs'],
        ['cache put', '1,020 µs'],
      ],
    );
    expect(t).toBe(
      '| scenario | p50 |\n| --- | ---: |\n| cache get | 71 µs |\n| cache put | 1,020 µs |',
    );
  });

  it('an_aligned_table_pads_every_cell_to_its_widest_in_the_column', () => {
    const t = markdownTable(
      ['case', { title: 'MB/s', align: 'right' }],
      [
        ['copy', '9000'],
        ['binary decode', '12'],
      ],
      { aligned: true },
    );
    expect(t.split('\n')).toEqual([
      '| case          | MB/s |',
      '| ------------- | ---: |',
      '| copy          | 9000 |',
      '| binary decode |   12 |',
    ]);
  });

  it('a_row_with_the_wrong_number_of_cells_is_refused', () => {
    expect(() => markdownTable(['a', 'b'], [['only one']])).toThrow(AssertionError);
  });

  it('a_progress_line_pads_words_right_and_numbers_left', () => {
    expect(padCells(['get', 'Felix', '71', 'µs'], [6, 7, -5, 0])).toBe('get    Felix      71 µs');
  });
});
