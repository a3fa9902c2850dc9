/**
 * Where an awaited quorum publish spends its time: three brokers (RF 3, quorum, onCommit) as
 * the replicated bench starts them, one client on the leader, publishes awaited one at a time.
 * Prints the leader's and followers' pids so a tracer can attach, waits for Enter-free
 * `--pause-ms` first, then times `--n` publishes spaced `--gap-ms` apart (0: back to back).
 *
 *   node --import tsx scripts/bench/replicated/latency-probe.ts [--n 2000] [--gap-ms 0]
 *     [--warm 20000] [--warm-awaited 6000] [--fsync onCommit|periodic] [--in-flight 0] [--pause-ms 0] [--keep]
 *
 * jetstream-probe.ts is the same loop against a three-server JetStream cluster (R3).
 */
import { loadavg } from 'node:os';
import { argValue, percentile, procCpuSecs, windowPercentiles } from '@felix/testing-bench-kit';
import { startCluster } from '@felix/testing-cluster';
import { tempDir } from '@felix/testing-harness';

const N = Number(argValue('--n', '2000'));
const GAP_MS = Number(argValue('--gap-ms', '0'));
const PAUSE_MS = Number(argValue('--pause-ms', '0'));
/** 0: awaited one at a time; else this many publishes kept in flight (the throughput row). */
const IN_FLIGHT = Number(argValue('--in-flight', '0'));
/** Untimed publishes first (64 in flight), as a cluster in service is warm. */
const WARM = Number(argValue('--warm', '20000'));
/** Untimed awaited publishes after those, one at a time: the awaited path warms on its own
 *  (Felix's p50 fell for its first 4,000 under `periodic`, 3,000 to 6,000 under `onCommit`:
 *  docs/perf.md, session 27). */
const WARM_AWAITED = Number(argValue('--warm-awaited', '6000'));
/** The brokers' fsync mode: `onCommit` (the judged rows) or `periodic` (JetStream's durability). */
const FSYNC = argValue('--fsync', 'onCommit');
/** Keeps the cluster's directory (logs, and a `--trace-deopt` run's output) and prints it. */
const KEEP = process.argv.includes('--keep');

/** CPU time (user + system) of a process so far, in µs (the bench kit's /proc reading). */
const cpuUs = (pid: number | undefined): number =>
  pid === undefined ? 0 : procCpuSecs(pid) * 1_000_000;
const DATA = new Uint8Array(1024).fill(0x61);
const dir = await tempDir('felix-latency-probe-');
const cluster = await startCluster({
  brokers: 3,
  replication: true,
  transport: 'tls',
  dir: dir.path,
  streams: [{ name: 'probe', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
  // No fault seams (as in production and the replicated bench).
  env: {
    FELIX_DURABLE_FSYNC_MODE: FSYNC,
    FELIX_TEST_PARTITION_FILE: undefined,
    FELIX_TEST_STORAGE_FAULT_FILE: undefined,
  },
});
try {
  await cluster.waitServed();
  const leader = await cluster.leaderOf('probe');
  const felix = await cluster.connect({ servers: [leader!.url('tls')] });
  // Untimed: a broker's JIT compiles its hot path only after some thousands of records.
  await Promise.all(
    Array.from({ length: 64 }, async (_, lane) => {
      for (let i = lane; i < WARM; i += 64) await felix.publish('probe', DATA);
    }),
  );
  for (let i = 0; i < WARM_AWAITED; i++) await felix.publish('probe', DATA);
  console.log(
    'pids',
    cluster.nodes.map((n) => `${n.id}${n.id === leader?.id ? '(leader)' : ''}=${n.pid}`).join(' '),
  );
  if (PAUSE_MS > 0) await new Promise((r) => setTimeout(r, PAUSE_MS));
  const pids = cluster.nodes.map((n) => n.pid);
  const cpu0 = [...pids.map(cpuUs), process.cpuUsage()];
  const t0 = performance.now();
  if (IN_FLIGHT > 0) {
    let sent = 0;
    const lane = async () => {
      while (sent < N) {
        sent++;
        await felix.publish('probe', DATA);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  }
  const times: number[] = [];
  for (let i = 0; IN_FLIGHT === 0 && i < N; i++) {
    const t0 = performance.now();
    await felix.publish('probe', DATA);
    times.push((performance.now() - t0) * 1000);
    if (GAP_MS > 0) await new Promise((r) => setTimeout(r, GAP_MS));
  }
  const wallS = (performance.now() - t0) / 1000;
  const perRecord = pids.map((p, i) => ((cpuUs(p) - (cpu0[i] as number)) / N).toFixed(0));
  const own = process.cpuUsage(cpu0[pids.length] as NodeJS.CpuUsage);
  console.log(
    `${(N / wallS).toFixed(0)} rec/s; CPU µs per record: brokers ${perRecord.join(' / ')} (leader ${cluster.nodes.findIndex((n) => n.id === leader?.id)}), client ${((own.user + own.system) / N).toFixed(0)}`,
  );
  console.log(
    `p50 of each thousand, in order: ${windowPercentiles(times, 1000, 50)
      .map((v) => v.toFixed(0))
      .join(' ')}`,
  );
  times.sort((a, b) => a - b);
  console.log(
    `awaited p50 ${percentile(times, 50).toFixed(0)} µs p90 ${percentile(times, 90).toFixed(0)} p99 ${percentile(times, 99).toFixed(0)}; load ${loadavg()[0]!.toFixed(2)}`,
  );
  await felix.close();
} finally {
  await cluster.shutdown({ keep: KEEP });
  if (KEEP) console.log('kept', dir.path);
  else await dir.cleanup();
}
