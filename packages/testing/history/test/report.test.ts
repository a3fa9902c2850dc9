// Goal: the text report opens with its verdict and the SVG timeline marks violating operations
// in red, shades faults with their names and stays bounded; the stats measure what they say.
// Method: small built histories, one valid and one broken, rendered and searched; the counter
// rule's subset search is compared with brute force over generated deltas.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  COUNTER_SUM_RANGE_MAX,
  check,
  renderSvg,
  renderText,
  SVG_BUCKETS_PER_ROW,
} from '../src/index.js';
import { subsetSumReaches } from '../src/rules/counter-sum.js';
import { brokenRules, history, verdictOf } from './support/builder.js';

function brokenWithFault() {
  const h = history();
  h.at(10).publish('pub-0', 's', 'a').ok(0, 0);
  h.at(20).nemesis('kill', 'broker-0');
  h.at(25).publish('pub-0', 's', 'b').info();
  h.at(40).nemesis('restart', 'broker-0');
  h.at(50).publish('pub-0', 's', 'c').ok(0, 1);
  h.at(60).finalRead('s', 0, 0, ['a']);
  return h;
}

describe('reports', () => {
  it('render_text_puts_the_verdict_on_its_first_line', () => {
    const broken = brokenWithFault();
    const text = renderText(verdictOf(broken));
    expect(text.split('\n')[0]).toBe('INVALID: 1 violation (acked-publish-present 1)');
    expect(text).toMatch(/acked-publish-present: 1\n {2}- acknowledged value c/);
    const fine = history();
    fine.publish('pub-0', 's', 'a').ok(0, 0);
    fine.finalRead('s', 0, 0, ['a']);
    expect(renderText(verdictOf(fine)).split('\n')[0]).toBe('VALID: 1 ops, 0 violations');
  });

  it('render_svg_marks_the_violating_operations_and_shades_faults', () => {
    const broken = brokenWithFault();
    const svg = renderSvg(broken.lines, verdictOf(broken));
    expect(svg.startsWith('<svg ')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    const marks = svg.match(/class="violation"[^>]*><title>([^<]*)</g) ?? [];
    expect(marks.some((m) => m.includes('publish pub-0:3: ok'))).toBe(true);
    expect(svg).toMatch(/<g class="fault"><rect [^>]*><title>kill broker-0<\/title>/);
    const fine = history();
    fine.publish('pub-0', 's', 'a').ok(0, 0);
    fine.finalRead('s', 0, 0, ['a']);
    expect(renderSvg(fine.lines, verdictOf(fine))).not.toMatch(/class="violation"/);
  });

  it('render_svg_draws_a_crowded_row_as_buckets', () => {
    const h = history();
    const values: string[] = [];
    for (let i = 0; i < 2000; i++) {
      values.push(`v${i}`);
      h.publish('pub-0', 's', `v${i}`).ok(0, i);
    }
    h.finalRead('s', 0, 0, values);
    const svg = renderSvg(h.lines, check(h.lines));
    const buckets = svg.match(/class="bucket"/g) ?? [];
    expect(buckets.length).toBeGreaterThan(0);
    expect(buckets.length).toBeLessThanOrEqual(SVG_BUCKETS_PER_ROW);
    expect(svg.length).toBeLessThan(200_000);
  });

  it('the_longest_unavailability_runs_from_a_kill_to_the_next_ok_publish', () => {
    const report = verdictOf(brokenWithFault());
    expect(report.stats.faults).toBe(2);
    expect(report.stats.longestUnavailabilityMs).toBe(51 - 20);
    expect(report.stats.ops.publish).toEqual({ ok: 2, fail: 0, info: 1 });
    expect(report.stats.durationMs).toBe(60);
  });

  it('a_counter_with_too_many_unknown_adds_is_reported_unjudged_not_hung', () => {
    const h = history({ counters: ['n'] });
    const adds = Math.ceil(Math.log2(COUNTER_SUM_RANGE_MAX)) + 1;
    for (let i = 0; i < adds; i++) h.counterAdd('counter-0', 'n', 'k', 2 ** i).info();
    h.counterFinal('n', 'k', 3);
    const report = verdictOf(h);
    expect(brokenRules(report)).toEqual(['malformed-history']);
    expect(report.violations[0]?.message).toMatch(/counter n key k not judged/);
  });
});

describe('the counter search', () => {
  it('the_counter_subset_search_agrees_with_brute_force', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -6, max: 9 }), { maxLength: 10 }),
        fc.integer({ min: -40, max: 60 }),
        (deltas, target) => {
          let brute = false;
          for (let mask = 0; mask < 1 << deltas.length && !brute; mask++) {
            const sum = deltas.reduce((s, d, i) => (mask & (1 << i) ? s + d : s), 0);
            brute = sum === target;
          }
          expect(subsetSumReaches(deltas, target)).toBe(brute ? 'yes' : 'no');
        },
      ),
      { numRuns: 500 },
    );
  });
});
