/**
 * The chart a bench writes beside its results: horizontal bars, one group per scenario, each
 * bar scaled within its group (systems compare within a scenario, never across), as SVG text.
 */

/** One bar: a system's result in one scenario. */
export interface ChartBar {
  /** The scenario: bars of one group share a heading and a scale. */
  group: string;
  /** The system, written left of its bar. */
  label: string;
  value: number;
  unit: string;
}

export interface ChartOptions {
  /** The line at the top of the chart. */
  heading: string;
  /** The SVG's <title>. */
  title: string;
  /** Bar colour per label; others get `otherColor`. */
  colors?: Readonly<Record<string, string>>;
  otherColor?: string;
  /** How a value is written after its bar. */
  format?: (value: number) => string;
  /** Units where a smaller value is the better one; their headings say so. */
  lowerIsBetter?: readonly string[];
}

const WIDTH = 760;
const BAR_HEIGHT = 14;
/** Where bars start, and how much of the width labels and value texts keep. */
const BAR_X = 150;
const BAR_MARGIN = 330;

const xmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The SVG text of `bars`, groups in their first appearance's order. */
export function barChartSvg(bars: readonly ChartBar[], options: ChartOptions): string {
  const format = options.format ?? String;
  const lower = new Set(options.lowerIsBetter ?? ['µs']);
  const groups = [...new Set(bars.map((b) => b.group))];
  let y = 40;
  let body = '';
  for (const g of groups) {
    const rs = bars.filter((b) => b.group === g);
    const max = Math.max(...rs.map((r) => r.value));
    const unit = rs[0]!.unit;
    body += `<text x="10" y="${y}" font-weight="bold">${xmlText(g)} (${xmlText(unit)}${lower.has(unit) ? ', lower is better' : ''})</text>`;
    y += 6;
    for (const r of rs) {
      const w = Math.max(1, ((WIDTH - BAR_MARGIN) * r.value) / max);
      const color = options.colors?.[r.label] ?? options.otherColor ?? '#2ca02c';
      body += `<text x="20" y="${y + 11}">${xmlText(r.label)}</text><rect x="${BAR_X}" y="${y}" width="${w.toFixed(1)}" height="${BAR_HEIGHT}" fill="${color}"/><text x="${(BAR_X + 5 + w).toFixed(1)}" y="${y + 11}">${xmlText(format(r.value))}</text>`;
      y += BAR_HEIGHT + 3;
    }
    y += 18;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${y}" font-family="sans-serif" font-size="11"><title>${xmlText(options.title)}</title><rect width="${WIDTH}" height="${y}" fill="white"/><text x="10" y="20" font-size="14">${xmlText(options.heading)}</text>${body}</svg>\n`;
}
