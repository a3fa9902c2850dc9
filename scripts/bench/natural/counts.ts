/**
 * Per-call counts of one side of one natural row, in this process (the client) and in the
 * brokers: turn hops, promises, socket writes, buffers, bytes copied, JSON calls (see
 * count-hooks.mjs). Counting slows both processes, so only the counts mean anything.
 *
 *   FELIX_BENCH_BROKER_ARGS="--import ./scripts/bench/natural/count-hooks.mjs" \
 *     node --import ./scripts/bench/natural/count-hooks.mjs --import tsx \
 *     scripts/bench/natural/counts.ts --row get [--side 0] [--n 20000]
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { argValue } from '@felix/testing-bench-kit';
import { cacheRow } from './cache-rows.js';
import { awaitedAckedRow } from './durable-row.js';
import { type Ctx, type Row, makeCtx, pause, rowSides } from './kit.js';

const n = Number(argValue('--n', '20000'));
const rows: Record<string, (ctx: Ctx) => Promise<Row>> = {
  awaited: (ctx) => awaitedAckedRow(ctx, n),
  get: (ctx) => cacheRow(ctx, 'get', n),
  put: (ctx) => cacheRow(ctx, 'put', n),
};
const dir = mkdtempSync(join(tmpdir(), 'felix-counts-'));
process.env.FELIX_COUNT_DIR = dir;

async function snapshot(pids: number[]): Promise<Record<string, number>[]> {
  for (const pid of pids) process.kill(pid, 'SIGUSR2');
  await pause(300);
  return pids.map((pid) => JSON.parse(readFileSync(join(dir, `${pid}.json`), 'utf8')));
}

function perCall(before: Record<string, number>, after: Record<string, number>): string {
  return Object.keys(after)
    .filter((k) => (after[k] ?? 0) - (before[k] ?? 0) > 0)
    .sort()
    .map((k) => `  ${k}: ${(((after[k] ?? 0) - (before[k] ?? 0)) / n).toFixed(2)}`)
    .join('\n');
}

const make = rows[argValue('--row', 'get')];
if (make === undefined) throw new Error(`--row is one of ${Object.keys(rows).join(', ')}`);
const ctx = makeCtx();
try {
  const row = await make(ctx);
  const side = rowSides(row)[Number(argValue('--side', '0'))]!;
  await side.run(Math.min(n, 2000)); // warm
  const pids = [process.pid, ...ctx.brokerPids()];
  const before = await snapshot(pids);
  await side.run(n);
  const after = await snapshot(pids);
  console.log(`${side.system}, per call (${n} calls):`);
  console.log(`client:\n${perCall(before[0]!, after[0]!)}`);
  for (let i = 1; i < pids.length; i++) {
    const text = perCall(before[i]!, after[i]!);
    if (text !== '') console.log(`broker ${pids[i]}:\n${text}`);
  }
  await row.close();
} finally {
  await ctx.close();
}
