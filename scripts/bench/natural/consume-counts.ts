/**
 * Per-job counts of the consume-and-ack loop (consume.ts's Felix `periodic` row), in this
 * process (the client) and in the broker: turn hops, promises, socket writes, buffers, bytes
 * copied, JSON calls (see count-hooks.mjs). Counting slows both processes: read the counts only.
 *
 *   FELIX_BENCH_BROKER_ARGS="--import ./scripts/bench/natural/count-hooks.mjs" \
 *     node --import ./scripts/bench/natural/count-hooks.mjs --import tsx \
 *     scripts/bench/natural/consume-counts.ts [--n 5000]
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@felix/client';
import { argValue, startBroker } from '@felix/testing-bench-kit';
import { pause } from './kit.js';

const n = Number(argValue('--n', '5000'));
const dir = mkdtempSync(join(tmpdir(), 'felix-counts-'));
process.env.FELIX_COUNT_DIR = dir;

async function snapshot(pids: number[]): Promise<Record<string, number>[]> {
  for (const pid of pids) process.kill(pid, 'SIGUSR2');
  await pause(300);
  return pids.map((pid) => JSON.parse(readFileSync(join(dir, `${pid}.json`), 'utf8')));
}

function perJob(before: Record<string, number>, after: Record<string, number>): string {
  return Object.keys(after)
    .filter((k) => (after[k] ?? 0) - (before[k] ?? 0) > 0)
    .sort()
    .map((k) => `  ${k}: ${(((after[k] ?? 0) - (before[k] ?? 0)) / n).toFixed(2)}`)
    .join('\n');
}

const broker = await startBroker({
  config: `streams:
  - { tenant: t1, name: jobs, durable: true, group_cursor_fsync: periodic }
`,
});
const felix = await connect({
  servers: [broker.url('tls')],
  tenant: 't1',
  tls: { fingerprint: broker.fingerprint },
});
try {
  const warm = Math.min(n, 2000);
  const data = new Uint8Array(1024).fill(7);
  for (let i = 0; i < n + warm; i += 500) {
    await felix.publishBatch(
      'jobs',
      Array.from({ length: 500 }, () => data),
    );
  }
  const group = felix.group('jobs', 'counted', { shard: 0 });
  const job = async () => {
    const [m] = await group.poll({ max: 1 });
    await m!.ack();
  };
  for (let i = 0; i < warm; i++) await job();
  const pids = [process.pid, broker.pid];
  const before = await snapshot(pids);
  for (let i = 0; i < n; i++) await job();
  const after = await snapshot(pids);
  console.log(`poll({ max: 1 }) + ack(), periodic, per job (${n} jobs):`);
  console.log(`client:\n${perJob(before[0]!, after[0]!)}`);
  console.log(`broker:\n${perJob(before[1]!, after[1]!)}`);
} finally {
  await felix.close();
  await broker.stop();
}
