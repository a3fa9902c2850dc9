/**
 * Splits the cost of one awaited replicated publish (docs/perf.md, "Replicated publish
 * (session 16)"): Felix alone, one cluster per case, awaited publish p50/p99 for each of
 * ingress at the leader or at a follower (forwarded), `leader` or `quorum` consistency, and
 * `periodic` or `onCommit` fsync.
 *
 *   node --import tsx scripts/bench/replicated/split.ts
 *
 * FELIX_BENCH_LATENCY_N (default 300) awaited publishes per case; FELIX_BENCH_CASES picks cases
 * (`ingress/consistency/fsync`, comma separated). FELIX_TRACE_PUBLISH=1 writes the client's send
 * and receive stamps and copies each broker's log to /tmp/trace-<case>* (the brokers' per-stage
 * lines came from a trace patch not kept in the tree: docs/perf.md, "Replicated publish (session
 * 16)").
 */
import { copyFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { startCluster } from '@felix/testing-cluster';
import { tempDir } from '@felix/testing-harness';

const TRACE = process.env.FELIX_TRACE_PUBLISH === '1';
/** With FELIX_BENCH_WINDOW=n: n publishes 64 in flight instead, reported in rec/s. */
const WINDOW = Number(process.env.FELIX_BENCH_WINDOW ?? 0);
const N = Number(process.env.FELIX_BENCH_LATENCY_N ?? 300);
const DATA = new Uint8Array(1024).fill(0x61);
const ALL = [
  'follower/quorum/onCommit',
  'leader/quorum/onCommit',
  'follower/leader/onCommit',
  'leader/leader/onCommit',
  'follower/quorum/periodic',
  'leader/quorum/periodic',
];
const cases = (process.env.FELIX_BENCH_CASES ?? ALL.join(',')).split(',');

async function one(dir: string, spec: string): Promise<{ p50: number; p99: number }> {
  const [ingress, consistency, fsync] = spec.split('/') as [string, 'leader' | 'quorum', string];
  const cluster = await startCluster({
    brokers: 3,
    replication: true,
    transport: 'tls',
    dir,
    streams: [{ name: 'bench', shards: 1, replicationFactor: 3, consistency }],
    env: { FELIX_DURABLE_FSYNC_MODE: fsync, ...(TRACE ? { FELIX_TRACE_PUBLISH: '1' } : {}) },
  });
  try {
    await cluster.waitServed();
    const leader = await cluster.leaderOf('bench');
    const node = cluster.nodes.find((n) => (n.id === leader?.id) === (ingress === 'leader'))!;
    // No client routing: the ingress is the broker named, so a follower forwards.
    const client = await cluster.connect({ servers: [node.url('tls')], routing: false });
    for (let i = 0; i < 50; i++) await client.publish('bench', DATA);
    if (WINDOW > 0) {
      const started = performance.now();
      let next = 0;
      const worker = async () => {
        while (next < WINDOW) {
          next++;
          await client.publish('bench', DATA);
        }
      };
      await Promise.all(Array.from({ length: 64 }, worker));
      const rate = WINDOW / ((performance.now() - started) / 1000);
      await client.close();
      return { p50: rate, p99: 0 };
    }
    const out: number[] = [];
    const stamps: string[] = [];
    const wall = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
    for (let i = 0; i < N; i++) {
      const t = performance.now();
      if (TRACE) stamps.push(`TRACE client client_send ${wall()}`);
      await client.publish('bench', DATA);
      if (TRACE) stamps.push(`TRACE client client_recv ${wall()}`);
      out.push((performance.now() - t) * 1000);
    }
    await client.close();
    if (TRACE) {
      const logs = cluster.nodes.map((n) => `${n.id} ${n.logPath}`);
      writeFileSync(`/tmp/trace-${spec.replaceAll('/', '-')}.txt`, [...logs, ...stamps].join('\n'));
      for (const n of cluster.nodes)
        copyFileSync(n.logPath, `/tmp/trace-${spec.replaceAll('/', '-')}-${n.id}.log`);
    }
    out.sort((a, b) => a - b);
    return { p50: out[Math.floor(out.length / 2)]!, p99: out[Math.floor(out.length * 0.99)]! };
  } finally {
    await cluster.shutdown();
  }
}

const scratch = await tempDir('felix-bench-split-');
console.log(`| case (ingress/consistency/fsync) | p50 µs | p99 µs | load |`);
console.log(`| --- | ---: | ---: | ---: |`);
for (const [i, spec] of cases.entries()) {
  const r = await one(join(scratch.path, String(i)), spec);
  const load = loadavg()[0]!.toFixed(2);
  console.log(`| ${spec} | ${Math.round(r.p50)} | ${Math.round(r.p99)} | ${load} |`);
}
await scratch.cleanup();
