/**
 * Rule 5: a reader process never sees a shard's offsets go back across its successive
 * subscriptions (reconnects, restarts): a re-subscription starts after what it saw. Going back
 * inside one subscription is per-shard-order's to report.
 */
import type { Findings } from '../findings.js';
import type { DeliverLine } from '../history.js';
import { type HistoryIndex, observed } from '../index-ops.js';

export function checkMonotonicReads(index: HistoryIndex, findings: Findings): void {
  const highest = new Map<string, DeliverLine>();
  for (const d of observed<DeliverLine>(index, 'deliver')) {
    const key = `${d.process}\u0000${d.stream}\u0000${d.shard}`;
    const top = highest.get(key);
    if (top === undefined || d.offset > top.offset) {
      highest.set(key, d);
      continue;
    }
    if (top.sub === d.sub) continue;
    findings.add(
      'monotonic-reads',
      `${d.process} read stream ${d.stream} shard ${d.shard} offset ${d.offset} ` +
        `(value ${d.value}) ` +
        `in ${d.sub} after it had read offset ${top.offset} in ${top.sub}`,
      [top, d],
    );
  }
}
