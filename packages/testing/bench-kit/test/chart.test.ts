// Goal: the chart scales bars within their scenario, never across, and marks units where lower
// is better. Method: render two groups and read the bar widths and headings back from the SVG.
import { describe, expect, it } from 'vitest';
import { barChartSvg } from '../src/index.js';

const widths = (svg: string) =>
  [...svg.matchAll(/<rect x="150"[^>]* width="([\d.]+)"/g)].map((m) => Number(m[1]));

describe('bar chart', () => {
  it('bars_are_scaled_within_their_scenario_and_lower_is_better_is_said', () => {
    const svg = barChartSvg(
      [
        { group: 'throughput', label: 'NATS', value: 100, unit: 'msgs/s' },
        { group: 'throughput', label: 'Felix', value: 50, unit: 'msgs/s' },
        { group: 'latency', label: 'NATS', value: 2, unit: 'µs' },
        { group: 'latency', label: 'Felix', value: 4, unit: 'µs' },
      ],
      { heading: 'h', title: 't', colors: { Felix: '#d62728' } },
    );
    expect(widths(svg)).toEqual([430, 215, 215, 430]);
    expect(svg).toContain('throughput (msgs/s)</text>');
    expect(svg).toContain('latency (µs, lower is better)</text>');
    expect(svg.match(/fill="#d62728"/g)).toHaveLength(2);
    expect(svg.endsWith('</svg>\n')).toBe(true);
  });

  it('chart_text_is_escaped_so_a_label_cannot_break_the_svg', () => {
    const svg = barChartSvg([{ group: 'a<b', label: 'x&y', value: 1, unit: 'u' }], {
      heading: 'h',
      title: 't',
    });
    expect(svg).toContain('a&lt;b (u)');
    expect(svg).toContain('>x&amp;y<');
  });
});
