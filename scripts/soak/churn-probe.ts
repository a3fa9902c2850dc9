/**
 * The churn finding on its own: N connect/publish/close cycles per transport against a fresh
 * broker, with the broker's memory before, right after, and after a settle period.
 *
 *   node --import tsx scripts/soak/churn-probe.ts [--cycles 3000] [--transport tls,quic]
 *     [--concurrency 4] [--settle-ms 10000]
 *
 * FELIX_BENCH_BROKER_ARGS passes node flags to the broker; extra broker environment (say
 * MALLOC_ARENA_MAX=2) is inherited.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  type BenchBroker,
  argValue,
  brokerArgsFromEnv,
  startBroker,
} from '@felix/testing-bench-kit';
import { formatFigures, memoryFigures } from './broker-memory.js';
import { type TransportName, churn } from './churn.js';

const cycles = Number(argValue('--cycles', '3000'));
const transports = argValue('--transport', 'tls,quic').split(',') as TransportName[];
const concurrency = Number(argValue('--concurrency', '4'));
const settleMs = Number(argValue('--settle-ms', '10000'));

const gcOnSignal = fileURLToPath(new URL('./gc-on-signal.mjs', import.meta.url));
const useGc = process.argv.includes('--gc');
const trim = process.argv.includes('--trim');
/** With --gc, also collect after every this many cycles (the default: only before and after). */
const gcEvery = Number(argValue('--gc-every', String(Number.MAX_SAFE_INTEGER)));

/** glibc's malloc_trim(0) in the broker through gdb: what RSS is free malloc memory not returned. */
function mallocTrim(pid: number): void {
  execFileSync(
    'gdb',
    [
      '-p',
      String(pid),
      '-batch',
      '-ex',
      'call (void)malloc_stats()',
      '-ex',
      'call (int)malloc_trim(0)',
    ],
    { stdio: 'ignore' },
  );
}

/** Full collections in the broker (SIGUSR2 to the gc-on-signal preload), then a pause for them. */
async function collect(broker: BenchBroker): Promise<void> {
  if (!useGc) return;
  process.kill(broker.pid, 'SIGUSR2');
  await new Promise((r) => setTimeout(r, 1_000));
}

for (const transport of transports) {
  const extra = useGc ? ['--expose-gc', '--import', gcOnSignal] : [];
  const broker = await startBroker({
    config: 'streams:\n  - { tenant: t1, name: churn }\n',
    nodeArgs: [...brokerArgsFromEnv(), ...extra],
    // A small ring: the records the churn publishes are then a constant, not a growth.
    env: { FELIX_MEMORY_RING_RECORDS: '64' },
  });
  const opts = { transport, stream: 'churn', tenant: 't1', concurrency };
  await churn(broker, { ...opts, cycles: 50 }); // warm up: code paths compiled, pools made
  await new Promise((r) => setTimeout(r, 2_000));
  await collect(broker);
  const before = await memoryFigures(broker);
  const t0 = Date.now();
  let n = 0;
  while (n < cycles) {
    n += await churn(broker, { ...opts, cycles: Math.min(gcEvery, cycles - n) });
    if (n < cycles) await collect(broker);
  }
  const after = await memoryFigures(broker);
  await new Promise((r) => setTimeout(r, settleMs));
  await collect(broker);
  const settled = await memoryFigures(broker);
  console.log(`${transport}: ${n} cycles in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`  before  ${formatFigures(before)}`);
  console.log(`  after   ${formatFigures(after)}`);
  console.log(`  settled ${formatFigures(settled)}`);
  if (trim) {
    mallocTrim(broker.pid);
    console.log(`  trimmed ${formatFigures(await memoryFigures(broker))}`);
  }
  const per = ((settled.rssMiB - before.rssMiB) * 1024) / n;
  console.log(
    `  settled - before: ${(settled.rssMiB - before.rssMiB).toFixed(1)} MiB (${per.toFixed(1)} KiB per cycle)`,
  );
  await broker.stop();
}
