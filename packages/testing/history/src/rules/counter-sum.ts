/**
 * Rule 7: a counter key's final sum is the sum of its ok adds plus the deltas of some subset of
 * its adds of unknown outcome (failed adds excluded). The subset is searched as a bitmap of
 * reachable sums over [lowest, highest] subset sum, one pass per distinct delta (equal deltas
 * together, a sliding window per residue), so thousands of unknown adds stay cheap. Past
 * COUNTER_SUM_RANGE_MAX or COUNTER_SEARCH_CELLS_MAX the key is reported as not judged.
 */
import type { Findings } from '../findings.js';
import type { CounterFinalLine } from '../history.js';
import { type HistoryIndex, type Op, observed, pushTo } from '../index-ops.js';
import { COUNTER_SEARCH_CELLS_MAX, COUNTER_SUM_RANGE_MAX } from '../limits.js';
import type { CounterAddInvoke } from './types.js';

export function checkCounterSum(index: HistoryIndex, findings: Findings): void {
  const adds = new Map<string, Op[]>();
  for (const op of index.opsByF.get('counter_add') ?? []) {
    const invoke = op.invoke as CounterAddInvoke;
    pushTo(adds, `${invoke.counter}\u0000${invoke.key}`, op);
  }
  for (const final of observed<CounterFinalLine>(index, 'counter_final')) {
    const ops = adds.get(`${final.counter}\u0000${final.key}`) ?? [];
    let acked = 0;
    const unknown: number[] = [];
    for (const op of ops) {
      const delta = (op.invoke as CounterAddInvoke).delta;
      if (op.outcome === 'ok') acked += delta;
      else if (op.outcome === 'info') unknown.push(delta);
    }
    const where = `counter ${final.counter} key ${final.key}`;
    const verdict = subsetSumReaches(unknown, final.value - acked);
    if (verdict === 'yes') continue;
    if (verdict === 'unjudged') {
      findings.add(
        'malformed-history',
        `${where} not judged: its ${unknown.length} adds of unknown outcome span more sums ` +
          `than the search bounds allow (or are not integers)`,
        [final],
      );
      continue;
    }
    findings.add(
      'counter-sum',
      `${where} ended at ${final.value}, but its ok adds sum to ${acked} and no subset of its ` +
        `${unknown.length} unknown adds (${unknown.slice(0, 8).join(', ')}) ` +
        'makes up the difference',
      [final, ...ops.filter((o) => o.outcome === 'ok').map((o) => o.invoke)],
    );
  }
}

/** Whether some subset of `deltas` sums to `target`. */
export function subsetSumReaches(deltas: number[], target: number): 'yes' | 'no' | 'unjudged' {
  if (!deltas.every(Number.isInteger) || !Number.isInteger(target)) return 'unjudged';
  const counts = new Map<number, number>();
  let lo = 0;
  let hi = 0;
  for (const d of deltas) {
    if (d === 0) continue;
    counts.set(d, (counts.get(d) ?? 0) + 1);
    if (d < 0) lo += d;
    else hi += d;
  }
  if (target < lo || target > hi) return 'no';
  const width = hi - lo + 1;
  if (width > COUNTER_SUM_RANGE_MAX || width * counts.size > COUNTER_SEARCH_CELLS_MAX) {
    return 'unjudged';
  }
  let reach: Uint8Array = new Uint8Array(width);
  reach[-lo] = 1;
  for (const [d, m] of counts) reach = addRepeated(reach, d, m);
  return reach[target - lo] === 1 ? 'yes' : 'no';
}

/** Sums reachable after adding `delta` between 0 and `times` times to any reachable sum. */
function addRepeated(reach: Uint8Array, delta: number, times: number): Uint8Array {
  const next = new Uint8Array(reach.length);
  const step = Math.abs(delta);
  for (let residue = 0; residue < step && residue < reach.length; residue++) {
    // Walk the residue class in the direction delta moves, counting reachable sums among the
    // last `times + 1` positions: a position is reachable when that window holds any.
    const positions: number[] = [];
    for (let p = residue; p < reach.length; p += step) positions.push(p);
    if (delta < 0) positions.reverse();
    let inWindow = 0;
    positions.forEach((p, i) => {
      inWindow += reach[p] as number;
      const leaving = positions[i - times - 1];
      if (leaving !== undefined) inWindow -= reach[leaving] as number;
      if (inWindow > 0) next[p] = 1;
    });
  }
  return next;
}
