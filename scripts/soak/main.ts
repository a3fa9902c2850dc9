/**
 * Soak: a real broker under connection churn (TLS and QUIC), slow subscribers and bad frames,
 * its RSS sampled every second. After each phase the soak waits for the broker to settle and
 * checks that RSS came back within a tolerance (default 10 %) of its baseline; it prints pass or
 * fail per phase, writes the RSS-over-time chart (SVG) and every sample (JSON) to --out, and
 * exits 1 if a phase failed.
 *
 *   node --import tsx scripts/soak/main.ts [--minutes 4] [--settle-s 60] [--tolerance 0.10]
 *     [--phases churn-tls,churn-quic,slow-subscribers,bad-frames] [--out scripts/soak/results]
 *     [--broker-env FELIX_X=1,FELIX_Y=2] [--subscribers 4] [--batch-records 64]
 *     [--slow-transports tls,quic]
 *
 * --minutes is the active time, shared equally by the phases; the warm-up before the baseline
 * and each settle come on top. The baseline is the broker's RSS after a warm-up that runs every
 * phase briefly (code compiled, pools and the ring filled) and a settle. Build first
 * (`npx pnpm@10.34.9 run build`); FELIX_BENCH_BROKER_ARGS passes node flags to the broker.
 * --broker-env sets broker settings, e.g. FELIX_BROKER_SUBSCRIBER_QUEUE_BYTES: the
 * slow-subscriber phase's peak then shows it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, argValue, startBroker } from '@felix/testing-bench-kit';
import { badFrames } from './bad-frames.js';
import { type PhaseSpan, rssChartSvg } from './chart.js';
import { churn } from './churn.js';
import { RssSampler } from './sampler.js';
import { fillStream, slowSubscribers } from './slow-subscribers.js';

const minutes = Number(argValue('--minutes', '4'));
const settleS = Number(argValue('--settle-s', '60'));
const tolerance = Number(argValue('--tolerance', '0.10'));
const phaseNames = argValue('--phases', 'churn-tls,churn-quic,slow-subscribers,bad-frames').split(
  ',',
);
const outDir = argValue('--out', join(REPO_ROOT, 'scripts', 'soak', 'results'));
const subscribers = Number(argValue('--subscribers', '4'));
const batchRecords = Number(argValue('--batch-records', '64'));
/** Transports the slow subscribers use (one of them alone tells which one keeps memory). */
const slowTransports = argValue('--slow-transports', 'tls,quic').split(',') as Array<
  'tls' | 'quic'
