/**
 * Consume and ack one job at a time, as a newcomer writes it from each client's README (defaults,
 * no batching options), side by side in one run: N jobs of 1 KiB are published first; then one
 * consumer takes one job and acknowledges it before taking the next.
 *
 * - Felix: `const [m] = await group.poll({ max: 1 }); await m.ack();` over TLS, on two durable
 *   streams of one broker: one whose groups' cursor is `onCommit` (the default: an ack is
 *   answered once the cursor covering it is fsynced) and one with `group_cursor_fsync: periodic`
 *   (an ack is answered once settled in memory; the cursor is fsynced every 250 ms).
 * - Redis Streams (ioredis, 127.0.0.1:6379): `XREADGROUP ... COUNT 1 ... >` then `XACK`.
 * - JetStream (nats.js, 127.0.0.1:4222): a durable pull consumer with explicit acks,
 *   `consumer.next()` then `m.ackAck()` (the ack awaits the server's answer).
 * - The same two with TLS on (`redis-tls`, `jetstream-tls`): a redis-server and a nats-server
 *   this run starts itself with the broker's development certificate (tls-peers.ts), the
 *   clients given `tls: { ca }` and nothing else. Every Felix connection is TLS, so these are
 *   the judged peers (the same channel security); the plaintext shared servers are shown.
 *
 * Each round gives every system a fresh group over the same N jobs, one after another; rows are
 * the medians over rounds (jobs/s, p50/p99 of one job's poll + ack, and CPU per job of this
 * process and of the server: /proc for the broker and nats-server, `INFO cpu` for Redis; the
 * Redis and NATS servers are shared, so theirs counts anyone else's use too). Before the timed rounds,
 * one untimed round of FELIX_BENCH_WARMUP jobs per system (a running worker is warm).
 *
 *   node --import tsx scripts/bench/natural/consume.ts
 *   (FELIX_BENCH_N jobs, default 10,000; FELIX_BENCH_ROUNDS, default 3; FELIX_BENCH_WARMUP,
 *    default 2,000; FELIX_BENCH_SYSTEMS, default
 *    felix-commit,felix-periodic,redis-tls,redis,jetstream-tls,jetstream)
 *
 * The table's last column is Felix periodic's rate over each peer's (judged: the TLS peers),
 * medians of per-round pairs (each round runs every system back to back).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { type FelixClient, connect } from '@felix/client';
import {
  latencies,
  markdownTable,
  median,
  pairedRatios,
  percentile,
  procCpuSecs,
  startBroker,
} from '@felix/testing-bench-kit';
import { Redis } from 'ioredis';
import {
  AckPolicy,
  type JetStreamClient,
  type JetStreamManager,
  connect as natsConnect,
} from 'nats';
import { startTlsPeers } from './tls-peers.js';

const N = Number(process.env.FELIX_BENCH_N ?? 10_000);
const ROUNDS = Number(process.env.FELIX_BENCH_ROUNDS ?? 3);
const WARMUP = Number(process.env.FELIX_BENCH_WARMUP ?? 2_000);
const SYSTEMS = (
  process.env.FELIX_BENCH_SYSTEMS ??
  'felix-commit,felix-periodic,redis-tls,redis,jetstream-tls,jetstream'
).split(',');
const data = new Uint8Array(1024).fill(7);

interface System {
  name: string;
  durability: string;
  /** CPU seconds the server process has used so far. */
  serverCpu(): Promise<number>;
  /** Removes what the run left on a shared server. */
  cleanup?(): Promise<unknown>;
  /** A fresh group over the N jobs; answers the loop's one step (take one job, ack it). */
  group(label: string): Promise<() => Promise<void>>;
}

interface Row {
  rate: number[];
  p50: number[];
  p99: number[];
  /** CPU µs per job of this process and of the server. */
  clientCpu: number[];
  serverCpu: number[];
}

// ---- Felix ----
const broker = await startBroker({
  config: `streams:
  - { tenant: t1, name: jobs, durable: true }
  - { tenant: t1, name: jobs_periodic, durable: true, group_cursor_fsync: periodic }
`,
});

