/**
 * Rule 7: a counter key's final sum is the sum of its ok adds plus the deltas of some subset of
 * its adds of unknown outcome (failed adds excluded). The subset is searched as a bounded set of
 * reachable sums; past COUNTER_REACHABLE_SUMS_MAX the key is reported as not judged.
 */
import type { Findings } from '../findings.js';
import type { CounterFinalLine } from '../history.js';
import { type HistoryIndex, type Op, observed, pushTo } from '../index-ops.js';
import { COUNTER_REACHABLE_SUMS_MAX } from '../limits.js';
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
    const reachable = reachableSums(unknown);
    if (reachable === undefined) {
      findings.add(
        'malformed-history',
        `${where} not judged: its ${unknown.length} adds of unknown outcome reach more than ` +
          `${COUNTER_REACHABLE_SUMS_MAX} sums`,
        [final],
      );
      continue;
    }
    if (reachable.has(final.value - acked)) continue;
    findings.add(
      'counter-sum',
      `${where} ended at ${final.value}, but its ok adds sum to ${acked} and no subset of its ` +
        `${unknown.length} unknown adds (${unknown.slice(0, 8).join(', ')}) ` +
        'makes up the difference',
      [final, ...ops.filter((o) => o.outcome === 'ok').map((o) => o.invoke)],
    );
  }
}

/** Every sum of a subset of `deltas`, or undefined when there would be too many to keep. */
function reachableSums(deltas: number[]): Set<number> | undefined {
  let sums = new Set<number>([0]);
  for (const delta of deltas) {
    const next = new Set(sums);
    for (const s of sums) next.add(s + delta);
    if (next.size > COUNTER_REACHABLE_SUMS_MAX) return undefined;
    sums = next;
  }
  return sums;
}