>;
const brokerEnv = Object.fromEntries(
  argValue('--broker-env', '')
    .split(',')
    .filter((kv) => kv.includes('='))
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const TENANT = 't1';
const WARMUP_PHASE_MS = 5_000;
/** The broker's in-memory ring per stream: the warm-up fills the slow stream's past it. */
const RING_BYTES = 16 * 1024 * 1024;
/** Samples whose median decides "settled": one slow reading must not pass or fail a phase. */
const SETTLE_WINDOW = 5;

const broker = await startBroker({
  config: `streams:\n  - { tenant: ${TENANT}, name: churn }\n  - { tenant: ${TENANT}, name: slow }\n`,
  // A 16 MiB ring: the warm-up fills it, so what the ring keeps is part of the baseline.
  env: { FELIX_MEMORY_RING_BYTES: String(RING_BYTES), ...brokerEnv },
});
const sampler = new RssSampler(broker);

type Run = (until: number) => Promise<string>;
const runs: Record<string, Run> = {
  'churn-tls': async (until) => `${await churnRun('tls', until)} connect/publish/close cycles`,
  'churn-quic': async (until) => `${await churnRun('quic', until)} connect/publish/close cycles`,
  'slow-subscribers': async (until) => {
    const o = {
      stream: 'slow',
      tenant: TENANT,
      subscribers,
      until,
      recordBytes: 1024,
      batchRecords,
    };
    const runs = slowTransports.map((transport) => slowSubscribers(broker, { ...o, transport }));
    const records = (await Promise.all(runs)).reduce((a, b) => a + b, 0);
    const who = slowTransports.map((t) => `${subscribers} ${t.toUpperCase()}`).join(' and ');
    return `${records} records of 1 KiB to ${who} subscribers that stopped reading`;
  },
  'bad-frames': async (until) => {
    const o = { transports: ['tls', 'quic'] as const, tenant: TENANT, until, concurrency: 4 };
    const n = await badFrames(broker, {
      ...o,
      transports: [...o.transports],
      partialBytes: 1024 * 1024,
      holdMs: 250,
    });
    return `${n} connections with a bad magic, an oversized and two cut-short frames each`;
  },
};

function churnRun(transport: 'tls' | 'quic', until: number): Promise<number> {
  const o = { transport, stream: 'churn', tenant: TENANT, concurrency: 4 };
  return churn(broker, { ...o, cycles: Number.MAX_SAFE_INTEGER, until });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const recentRss = () => median(sampler.samples.slice(-SETTLE_WINDOW).map((s) => s.rssMiB));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the recent RSS is at or under `bound`, or `settleS` passed; answers whether. */
async function settle(bound: number): Promise<boolean> {
  const deadline = Date.now() + settleS * 1000;
  await sleep(SETTLE_WINDOW * 1000);
  while (recentRss() > bound && Date.now() < deadline) await sleep(1000);
  return recentRss() <= bound;
}

async function warmUp(): Promise<number> {
  sampler.phase = 'warm-up';
  for (const name of phaseNames) await runs[name]!(Date.now() + WARMUP_PHASE_MS);
  // Five loaded seconds may publish less than the ring holds (one run's baseline had 12 MiB
  // less external memory than after the phase: the ring, not a leak).
  const o = { transport: 'tls' as const, stream: 'slow', tenant: TENANT, recordBytes: 1024 };
  await fillStream(broker, { ...o, batchRecords }, 2 * RING_BYTES);
  sampler.phase = 'settle';
  await sleep(settleS * 1000);
  return recentRss();
}

interface PhaseResult extends PhaseSpan {
  detail: string;
  peakMiB: number;
  settledMiB: number;
}

async function phase(name: string, bound: number, phaseMs: number): Promise<PhaseResult> {
  const t0 = (Date.now() - started) / 1000;
  sampler.phase = name;
  const detail = await runs[name]!(Date.now() + phaseMs);
  const end = (Date.now() - started) / 1000;
  const peakMiB = Math.max(...sampler.samples.filter((s) => s.t >= t0).map((s) => s.rssMiB));
  sampler.phase = `${name} settle`;
  const pass = await settle(bound);
  return { name, start: t0, end, pass, detail, peakMiB, settledMiB: recentRss() };
}

const started = Date.now();
sampler.start();
const baseline = await warmUp();
const bound = baseline * (1 + tolerance);
console.log(
  `baseline ${baseline.toFixed(1)} MiB after warm-up; pass bound ${bound.toFixed(1)} MiB`,
);
const results: PhaseResult[] = [];
for (const name of phaseNames) {
  const r = await phase(name, bound, (minutes * 60_000) / phaseNames.length);
  results.push(r);
  console.log(
    `${r.pass ? 'PASS' : 'FAIL'} ${name}: peak ${r.peakMiB.toFixed(1)} MiB, settled ${r.settledMiB.toFixed(1)} MiB (${r.detail})`,
  );
}
sampler.stop();
await broker.stop();
mkdirSync(outDir, { recursive: true });
const heading = `Broker RSS under soak (${minutes} min active, settle ≤ ${settleS} s, bound baseline + ${Math.round(tolerance * 100)} %)`;
writeFileSync(
  join(outDir, 'rss.svg'),
  rssChartSvg(sampler.samples, results, baseline, bound, heading),
);
writeFileSync(
  join(outDir, 'rss.json'),
  `${JSON.stringify({ minutes, settleS, tolerance, brokerEnv, baseline, bound, phases: results, samples: sampler.samples }, null, 1)}\n`,
);
console.log(`chart ${join(outDir, 'rss.svg')}, samples ${join(outDir, 'rss.json')}`);
process.exit(results.every((r) => r.pass) ? 0 : 1);
