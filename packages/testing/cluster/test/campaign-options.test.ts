// Goal: felix-campaign reads its options strictly: durations with units, comma lists of known
// nemeses and workloads, counts; anything else is a CampaignOptionError naming the option.
// Method: the option readers of src/campaign/options.ts called directly.
import { describe, expect, it } from 'vitest';
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
