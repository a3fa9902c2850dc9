// Goal: the kit's percentiles, medians and paired ratios are the figures the benches report.
// Method: small hand-checked sample sets, including the empty and even-length edge cases.
import { describe, expect, it } from 'vitest';
import { median, pairedRatios, percentile, windowPercentiles } from '../src/index.js';

describe('percentiles', () => {
  it('a_percentile_is_the_sample_at_rank_floor_p_percent_of_n', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100
    expect(percentile(sorted, 50)).toBe(51);
    expect(percentile(sorted, 99)).toBe(100);
    expect(percentile(sorted, 0)).toBe(1);
    expect(percentile([10, 20, 30], 50)).toBe(20);
  });

  it('the_hundredth_percentile_is_the_largest_sample', () => {
    expect(percentile([1, 2, 3, 4], 100)).toBe(4);
    expect(percentile(new Float64Array([0.5, 7.5]), 100)).toBe(7.5);
  });

  it('a_percentile_of_no_samples_is_nan', () => {
    expect(percentile([], 50)).toBeNaN();
  });

  it('a_median_of_an_even_count_is_the_mean_of_the_middle_two', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([9, 1, 5])).toBe(5);
    expect(median([])).toBeNaN();
  });

  it('paired_ratios_divide_round_by_round_and_take_the_median', () => {
    const r = pairedRatios([10, 30, 20, 99], [5, 10, 20]);
    expect(r.ratios).toEqual([2, 3, 1]);
    expect(r.median).toBe(2);
  });

  it('window_percentiles_follow_the_order_samples_were_taken_and_leave_out_a_short_tail', () => {
    const samples = [9, 1, 5, 40, 20, 30, 7];
    expect(windowPercentiles(samples, 3, 50)).toEqual([5, 30]);
    expect(windowPercentiles(samples, 8, 50)).toEqual([]);
    expect(windowPercentiles(samples, 0, 50)).toEqual([]);
  });
});
