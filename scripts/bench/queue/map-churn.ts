/**
 * A V8 Map and Set under a consumer group's churn: records handed out 100 at a time (a poll)
 * and settled 400 at a time (four consumers' batches), with W entries standing in between, as a
 * group's claims are while a drain runs. Prints ns per record (one set and one delete) for each
 * W. Up to about 2,000 standing this costs about 0.1 µs; from about 2,100 on, 0.6-2.3 µs (Node
 * 20, 2026-11-30), which is why a group keeps its claims in offset tables
 * (services/broker/src/groups/offset-map.ts) instead; `trace.ts` beside this file shows how many
 * claims stand in a real drain (FELIX_TRACE_INFLIGHT=1).
 *
 *   node --import tsx scripts/bench/queue/map-churn.ts
 */
import { markdownTable, padCells } from '@felix/testing-bench-kit';

const N = 2_000_000;

function churn(standing: number, make: () => { add(k: number): void; delete(k: number): boolean }) {
  const table = make();
  let next = 0;
  let settled = 0;
  const t0 = performance.now();
  while (settled < N) {
    if (next - settled < standing) {
      for (let o = next; o < next + 100; o++) table.add(o);
      next += 100;
    } else {
      for (let o = settled; o < settled + 400; o++) table.delete(o);
      settled += 400;
    }
  }
  return ((performance.now() - t0) * 1e6) / N;
}

const claimMap = () => {
  const m = new Map<number, object>();
  return {
    add: (k: number) => void m.set(k, { offset: k, attempts: 1, deadline: 0, delayed: false }),
    delete: (k: number) => m.delete(k),
  };
};
const doneSet = () => {
  const s = new Set<number>();
  return { add: (k: number) => void s.add(k), delete: (k: number) => s.delete(k) };
};

const rows: string[][] = [];
for (const w of [500, 1_000, 1_500, 2_000, 2_100, 2_400, 3_000, 4_000, 6_000]) {
  const runs = (make: typeof claimMap) => [churn(w, make), churn(w, make), churn(w, make)];
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' / ');
  rows.push([String(w), fmt(runs(claimMap)), fmt(runs(doneSet))]);
  console.log(padCells(rows[rows.length - 1]!, [-6, 16, 16]));
}
const right = (title: string) => ({ title, align: 'right' as const });
console.log(
  `\n${markdownTable([right('standing'), right('Map (claims), ns per record'), right('Set, ns per record')], rows)}`,
);
