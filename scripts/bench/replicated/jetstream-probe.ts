/**
 * latency-probe.ts's loop against the peer: a three-server JetStream cluster on loopback (an R3
 * file-storage stream, TLS as the replicated bench runs it), `await js.publish` one at a time
 * after `--warm` untimed ones. Prints the rate, the CPU per record of each server and of this
 * client (from /proc), and the p50/p90/p99, so the two probes' lines compare directly.
 *
 *   node --import tsx scripts/bench/replicated/jetstream-probe.ts [--n 3000] [--warm 20000] [--warm-awaited 6000]
 */
import { loadavg } from 'node:os';
import { argValue, percentile, procCpuSecs, windowPercentiles } from '@felix/testing-bench-kit';
import { tempDir, waitFor } from '@felix/testing-harness';
import { loadOrCreateDevCertificate } from '@felix/transport';
import { NATS_CLUSTER_FORM_DEADLINE_MS, startNatsCluster } from './nats-cluster.js';

const N = Number(argValue('--n', '3000'));
const WARM = Number(argValue('--warm', '20000'));
/** Untimed awaited publishes after those, one at a time: the awaited path warms on its own
 *  (Felix's p50 fell for its first 4,000 under `periodic`, 3,000 to 6,000 under `onCommit`:
 *  docs/perf.md, session 27). */
const WARM_AWAITED = Number(argValue('--warm-awaited', '6000'));
const DATA = new Uint8Array(1024).fill(0x61);

/** CPU time (user + system) of a process so far, in µs (the bench kit's /proc reading). */
const cpuUs = (pid: number | undefined): number =>
  pid === undefined ? 0 : procCpuSecs(pid) * 1_000_000;

const dir = await tempDir('felix-jetstream-probe-');
const { certPem, keyPem } = await loadOrCreateDevCertificate(`${dir.path}/tls`);
const nats = await startNatsCluster(`${dir.path}/nats`, { certPem, keyPem });
try {
  const admin = await nats.connect();
  const jsm = await admin.jetstreamManager();
  await waitFor(
    () =>
      jsm.streams
        .add({ name: 'PROBE', subjects: ['probe.>'], num_replicas: 3 })
        .then(() => true)
        .catch(() => false),
    'the R3 stream to be added',
    NATS_CLUSTER_FORM_DEADLINE_MS,
  );
  const leader = await waitFor(
    async () => (await jsm.streams.info('PROBE')).cluster?.leader ?? '',
    'the stream to elect its leader',
    NATS_CLUSTER_FORM_DEADLINE_MS,
  );
  const nc = await nats.connect();
  const js = nc.jetstream();
  await waitFor(
    () => js.publish('probe.x', DATA).then(() => true),
    'a first publish',
    NATS_CLUSTER_FORM_DEADLINE_MS,
  );
  await Promise.all(
    Array.from({ length: 64 }, async (_, lane) => {
      for (let i = lane; i < WARM; i += 64) await js.publish('probe.x', DATA);
    }),
  );
  for (let i = 0; i < WARM_AWAITED; i++) await js.publish('probe.x', DATA);
  const pids = nats.servers.map((s) => s.proc?.pid);
  const cpu0 = pids.map(cpuUs);
  const own0 = process.cpuUsage();
  const times: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await js.publish('probe.x', DATA);
    times.push((performance.now() - t) * 1000);
  }
  const wallS = (performance.now() - t0) / 1000;
  const own = process.cpuUsage(own0);
  const perRecord = pids.map((p, i) => ((cpuUs(p) - cpu0[i]!) / N).toFixed(0));
  const leaderIndex = nats.servers.findIndex((s) => s.name === leader);
  console.log(
    `${(N / wallS).toFixed(0)} rec/s; CPU µs per record: servers ${perRecord.join(' / ')} (leader ${leaderIndex}), client ${((own.user + own.system) / N).toFixed(0)}`,
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
  await nc.close();
  await admin.close();
} finally {
  await nats.stop();
  await dir.cleanup();
}
