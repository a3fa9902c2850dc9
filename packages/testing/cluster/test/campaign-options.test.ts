// Goal: felix-campaign reads its options strictly: durations with units, comma lists of known
// nemeses and workloads, counts; anything else is a CampaignOptionError naming the option.
// Method: the option readers of src/campaign/options.ts called directly.
import { RULES, type Report } from '@felix/testing-history';
import { describe, expect, it } from 'vitest';
import { verdictLine } from '../src/campaign/run.js';
import {
  parseCount,
  parseDuration,
  parseNemeses,
  parseWorkloads,
} from '../src/campaign/options.js';
import { CampaignOptionError } from '../src/errors.js';

describe('felix-campaign options', () => {
  it('campaign_options_read_durations_lists_and_counts_and_name_what_is_wrong', () => {
    expect(parseDuration('60s')).toBe(60_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1500ms')).toBe(1_500);
    expect(parseDuration('45')).toBe(45_000);
    expect(() => parseDuration('soon')).toThrow(CampaignOptionError);
    expect(() => parseDuration('0s')).toThrow(/--duration/);
    expect(parseNemeses('kill, pause,kill')).toEqual(['kill', 'pause']);
    expect(parseNemeses('none')).toEqual([]);
    expect(() => parseNemeses('kill,flood')).toThrow(/--nemesis: unknown "flood"/);
    expect(parseWorkloads('streams,groups')).toEqual(['streams', 'groups']);
    expect(() => parseWorkloads('')).toThrow(/--workload/);
    expect(parseCount('--brokers', '3', 1)).toBe(3);
    expect(() => parseCount('--brokers', '0', 1)).toThrow(/--brokers/);
    expect(() => parseCount('--seed', '1.5', 0)).toThrow(CampaignOptionError);
  });
});

describe('felix-campaign verdict', () => {
  it('the_verdict_line_counts_every_violation_not_only_those_the_report_quotes', () => {
    // Found by a 3-broker run: the line said 609 where the report counted 5,912.
    const byRule = Object.fromEntries(RULES.map((r) => [r, 0])) as Report['byRule'];
    byRule['acked-publish-present'] = 300;
    byRule['offset-agreement'] = 12;
    const report: Report = {
      valid: false,
      violations: [{ rule: 'acked-publish-present', message: 'lost', lines: [] }],
      byRule,
      stats: {
        durationMs: 1_000,
        ops: { publish: { ok: 10, fail: 1, info: 2 } },
        okPerSecond: 10,
        faults: 3,
        redeliveries: 0,
        longestUnavailabilityMs: 5,
      },
    };
    const opts = { seed: 9, brokers: 3 } as Parameters<typeof verdictLine>[0];
    expect(verdictLine(opts, report)).toBe(
      'felix-campaign seed=9 brokers=3 ops=13 ok/s=10.0 faults=3 violations=312 ' +
        'longest_unavailability_ms=5 INVALID',
    );
  });
});
