/** The report's figures: durations, operation counts, faults, redeliveries, unavailability. */
import type { NemesisInvoke } from './rules/types.js';
import { OUTAGE_FAULTS } from './rules/types.js';
import type { Report } from './history.js';
import type { HistoryIndex } from './index-ops.js';
import { handOutsOf } from './rules/group-completion.js';

/** Workload requests whose ok ends an unavailability. */
const SERVICE_OPS = new Set(['publish', 'cache_put', 'cache_get', 'counter_add', 'group_poll']);

export function computeStats(index: HistoryIndex): Report['stats'] {
  const durationMs = index.lines.reduce((max, l) => Math.max(max, l.t), 0);
  const ops: Report['stats']['ops'] = {};
  let okCount = 0;
  for (const op of index.ops) {
    const counts = ops[op.invoke.f] ?? { ok: 0, fail: 0, info: 0 };
    counts[op.outcome] += 1;
    ops[op.invoke.f] = counts;
    if (op.outcome === 'ok' && op.invoke.f !== 'nemesis') okCount += 1;
  }
  const faults = (index.opsByF.get('nemesis') ?? []).map((op) => op.invoke as NemesisInvoke);
  return {
    durationMs,
    ops,
    okPerSecond: durationMs > 0 ? (okCount * 1000) / durationMs : 0,
    faults: faults.length,
    redeliveries: countRedeliveries(index),
    longestUnavailabilityMs: longestUnavailability(index, faults, durationMs),
  };
}

/** Hand-outs with attempt > 1, or of an offset handed out before. */
function countRedeliveries(index: HistoryIndex): number {
  let count = 0;
  for (const byOffset of handOutsOf(index).values()) {
    for (const outs of byOffset.values()) {
      outs.forEach((out, i) => {
        if (i > 0 || out.attempt > 1) count += 1;
      });
    }
  }
  return count;
}

/** Per outage fault, the time to the first ok of a workload request invoked after it began. */
function longestUnavailability(index: HistoryIndex, faults: NemesisInvoke[], durationMs: number) {
  const oks = index.ops
    .filter((op) => op.outcome === 'ok' && SERVICE_OPS.has(op.invoke.f))
    .map((op) => ({ invokedAt: op.invoke.t, okAt: op.completion?.t ?? op.invoke.t }));
  let longest = 0;
  for (const fault of faults) {
    if (!OUTAGE_FAULTS.has(fault.fault)) continue;
    let firstOk = Number.POSITIVE_INFINITY;
    for (const ok of oks) {
      if (ok.invokedAt >= fault.t && ok.okAt < firstOk) firstOk = ok.okAt;
    }
    const end = firstOk === Number.POSITIVE_INFINITY ? durationMs : firstOk;
    longest = Math.max(longest, end - fault.t);
  }
  return longest;
}
