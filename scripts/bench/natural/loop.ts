/**
 * One side of one natural row, alone, for a profile: no peer runs beside it, so a `--cpu-prof`
 * of this process (the client) or of the broker (FELIX_BENCH_BROKER_ARGS) shows that loop only.
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/p --import tsx scripts/bench/natural/loop.ts \
 *     --row put [--side 0] [--n 50000] [--rounds 1]
 *
 * It prints the CPU per call of this process, of the brokers and of the side's own server where
 * the bench started it (Felix's broker, the floor's echo child, the TLS redis-server), from
 * /proc, which a loaded machine disturbs less than a rate. `--side` counts Felix's sides of the
 * row from 0 (the judged one), then the TLS peer, then the plaintext one.
 */
import { readFileSync } from 'node:fs';
import { argValue, procCpuSecs } from '@felix/testing-bench-kit';
import { cacheRow } from './cache-rows.js';
import { awaitedAckedRow } from './durable-row.js';
import { type Ctx, type Row, makeCtx, rowSides } from './kit.js';
import { ackedBurstRow, fireAndForgetRow } from './publish-rows.js';

const n = Number(argValue('--n', '50000'));

/** Read and write syscalls so far (/proc/<pid>/io: syscr, syscw). */
function syscalls(pid: number | 'self'): number[] {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(/^NAME: (\d+)$/m.exec(io.replace(name, 'NAME'))?.[1] ?? 0);
  return [field('syscr'), field('syscw')];
}
const rows: Record<string, (ctx: Ctx) => Promise<Row>> = {
  fire: (ctx) => fireAndForgetRow(ctx, n),
  burst: (ctx) => ackedBurstRow(ctx, n),
  awaited: (ctx) => awaitedAckedRow(ctx, n),
  get: (ctx) => cacheRow(ctx, 'get', n),
  put: (ctx) => cacheRow(ctx, 'put', n),
};
const make = rows[argValue('--row', 'put')];
if (make === undefined) {
  console.error(`--row is one of ${Object.keys(rows).join(', ')}`);
  process.exit(2);
}
const ctx = makeCtx();
try {
  const row = await make(ctx);
  const sides = rowSides(row);
  const side = sides[Number(argValue('--side', '0'))]!;
  for (let r = 0; r < Number(argValue('--rounds', '1')); r++) {
    const cpu = () => ({
      self: procCpuSecs('self'),
      server: side.serverPid === undefined ? 0 : procCpuSecs(side.serverPid),
      brokers: ctx.brokerPids().reduce((a, pid) => a + procCpuSecs(pid), 0),
      selfIo: syscalls('self'),
      brokerIo: ctx
        .brokerPids()
        .map(syscalls)
        .reduce((a, b) => [a[0]! + b[0]!, a[1]! + b[1]!], [0, 0]),
    });
    const before = cpu();
    const x = await side.run(n);
    const after = cpu();
    const per = (a: number, b: number) => `${Math.round(((b - a) * 1e6) / n)} µs`;
    const calls = (a: number[], b: number[]) =>
      `${((b[0]! - a[0]!) / n).toFixed(2)} reads, ${((b[1]! - a[1]!) / n).toFixed(2)} writes`;
    const server =
      side.serverPid === undefined
        ? ''
        : `, this side's server (pid ${side.serverPid}) ${per(before.server, after.server)}`;
    console.log(
      `CPU per call: this process ${per(before.self, after.self)}${server}, brokers ${per(before.brokers, after.brokers)} (10 ms ticks); syscalls per call: this process ${calls(before.selfIo, after.selfIo)}, brokers ${calls(before.brokerIo, after.brokerIo)}`,
    );
    const lat =
      x.p50 === undefined ? '' : `, p50 ${Math.round(x.p50)} µs, p99 ${Math.round(x.p99!)} µs`;
    const got = x.got === undefined ? '' : `, got ${x.got}/${x.sent}`;
    console.log(`${side.system}: ${Math.round(x.rate)}/s${lat}${got}`);
  }
  await row.close();
} finally {
  await ctx.close();
}
