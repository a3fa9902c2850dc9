/**
 * The loops a newcomer writes first, from each client's README (defaults, no batching options),
 * side by side with the peer's loop in one run, the order of the systems alternating per round:
 *
 * | row       | Felix loop (TLS)                                   | peer loop                          | goal   |
 * | fire      | `publish(s, data, { ack: false })` × N, awaited at the end → `for await` subscriber | nats.js `nc.publish` × N → `for await` | ≥ 1.0x, no loss |
 * | burst     | `publish(s, data)` × N, awaited at the end → subscriber | the same nats.js loop        | ≥ 0.8x |
 * | awaited   | `await publish(s, data)` on a durable stream (periodic fsync) | JetStream `await js.publish` (file storage) | ≥ 1.0x |
 * | get / put | `await felix.cache('kv').get(k)` / `.put(k, v)`     | ioredis `await redis.get/set`      | ≥ 1.0x |
 *
 * Every Felix connection is TLS (there is no plaintext transport), so each goal is judged against
 * the peer with TLS on: a redis-server and a nats-server (JetStream on) this run starts itself
 * with the broker's development certificate (tls-peers.ts), their clients given only `tls: { ca }`
 * beyond the README's defaults. The same loops against the shared plaintext servers are shown
 * beside (not judged), and the get/put rows show a raw node:tls ping-pong of the same bytes,
 * the floor under any Node client over TLS.
 *
 * Each row lives in a module of its own (publish-rows.ts, durable-row.ts, cache-rows.ts; kit.ts
 * has what they share). The consume-and-ack row is its own script, `consume.ts` beside this one
 * (it needs a durable broker per cursor durability and a fresh group per round).
 *
 *   node --import tsx scripts/bench/natural/main.ts [--only fire,burst,awaited,get,put]
 *
 * FELIX_BENCH_ONLY does what --only does; FELIX_BENCH_ROUNDS (default 3); FELIX_BENCH_N (burst
 * records, default 100,000); FELIX_BENCH_AWAITED_N (awaited calls per round, default 10,000);
 * FELIX_BENCH_WARMUP=0 skips the untimed calls each side makes first (a tenth of a round, at
 * least FELIX_BENCH_WARMUP_CALLS, default 30,000);
 * FELIX_BENCH_BROKER_ARGS passes node flags to the brokers (say "--cpu-prof --cpu-prof-dir=/tmp/p").
 * Prints each round, then a Markdown table (rates are medians of the rounds, ratios the median of
 * the per-round pairs; an awaited loop meets its goal on its rate and on its p50), and writes
 * results.json beside this file. NATS rows use a subject of this run's own (`natural.<pid>`).
 */
import { execSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { argValue } from '@felix/testing-bench-kit';
import { cacheRow } from './cache-rows.js';
import { awaitedAckedRow } from './durable-row.js';
import { type Ctx, type Row, type Sample, makeCtx, rowSides } from './kit.js';
import { ackedBurstRow, fireAndForgetRow } from './publish-rows.js';
import { type RowResult, report } from './report.js';

const env = process.env;
const ROUNDS = Math.max(1, Number(env.FELIX_BENCH_ROUNDS ?? 3));
const N = Number(env.FELIX_BENCH_N ?? 100_000);
const AWAITED_N = Number(env.FELIX_BENCH_AWAITED_N ?? 10_000);
const WARMUP = env.FELIX_BENCH_WARMUP !== '0';
/**
 * The fewest untimed calls each side makes before a row's rounds. A tenth of a round (1,000
 * calls of the awaited rows) left both clients cold: one get loop of 10,000 calls after another
 * ran 9,133, 15,422, then 17,052–17,390/s for Felix and 15,561, 17,959, 18,416, then about
 * 19,200/s for ioredis TLS (session 27, `loop.ts --row get --rounds 12`), so the first timed
 * rounds measured the JIT, not the loop.
 */
const WARMUP_CALLS_MIN = Number(env.FELIX_BENCH_WARMUP_CALLS ?? 30_000);

const ROWS: Record<string, (ctx: Ctx) => Promise<Row>> = {
  fire: (ctx) => fireAndForgetRow(ctx, N),
  burst: (ctx) => ackedBurstRow(ctx, N),
  awaited: (ctx) => awaitedAckedRow(ctx, AWAITED_N),
  get: (ctx) => cacheRow(ctx, 'get', AWAITED_N),
  put: (ctx) => cacheRow(ctx, 'put', AWAITED_N),
};

const only = argValue('--only', env.FELIX_BENCH_ONLY ?? Object.keys(ROWS).join(','))
  .split(',')
  .map((s) => s.trim())
  .filter((s) => s !== '');
for (const id of only) {
  if (!(id in ROWS)) {
    console.error(`unknown row ${id}; rows: ${Object.keys(ROWS).join(', ')}`);
    process.exit(2);
  }
}

const ctx = makeCtx();
const results: RowResult[] = [];
const loads: number[] = [loadavg()[0]!];
const started = new Date();
try {
  for (const id of only) {
    const row = await ROWS[id]!(ctx);
    const sides = rowSides(row);
    const samples: Sample[][] = sides.map(() => []);
    console.log(`\n${row.title}`);
    // Untimed calls on each side first (a tenth of a round, at least WARMUP_CALLS_MIN): a
    // service in use is warm, and the first rounds used to run slower.
    const warm = Math.max(Math.ceil(row.n / 10), WARMUP_CALLS_MIN);
    if (WARMUP) for (const s of sides) await s.run(warm);
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate who goes first: the peer in even rounds, Felix in odd ones.
      const order = sides.map((_, k) => k);
      if (r % 2 === 0) order.unshift(order.pop()!);
      for (const k of order) samples[k]!.push(await sides[k]!.run(row.n));
      loads.push(loadavg()[0]!);
      console.log(
        `  round ${r + 1} (load ${loads.at(-1)!.toFixed(1)}): ${roundLine(sides, samples, r)}`,
      );
    }
    await row.close();
    results.push({ row, samples });
  }
} finally {
  await ctx.close();
}

function roundLine(sides: Row['felix'], samples: Sample[][], r: number): string {
  return sides
    .map((s, k) => {
      const x = samples[k]![r]!;
      const lat =
        x.p50 === undefined ? '' : ` p50 ${Math.round(x.p50)} µs p99 ${Math.round(x.p99!)} µs`;
      const got = x.got === undefined ? '' : ` got ${x.got}/${x.sent}`;
      return `${s.system} ${Math.round(x.rate)}/s${lat}${got}`;
    })
    .join('; ');
}

const commit = (() => {
  try {
    return execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown'; // a checkout without git still prints its figures
  }
})();
const { table, json } = report(results);
console.log(`\n${table}`);
const meta = {
  at: started.toISOString(),
  commit,
  machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}`,
  loadavg1: { min: Math.min(...loads), max: Math.max(...loads) },
  rounds: ROUNDS,
  n: { burst: N, awaited: AWAITED_N },
};
console.log(
  `\n${meta.at}, commit ${meta.commit}, ${meta.machine}, load ${meta.loadavg1.min.toFixed(1)}–${meta.loadavg1.max.toFixed(1)}`,
);
writeFileSync(
  new URL('./results.json', import.meta.url),
  `${JSON.stringify({ ...meta, rows: json }, null, 2)}\n`,
);