async function felixSystem(
  felix: FelixClient,
  stream: string,
  name: string,
  durability: string,
): Promise<System> {
  for (let i = 0; i < N; i += 500) {
    await felix.publishBatch(
      stream,
      Array.from({ length: Math.min(500, N - i) }, () => data),
    );
  }
  return {
    name,
    durability,
    serverCpu: async () => procCpuSecs(broker.pid),
    async group(label) {
      const group = felix.group(stream, label, { shard: 0 });
      return async () => {
        const [msg] = await group.poll({ max: 1 });
        await msg!.ack();
      };
    },
  };
}

// ---- Redis Streams ----
async function redisSystem(redis: Redis, tls: boolean): Promise<System> {
  const key = `felix-bench-consume-${Date.now()}`;
  for (let i = 0; i < N; i += 500) {
    const p = redis.pipeline();
    for (let j = i; j < Math.min(N, i + 500); j++) p.xaddBuffer(key, '*', 'job', Buffer.from(data));
    await p.exec();
  }
  return {
    name: `Redis Streams ${tls ? 'TLS' : 'plaintext'}, XREADGROUP COUNT 1 + XACK`,
    durability: 'memory only (no AOF, no RDB)',
    async serverCpu() {
      const info = await redis.info('cpu');
      const field = (f: string) => Number(new RegExp(`^${f}:([0-9.]+)`, 'm').exec(info)?.[1]);
      return field('used_cpu_user') + field('used_cpu_sys');
    },
    cleanup: () => redis.del(key),
    async group(label) {
      await redis.xgroup('CREATE', key, label, '0');
      return async () => {
        const res = (await redis.xreadgroup(
          'GROUP',
          label,
          'worker',
          'COUNT',
          1,
          'STREAMS',
          key,
          '>',
        )) as [string, [string, string[]][]][];
        await redis.xack(key, label, res[0]![1][0]![0]);
      };
    },
  };
}

// ---- JetStream ----
async function jetStreamSystem(
  jsm: JetStreamManager,
  js: JetStreamClient,
  tls: boolean,
  pid: () => number | null,
): Promise<System> {
  const stream = `FELIXCONSUME${Date.now()}`;
  await jsm.streams.add({ name: stream, subjects: [`${stream}.jobs`] });
  for (let i = 0; i < N; i += 256) {
    const part = Array.from({ length: Math.min(256, N - i) }, () =>
      js.publish(`${stream}.jobs`, data),
    );
    await Promise.all(part);
  }
  return {
    name: `JetStream ${tls ? 'TLS' : 'plaintext'} pull consumer, next() + ackAck()`,
    durability: 'file store; no fsync per ack (nats-server syncs its files on a timer)',
    serverCpu: async () => {
      const p = pid();
      return p === null ? Number.NaN : procCpuSecs(p);
    },
    cleanup: () => jsm.streams.delete(stream),
    async group(label) {
      await jsm.consumers.add(stream, { durable_name: label, ack_policy: AckPolicy.Explicit });
      const consumer = await js.consumers.get(stream, label);
      return async () => {
        const m = await consumer.next();
        await m!.ackAck();
      };
    },
  };
}

const felix = await connect({
  servers: [broker.url('tls')],
  tenant: 't1',
  tls: { fingerprint: broker.fingerprint },
});
const redis = new Redis({ host: '127.0.0.1', port: 6379 });
const nc = await natsConnect({ servers: '127.0.0.1:4222' });
const systems: System[] = [];
if (SYSTEMS.includes('felix-commit')) {
  const durability = 'cursor fsynced before each ack is answered';
  systems.push(
    await felixSystem(felix, 'jobs', 'Felix, poll({ max: 1 }) + ack(), onCommit', durability),
  );
}
if (SYSTEMS.includes('felix-periodic')) {
  const durability = 'ack answered from memory, cursor fsynced every 250 ms';
  systems.push(
    await felixSystem(
      felix,
      'jobs_periodic',
      'Felix, poll({ max: 1 }) + ack(), periodic',
      durability,
    ),
  );
}
/** The shared nats-server (127.0.0.1:4222): a process named nats-server that is not ours. */
function sharedNatsPid(ours: number | undefined): number | null {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === ours) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'nats-server')
        return Number(entry);
    } catch {
      // the process ended while we looked
    }
  }
  return null;
}

