/**
 * The slow-subscriber finding on its own: subscribers that stop reading while a publisher
 * publishes, against a fresh broker; the broker's memory (RSS, V8 figures, and where RSS sits
 * by mapping: the brk heap, anonymous mappings, files) before, at the end of the phase, after a
 * settle and full collections, and with --trim after glibc's `malloc_trim(0)` through gdb.
 *
 *   node --import tsx scripts/soak/slow-probe.ts [--seconds 20] [--settle-ms 15000]
 *     [--transport tls,quic] [--subscribers 4] [--batch-records 64] [--trim]
 *     [--broker-env KEY=value,...]
 *
 * FELIX_BENCH_BROKER_ARGS passes node flags to the broker.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { argValue, brokerArgsFromEnv, startBroker } from '@felix/testing-bench-kit';
import { formatFigures, memoryFigures } from './broker-memory.js';
import type { TransportName } from './churn.js';
import { collectGarbage, gcNodeArgs } from './gc.js';
import { slowSubscribers } from './slow-subscribers.js';

const seconds = Number(argValue('--seconds', '20'));
const settleMs = Number(argValue('--settle-ms', '15000'));
const transports = argValue('--transport', 'tls,quic').split(',') as TransportName[];
const subscribers = Number(argValue('--subscribers', '4'));
const batchRecords = Number(argValue('--batch-records', '64'));
const trim = process.argv.includes('--trim');
const brokerEnv = Object.fromEntries(
  argValue('--broker-env', '')
    .split(',')
    .filter((kv) => kv.includes('='))
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);

/** RSS (MiB) by kind of mapping, from /proc/<pid>/smaps: brk heap, anonymous, file-backed. */
function rssByMapping(pid: number): string {
  const sums = { heap: 0, anon: 0, file: 0, stack: 0 };
  let kind: keyof typeof sums = 'anon';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const name = head[1]!;
      kind =
        name === '[heap]'
          ? 'heap'
          : name === ''
            ? 'anon'
            : name.startsWith('[stack')
              ? 'stack'
              : 'file';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) sums[kind] += Number(rss[1]) / 1024;
  }
  return Object.entries(sums)
    .map(([k, v]) => `${k} ${v.toFixed(1)}`)
    .join(', ');
}

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
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

const broker = await startBroker({
  config: 'streams:\n  - { tenant: t1, name: slow }\n',
  nodeArgs: [...brokerArgsFromEnv(), ...gcNodeArgs()],
  env: { FELIX_MEMORY_RING_BYTES: String(16 * 1024 * 1024), ...brokerEnv },
});
const show = async (label: string) => {
  const f = await memoryFigures(broker);
  console.log(`${label.padEnd(8)} ${formatFigures(f)}; by mapping: ${rssByMapping(broker.pid)}`);
};
const run = (ms: number) =>
  Promise.all(
    transports.map((transport) =>
      slowSubscribers(broker, {
        transport,
        stream: 'slow',
        tenant: 't1',
        subscribers,
        until: Date.now() + ms,
        recordBytes: 1024,
        batchRecords,
      }),
    ),
  );
await run(3_000); // warm up: code compiled, the ring filled
await new Promise((r) => setTimeout(r, settleMs));
await collectGarbage(broker);
await show('before');
let peak = 0;
const peakTimer = setInterval(() => {
  peak = Math.max(peak, Number(readFileSync(`/proc/${broker.pid}/statm`, 'utf8').split(' ')[1]));
}, 500);
const sent = await run(seconds * 1000);
clearInterval(peakTimer);
console.log(`phase: ${sent.join('+')} records; peak rss ${((peak * 4) / 1024).toFixed(1)} MiB`);
await show('after');
await new Promise((r) => setTimeout(r, settleMs));
await show('settled');
await collectGarbage(broker);
await show('gc');
if (trim) {
  mallocTrim(broker.pid);
  await show('trimmed');
}
await broker.stop();
