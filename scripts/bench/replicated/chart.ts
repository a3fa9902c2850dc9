/**
 * The failover chart: every publish of each system as a dot at (time since the kill, its
 * latency), latency on a log scale so a 1 ms ack and a 5 s stall show on one chart; refused
 * publishes are drawn as crosses at their time to the refusal.
 */

export interface TimelinePoint {
  /** When the publish was sent, ms relative to the SIGKILL. */
  atMs: number;
  latencyMs: number;
  ok: boolean;
}

export interface TimelineSeries {
  label: string;
  points: readonly TimelinePoint[];
}

const WIDTH = 760;
const HEIGHT = 300;
const LEFT = 60;
const RIGHT = 20;
const TOP = 40;
const BOTTOM = 50;
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];
/** Latencies below this draw at the axis floor (the log scale needs a positive floor). */
const FLOOR_MS = 0.1;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function timelineSvg(series: readonly TimelineSeries[], heading: string): string {
  const all = series.flatMap((s) => s.points);
  const t0 = Math.min(0, ...all.map((p) => p.atMs));
  const t1 = Math.max(1, ...all.map((p) => p.atMs));
  const lMax = Math.max(10, ...all.map((p) => p.latencyMs));
  const lo = Math.log10(FLOOR_MS);
  const hi = Math.log10(lMax);
  const x = (t: number) => LEFT + ((t - t0) / (t1 - t0)) * (WIDTH - LEFT - RIGHT);
  const y = (ms: number) =>
    HEIGHT -
    BOTTOM -
    ((Math.log10(Math.max(FLOOR_MS, ms)) - lo) / (hi - lo)) * (HEIGHT - TOP - BOTTOM);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" font-family="sans-serif" font-size="11">`,
    `<title>${esc(heading)}</title>`,
    `<text x="${LEFT}" y="18" font-size="13">${esc(heading)}</text>`,
    `<line x1="${x(0)}" y1="${TOP}" x2="${x(0)}" y2="${HEIGHT - BOTTOM}" stroke="#888" stroke-dasharray="4 3"/>`,
    `<text x="${x(0) + 4}" y="${TOP + 10}" fill="#555">SIGKILL</text>`,
  ];
  for (let d = Math.ceil(lo); d <= Math.floor(hi); d++) {
    const ms = 10 ** d;
    out.push(
      `<line x1="${LEFT}" y1="${y(ms)}" x2="${WIDTH - RIGHT}" y2="${y(ms)}" stroke="#eee"/>`,
      `<text x="${LEFT - 6}" y="${y(ms) + 4}" text-anchor="end">${ms >= 1 ? ms : ms.toFixed(1)} ms</text>`,
    );
  }
  const step = niceStep((t1 - t0) / 8);
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step)
    out.push(
      `<text x="${x(t)}" y="${HEIGHT - BOTTOM + 16}" text-anchor="middle">${(t / 1000).toFixed(1)} s</text>`,
    );
  for (const [i, s] of series.entries()) {
    const c = COLORS[i % COLORS.length]!;
    for (const p of s.points) {
      const px = x(p.atMs).toFixed(1);
      const py = y(p.latencyMs).toFixed(1);
      out.push(
        p.ok
          ? `<circle cx="${px}" cy="${py}" r="1.5" fill="${c}"/>`
          : `<text x="${px}" y="${py}" fill="${c}" text-anchor="middle">×</text>`,
      );
    }
    out.push(
      `<rect x="${LEFT + i * 300}" y="${HEIGHT - 18}" width="10" height="10" fill="${c}"/>`,
      `<text x="${LEFT + i * 300 + 14}" y="${HEIGHT - 9}">${esc(s.label)}</text>`,
    );
  }
  out.push('</svg>', '');
  return out.join('\n');
}

function niceStep(raw: number): number {
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}