const peers = SYSTEMS.some((s) => s.endsWith('-tls')) ? await startTlsPeers() : null;
const redisTls = peers?.redis() ?? null;
const ncTls = peers === null ? null : await peers.nats();
if (SYSTEMS.includes('redis-tls')) systems.push(await redisSystem(redisTls!, true));
if (SYSTEMS.includes('redis')) systems.push(await redisSystem(redis, false));
if (SYSTEMS.includes('jetstream-tls')) {
  const js = await jetStreamSystem(
    await ncTls!.jetstreamManager(),
    ncTls!.jetstream(),
    true,
    () => peers!.natsPid,
  );
  systems.push(js);
}
if (SYSTEMS.includes('jetstream')) {
  const js = await jetStreamSystem(await nc.jetstreamManager(), nc.jetstream(), false, () =>
    sharedNatsPid(peers?.natsPid),
  );
  systems.push(js);
}

const rows = new Map<System, Row>(
  systems.map((s) => [s, { rate: [], p50: [], p99: [], clientCpu: [], serverCpu: [] }]),
);
for (const s of systems) {
  const step = await s.group('warmup');
  await latencies(Math.min(WARMUP, N), step);
}
console.log(`N=${N} jobs of 1 KiB, ${ROUNDS} round(s), warm-up ${WARMUP} jobs per system`);
for (let r = 0; r < ROUNDS; r++) {
  const load = loadavg()[0]!.toFixed(1);
  for (const s of systems) {
    const step = await s.group(`round${r}`);
    const server0 = await s.serverCpu();
    const client0 = process.cpuUsage();
    const t0 = performance.now();
    const lat = await latencies(N, step);
    const rate = N / ((performance.now() - t0) / 1000);
    const client = process.cpuUsage(client0);
    const row = rows.get(s)!;
    row.clientCpu.push((client.user + client.system) / N);
    row.serverCpu.push((((await s.serverCpu()) - server0) * 1e6) / N);
    row.rate.push(rate);
    row.p50.push(percentile(lat, 50));
    row.p99.push(percentile(lat, 99));
    console.log(
      `round ${r + 1} (load ${load}) ${s.name}: ${Math.round(rate)} jobs/s, p50 ${Math.round(percentile(lat, 50))} µs, p99 ${Math.round(percentile(lat, 99))} µs`,
    );
  }
}
/** Felix periodic's rate over `s`'s and `s`'s p50 over Felix's, medians of per-round pairs. */
function versus(s: System): string {
  const felix = systems.find((x) => x.name.endsWith('periodic'));
  if (felix === undefined || s.name.startsWith('Felix')) return '';
  const f = rows.get(felix)!;
  const o = rows.get(s)!;
  const rate = pairedRatios(f.rate, o.rate).median;
  const p50 = pairedRatios(o.p50, f.p50).median;
  const role = s.name.includes(' TLS') ? 'judged' : 'shown';
  return `${rate.toFixed(2)}x; ${p50.toFixed(2)}x (${role})`;
}
const us = (x: number) => `${Math.round(x).toLocaleString('en-US')} µs`;
console.log(
  `\n${markdownTable(
    [
      'loop',
      'jobs/s, median',
      'p50 per job',
      'p99 per job',
      'CPU per job: client / server',
      'durability of an answered ack',
      'Felix periodic / this (rate; p50)',
    ],
    systems.map((s) => {
      const row = rows.get(s)!;
      return [
        s.name,
        Math.round(median(row.rate)).toLocaleString('en-US'),
        us(median(row.p50)),
        us(median(row.p99)),
        `${us(median(row.clientCpu))} / ${us(median(row.serverCpu))}`,
        s.durability,
        versus(s),
      ];
    }),
  )}`,
);
for (const s of systems) await s.cleanup?.();
await felix.close();
redis.disconnect();
redisTls?.disconnect();
await nc.close();
await ncTls?.close();
await peers?.stop();
await broker.stop();
