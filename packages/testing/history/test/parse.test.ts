// Goal: parseHistory and readHistory accept what a recorder writes, refuse oversized or
// malformed input with the package's typed errors naming the line, and never throw anything
// else. Method: hand-built lines, one oversized line, a missing file, and fast-check over
// arbitrary strings and over lines mutated from a real history.
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkText,
  HISTORY_LINE_BYTES_MAX,
  HistoryError,
  HistoryLineMalformedError,
  HistoryLineTooLongError,
  HistoryReadError,
  parseHistory,
  readHistory,
} from '../src/index.js';
import { brokenRules, history } from './support/builder.js';

function sample() {
  const h = history({ caches: ['c'], counters: ['n'] });
  h.publish('pub-0', 's', 'a').ok(0, 0);
  h.cachePut('cache-0', 'c', 'k', 'v').ok();
  h.counterAdd('counter-0', 'n', 'k', 3).info();
  h.finalRead('s', 0, 0, ['a']);
  return h;
}

describe('parseHistory', () => {
  it('parse_history_reads_back_the_lines_a_recorder_wrote', () => {
    const h = sample();
    expect(parseHistory(h.text())).toEqual(h.lines);
  });

  it('parse_history_refuses_an_oversized_line_with_its_typed_error', () => {
    const big = JSON.stringify({ f: 'meta', pad: 'x'.repeat(HISTORY_LINE_BYTES_MAX) });
    const text = `${sample().text()}${big}\n`;
    let thrown: unknown;
    try {
      parseHistory(text);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(HistoryLineTooLongError);
    expect((thrown as HistoryLineTooLongError).code).toBe('FELIX_HISTORY_LINE_TOO_LONG');
    expect((thrown as HistoryLineTooLongError).lineNumber).toBe(sample().lines.length + 1);
  });

  it('parse_history_names_the_line_that_is_not_a_history_line', () => {
    const text = `${sample().text()}{"f":"publish","t":9,"process":"p","phase":"ok","id":"x"}\n`;
    expect(() => parseHistory(text)).toThrow(HistoryLineMalformedError);
    expect(() => parseHistory(text)).toThrow(/line 9 is malformed: field "shard"/);
    expect(() => parseHistory('{"f":\n')).toThrow(/line 1 is malformed: not JSON/);
  });

  it('check_text_reports_a_bad_line_as_malformed_history_naming_it', () => {
    const report = checkText(`${sample().text()}not json\n`);
    expect(report.valid).toBe(false);
    expect(brokenRules(report)).toEqual(['malformed-history']);
    expect(report.violations[0]?.message).toMatch(/line 9 is malformed: not JSON/);
  });

  it('parse_history_throws_only_its_typed_errors_on_arbitrary_text', () => {
    const lines = sample().text().split('\n');
    const mutated = fc
      .tuple(fc.nat(lines.length - 1), fc.nat(200), fc.string({ maxLength: 8 }))
      .map(([i, at, junk]) => {
        const copy = [...lines];
        const line = copy[i] ?? '';
        copy[i] = line.slice(0, at) + junk + line.slice(at + junk.length);
        return copy.join('\n');
      });
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json(), mutated), (text) => {
        try {
          parseHistory(text);
        } catch (err) {
          if (!(err instanceof HistoryError)) throw err;
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('readHistory', () => {
  it('read_history_parses_a_file_and_names_a_missing_one_with_its_typed_error', async () => {
    const path = join(tmpdir(), `felix-history-${process.pid}.jsonl`);
    await writeFile(path, sample().text());
    expect(await readHistory(path)).toEqual(sample().lines);
    await expect(readHistory(`${path}.missing`)).rejects.toBeInstanceOf(HistoryReadError);
  });
});
