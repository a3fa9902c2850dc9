/**
 * RSS over time as SVG text: one line per series, each phase a shaded band with its name, and
 * the baseline and the pass bound as dashed lines. (The bench kit's chart draws bars only.)
 */
import type { Sample } from './sampler.js';

export interface PhaseSpan {
  name: string;
  start: number;
  end: number;
  pass: boolean | null;
}

const W = 900;
const H = 360;
const LEFT = 60;
const RIGHT = 20;
const TOP = 50;
const BOTTOM = 40;
const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

interface Scale {
  x(t: number): number;
  y(v: number): number;
  tMax: number;
  vMax: number;
}

function scale(samples: readonly Sample[], floor: number): Scale {
  const tMax = Math.max(1, ...samples.map((s) => s.t));
  const vMax = Math.max(floor, ...samples.map((s) => s.rssMiB)) * 1.1;
  return {
    tMax,
    vMax,
    x: (t) => LEFT + ((W - LEFT - RIGHT) * t) / tMax,
    y: (v) => TOP + (H - TOP - BOTTOM) * (1 - v / vMax),
  };
}

function line(
  samples: readonly Sample[],
  sc: Scale,
  pick: (s: Sample) => number | null,
  color: string,
): string {
  const pts = samples
    .filter((s) => pick(s) !== null)
    .map((s) => `${sc.x(s.t).toFixed(1)},${sc.y(pick(s)!).toFixed(1)}`);
  return `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${pts.join(' ')}"/>`;
}

function bands(phases: readonly PhaseSpan[], sc: Scale): string {
  return phases
    .map((p, i) => {
      const x0 = sc.x(p.start);
      const w = Math.max(1, sc.x(p.end) - x0);
      const fill = i % 2 === 0 ? '#f0f0f0' : '#e4e4f4';
      const mark = p.pass === null ? '' : p.pass ? ' ✓' : ' ✗';
      return `<rect x="${x0.toFixed(1)}" y="${TOP}" width="${w.toFixed(1)}" height="${H - TOP - BOTTOM}" fill="${fill}"/><text x="${(x0 + 3).toFixed(1)}" y="${TOP + 12 + (i % 2) * 12}" font-size="10">${xml(p.name + mark)}</text>`;
    })
    .join('');
}

function axes(sc: Scale): string {
  let s = `<line x1="${LEFT}" y1="${H - BOTTOM}" x2="${W - RIGHT}" y2="${H - BOTTOM}" stroke="black"/><line x1="${LEFT}" y1="${TOP}" x2="${LEFT}" y2="${H - BOTTOM}" stroke="black"/>`;
  const vStep = sc.vMax > 400 ? 100 : sc.vMax > 150 ? 50 : 20;
  for (let v = 0; v <= sc.vMax; v += vStep) {
    s += `<text x="${LEFT - 5}" y="${(sc.y(v) + 4).toFixed(1)}" text-anchor="end">${v}</text>`;
  }
  const tStep = sc.tMax > 900 ? 120 : sc.tMax > 300 ? 60 : 30;
  for (let t = 0; t <= sc.tMax; t += tStep) {
    s += `<text x="${sc.x(t).toFixed(1)}" y="${H - BOTTOM + 15}" text-anchor="middle">${t}</text>`;
  }
  return `${s}<text x="${W / 2}" y="${H - 8}" text-anchor="middle">seconds</text><text x="14" y="${TOP - 8}">MiB</text>`;
}

function hline(v: number, sc: Scale, color: string, label: string): string {
  const y = sc.y(v).toFixed(1);
  return `<line x1="${LEFT}" y1="${y}" x2="${W - RIGHT}" y2="${y}" stroke="${color}" stroke-dasharray="4 3"/><text x="${W - RIGHT - 2}" y="${Number(y) - 3}" text-anchor="end" fill="${color}">${xml(label)}</text>`;
}

/** The chart of a soak run. */
export function rssChartSvg(
  samples: readonly Sample[],
  phases: readonly PhaseSpan[],
  baseline: number,
  bound: number,
  heading: string,
): string {
  const sc = scale(samples, bound);
  const body =
    bands(phases, sc) +
    axes(sc) +
    hline(baseline, sc, '#2ca02c', `baseline ${baseline.toFixed(0)} MiB`) +
    hline(bound, sc, '#d62728', `pass bound ${bound.toFixed(0)} MiB`) +
    line(samples, sc, (s) => s.heapUsedMiB, '#ff7f0e') +
    line(samples, sc, (s) => s.externalMiB, '#9467bd') +
    line(samples, sc, (s) => s.rssMiB, '#1f77b4');
  const legend = `<text x="${LEFT}" y="${TOP - 8}" fill="#1f77b4">RSS</text><text x="${LEFT + 40}" y="${TOP - 8}" fill="#ff7f0e">JS heap used</text><text x="${LEFT + 130}" y="${TOP - 8}" fill="#9467bd">external</text>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11"><title>${xml(heading)}</title><rect width="${W}" height="${H}" fill="white"/><text x="10" y="20" font-size="14">${xml(heading)}</text>${legend}${body}</svg>\n`;
}
