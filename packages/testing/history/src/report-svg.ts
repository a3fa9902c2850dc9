/**
 * A timeline of a history as one self-contained SVG: one row per process, each request a bar
 * from invoke to completion coloured by outcome, observations as ticks, faults shaded across
 * every row with their names, violating lines marked in red. Its size is bounded: a row with
 * too many operations is drawn as buckets, and rows, faults and marks are capped (limits.ts).
 */
import type { HistoryLine, Report } from './history.js';
import {
  SVG_BUCKETS_PER_ROW,
  SVG_FAULTS_MAX,
  SVG_MARKS_MAX,
  SVG_OPS_PER_ROW_MAX,
  SVG_PLOT_WIDTH_PX,
  SVG_ROW_HEIGHT_PX,
  SVG_ROWS_MAX,
} from './limits.js';
import type { NemesisInvoke } from './rules/types.js';

type Outcome = 'ok' | 'fail' | 'info';

interface Item {
  from: number;
  to: number;
  outcome: Outcome;
  label: string;
  violating: boolean;
}

const COLOURS: Record<Outcome, string> = { ok: '#2e7d32', fail: '#ef6c00', info: '#f9a825' };
const VIOLATION_COLOUR = '#d50000';
const LABEL_WIDTH_PX = 130;
const HEADER_PX = 40;

/** Faults that last until a later healing fault on the same target. */
const HEALED_BY: Record<string, string[]> = {
  kill: ['restart', 'start'],
  stop: ['restart', 'start'],
  pause: ['resume'],
  partition: ['heal'],
  slow_fsync: ['heal_fsync'],
  fail_fsync: ['heal_fsync'],
};

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Rows of items per process, in order of first appearance; completions are joined to invokes. */
function rowsOf(lines: readonly HistoryLine[], marked: Set<HistoryLine>, endT: number) {
  const rows = new Map<string, Item[]>();
  const open = new Map<string, { invoke: HistoryLine; item: Item }>();
  for (const line of lines) {
    if (line.f === 'meta' || line.f === 'nemesis') continue;
    let row = rows.get(line.process);
    if (row === undefined) {
      row = [];
      rows.set(line.process, row);
    }
    if (line.phase === 'invoke') {
      const item: Item = {
        from: line.t,
        to: endT,
        outcome: 'info',
        label: `${line.f} ${line.id}`,
        violating: marked.has(line),
      };
      open.set(line.id, { invoke: line, item });
      row.push(item);
      continue;
    }
    const pending = open.get(line.id);
    if (pending !== undefined) {
      open.delete(line.id);
      pending.item.to = line.t;
      pending.item.outcome = line.phase;
      pending.item.label = `${line.f} ${line.id}: ${line.phase}`;
      pending.item.violating ||= marked.has(line);
      continue;
    }
    row.push({
      from: line.t,
      to: line.t,
      outcome: line.phase,
      label: `${line.f} ${line.id}`,
      violating: marked.has(line),
    });
  }
  return rows;
}

/** Each fault from its invoke until its healing fault on the same target (or its completion). */
function faultsOf(lines: readonly HistoryLine[], endT: number) {
  const faults: { from: number; to: number; name: string }[] = [];
  const invokes = lines.filter(
    (l): l is NemesisInvoke => l.f === 'nemesis' && l.phase === 'invoke',
  );
  const completions = new Map(
    lines.filter((l) => l.f === 'nemesis' && l.phase !== 'invoke').map((l) => [l.id, l.t]),
  );
  invokes.forEach((fault, i) => {
    const heals = HEALED_BY[fault.fault];
    let to = completions.get(fault.id) ?? fault.t;
    if (heals !== undefined) {
      const heal = invokes
        .slice(i + 1)
        .find((h) => heals.includes(h.fault) && (h.target === fault.target || h.target === 'all'));
      to = heal?.t ?? endT;
    }
    faults.push({ from: fault.t, to, name: `${fault.fault} ${fault.target}` });
  });
  return faults.slice(0, SVG_FAULTS_MAX);
}

/** An element with attributes (numbers kept to one decimal) and escaped text content. */
function el(tag: string, attrs: Record<string, string | number>, text = ''): string {
  const list = Object.entries(attrs)
    .map(([k, v]) => `${k}="${typeof v === 'number' ? v.toFixed(1) : escapeXml(v)}"`)
    .join(' ');
  return `<${tag} ${list}>${text}</${tag}>`;
}

function title(text: string): string {
  return `<title>${escapeXml(text)}</title>`;
}

function headerText(report: Report, endT: number): string {
  const total = Object.values(report.byRule).reduce((a, b) => a + b, 0);
  const verdict = report.valid ? 'VALID' : `INVALID: ${total} violation(s)`;
  return el('text', { x: 4, y: 16, 'font-size': 13 }, escapeXml(`${verdict}, ${endT} ms`));
}

