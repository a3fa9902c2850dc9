/**
 * The natural bench's verdicts: per side, the median rate of the rounds (and their range), the
 * median p50/p99 for awaited loops, what a subscriber received; per Felix side, the median of the
 * per-round ratios to the peer (rounds ran back to back, so a pair shares the machine's load)
 * against the row's goal; for awaited loops also the ratio of p50s (peer / Felix), which a
 * loaded machine's stalls move less than a rate. The first Felix side of a row is the one its goal judges.
 *
 * Judged: against the peer with TLS on (the same channel security; Felix has no plaintext
 * transport). Shown: the judged Felix side against the plaintext peer, in a column of its own.
 */
import { markdownTable, median, pairedRatios } from '@felix/testing-bench-kit';
import { type Row, type Sample, rowSides } from './kit.js';

export interface RowResult {
  row: Row;
  /** Per side (Felix sides, then the peer), one sample per round. */
  samples: Sample[][];
}

const int = (v: number) => Math.round(v).toLocaleString('en-US');

function rateCell(xs: Sample[]): string {
  const rates = xs.map((x) => x.rate);
  return `${int(median(rates))}/s (${int(Math.min(...rates))}–${int(Math.max(...rates))})`;
}

function latencyCell(xs: Sample[]): string {
  if (xs[0]?.p50 === undefined) return '';
  const p50 = median(xs.map((x) => x.p50!));
  const p99 = median(xs.map((x) => x.p99!));
  return `${int(p50)} / ${int(p99)} µs`;
}

function receivedCell(xs: Sample[]): string {
  if (xs[0]?.got === undefined) return '';
  const lost = xs.reduce((a, x) => a + (x.sent! - x.got!), 0);
  return lost === 0 ? 'all, every round' : xs.map((x) => `${x.got}/${x.sent}`).join(', ');
}

/** For awaited loops, the peer's p50 over Felix's (above 1: Felix answers sooner), per-round median. */
function p50Pairs(xs: Sample[], peer: Sample[]): number | null {
  if (xs[0]?.p50 === undefined || peer[0]?.p50 === undefined) return null;
  return pairedRatios(
    peer.map((x) => x.p50!),
    xs.map((x) => x.p50!),
  ).median;
}

function p50Ratio(xs: Sample[], peer: Sample[]): string {
  const r = p50Pairs(xs, peer);
  return r === null ? '' : `; p50 ${r.toFixed(2)}x`;
}

/** Felix's rate over the peer's (median of per-round pairs, with their range), and p50s for awaited loops. */
function ratioCell(xs: Sample[], peer: Sample[]) {
  const pr = pairedRatios(
    xs.map((x) => x.rate),
    peer.map((x) => x.rate),
  );
  const text = `${pr.median.toFixed(2)}x (${Math.min(...pr.ratios).toFixed(2)}–${Math.max(...pr.ratios).toFixed(2)})${p50Ratio(xs, peer)}`;
  return { pr, p50: p50Pairs(xs, peer), text };
}

export function report(results: readonly RowResult[]) {
  const cells: string[][] = [];
  const json: unknown[] = [];
  for (const { row, samples } of results) {
    const judgedPeer = row.felix.length;
    const peer = samples[judgedPeer]!;
    const plain = row.plainPeer ? samples[judgedPeer + 1]! : null;
    const out = rowSides(row).map((s, k) => {
      const xs = samples[k]!;
      const isPeer = k >= judgedPeer;
      const vs = isPeer ? null : ratioCell(xs, peer);
      const vsPlain = k === 0 && plain !== null ? ratioCell(xs, plain) : null;
      const judged = k === 0;
      const lossFree = xs.every((x) => x.got === undefined || x.got === x.sent);
      // An awaited loop meets its goal on both its rate and its p50: on a loaded machine a peer's
      // stalls can sink its rate while each of its calls is still the faster one.
      const met =
        vs !== null && vs.pr.median >= row.goal && lossFree && (vs.p50 ?? row.goal) >= row.goal;
      const verdict = vs === null ? '' : judged ? (met ? 'met' : 'not met') : 'label only';
      const role =
        k === judgedPeer ? 'judged peer (TLS)' : k > judgedPeer ? 'shown peer (plaintext)' : '';
      cells.push([
        k === 0 ? row.title : '',
        s.system,
        s.durability ?? '',
        rateCell(xs),
        latencyCell(xs),
        receivedCell(xs),
        vs === null ? role : vs.text,
        vsPlain?.text ?? '',
        judged
          ? `≥ ${row.goal.toFixed(1)}x vs TLS peer${row.id === 'fire' ? ', no loss' : ''}: ${verdict}`
          : verdict,
      ]);
      return {
        system: s.system,
        role: isPeer ? role : judged ? 'judged Felix loop' : 'Felix variant (label only)',
        durability: s.durability,
        rounds: xs,
        ratio: vs?.pr ?? null,
        ...(vsPlain !== null ? { ratioToPlaintextPeer: vsPlain.pr } : {}),
        verdict,
      };
    });
    json.push({
      id: row.id,
      title: row.title,
      goal: row.goal,
      judgedAgainst: 'the peer with TLS on (same channel security as Felix)',
      sides: out,
    });
  }
  const table = markdownTable(
    [
      'row',
      'loop',
      'durability',
      { title: 'rate, median (range)', align: 'right' },
      { title: 'p50 / p99', align: 'right' },
      'received',
      { title: 'Felix / TLS peer (judged)', align: 'right' },
      { title: 'Felix / plaintext peer (shown)', align: 'right' },
      'goal',
    ],
    cells,
  );
  return { table, json };
}