/** The colour key, top right: outcomes, violations and faults. */
function legend(width: number): string {
  const keys: [string, string][] = [
    ['ok', COLOURS.ok],
    ['fail', COLOURS.fail],
    ['info (unknown)', COLOURS.info],
    ['violation', VIOLATION_COLOUR],
    ['fault', '#90caf9'],
  ];
  return keys
    .map(([name, fill], i) => {
      const x = width - 520 + i * 100;
      const swatch = el('rect', { x, y: 6, width: 10, height: 10, fill });
      return swatch + el('text', { x: x + 14, y: 15 }, escapeXml(name));
    })
    .join('');
}

function faultShade(f: { from: number; to: number; name: string }, x: Scale, height: number) {
  const band = { x: x(f.from), y: HEADER_PX - 14, width: Math.max(1, x(f.to) - x(f.from)) };
  const shade = el('rect', { ...band, height, fill: '#90caf9', opacity: 0.3 }, title(f.name));
  const label = el('text', { x: x(f.from), y: HEADER_PX - 4, fill: '#1565c0' }, escapeXml(f.name));
  return `<g class="fault">${shade}${label}</g>`;
}

type Scale = (t: number) => number;

export function renderSvg(lines: readonly HistoryLine[], report: Report): string {
  const marked = new Set(report.violations.flatMap((v) => v.lines));
  const endT = lines.reduce((max, l) => Math.max(max, l.t), 1);
  const x: Scale = (t) => LABEL_WIDTH_PX + (t / endT) * SVG_PLOT_WIDTH_PX;
  const rows = [...rowsOf(lines, marked, endT)];
  const shown = rows.slice(0, SVG_ROWS_MAX);
  const height = HEADER_PX + (shown.length + 1) * SVG_ROW_HEIGHT_PX;
  const width = LABEL_WIDTH_PX + SVG_PLOT_WIDTH_PX + 20;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
      'font-family="sans-serif" font-size="11">',
    headerText(report, endT),
    legend(width),
  ];
  for (const f of faultsOf(lines, endT)) out.push(faultShade(f, x, height - HEADER_PX + 14));
  let marks = 0;
  shown.forEach(([process, items], r) => {
    const y = HEADER_PX + r * SVG_ROW_HEIGHT_PX;
    out.push(el('text', { x: 4, y: y + SVG_ROW_HEIGHT_PX - 5 }, escapeXml(process)));
    const crowded = items.length > SVG_OPS_PER_ROW_MAX;
    out.push(...(crowded ? bucketRects(items, y, endT, x) : items.map((it) => itemRect(it, y, x))));
    for (const it of items) {
      if (!it.violating || marks >= SVG_MARKS_MAX) continue;
      marks += 1;
      out.push(itemRect(it, y, x, true));
    }
  });
  if (rows.length > shown.length) {
    const more = `… ${rows.length - shown.length} more processes not drawn`;
    out.push(el('text', { x: 4, y: height - 4 }, escapeXml(more)));
  }
  out.push('</svg>');
  return out.join('\n');
}

function itemRect(it: Item, y: number, x: Scale, violation = false): string {
  const box = {
    x: x(it.from),
    y: y + 3,
    width: Math.max(2, x(it.to) - x(it.from)),
    height: SVG_ROW_HEIGHT_PX - 6,
  };
  if (!violation) return el('rect', { ...box, fill: COLOURS[it.outcome] }, title(it.label));
  const mark = { class: 'violation', stroke: '#000', 'stroke-width': 0.5, fill: VIOLATION_COLOUR };
  return el('rect', { ...mark, ...box }, title(it.label));
}

/** One rect per time bucket, coloured by its most doubtful outcome, titled with its counts. */
function bucketRects(items: Item[], y: number, endT: number, x: Scale): string[] {
  const span = endT / SVG_BUCKETS_PER_ROW;
  const buckets = Array.from({ length: SVG_BUCKETS_PER_ROW }, () => ({ ok: 0, fail: 0, info: 0 }));
  for (const it of items) {
    const b = buckets[Math.min(SVG_BUCKETS_PER_ROW - 1, Math.floor(it.from / span))];
    if (b !== undefined) b[it.outcome] += 1;
  }
  return buckets.flatMap((b, i) => {
    const n = b.ok + b.fail + b.info;
    if (n === 0) return [];
    const outcome: Outcome = b.info > 0 ? 'info' : b.fail > 0 ? 'fail' : 'ok';
    const box = {
      class: 'bucket',
      x: x(i * span),
      y: y + 3,
      width: Math.max(1, x((i + 1) * span) - x(i * span)),
      height: SVG_ROW_HEIGHT_PX - 6,
      fill: COLOURS[outcome],
    };
    return [el('rect', box, title(`${n} ops: ok ${b.ok}, fail ${b.fail}, info ${b.info}`))];
  });
}
