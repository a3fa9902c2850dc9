/**
 * Pub/sub benchmark: Felix (TLS and QUIC) side by side with NATS on this machine, in one run.
 *
 *   node --import tsx scripts/bench/pubsub/main.ts        (build first: pnpm build)
 *
 * Scenarios: pub→sub throughput (1 KiB and 100 B, fanout 1 and 10); acked publish latency
 * against NATS request/reply; durable publish with an fsync before every ack (`onCommit`, 64 in
 * flight) against JetStream `js.publish` with 64 in flight. Prints a Markdown table, writes
 * results.json and pubsub.svg next to this file, and records the broker's RSS.
 * FELIX_BENCH_QUICK=1 shrinks every count for a smoke run. FELIX_BENCH_ROUNDS=N (default 1)
 * runs every scenario N times, the systems interleaved within each round, and reports the median.
 * FELIX_BENCH_ONLY=throughput,latency,durable picks scenario groups. FELIX_BENCH_BROKER_ARGS adds
 * node flags to the broker (say `--cpu-prof --cpu-prof-dir=/tmp/prof`; written at its exit).
 * The throughput publisher uses `publisher().send()` (acked per batch, no promise per message,
 * `ready()` when it answers false, one `flush()` at the end), the NATS one `publish()` with a
 * `flush()` every 10,000 messages: each client's own fire-and-forget idiom. FELIX_BENCH_BATCH
 * (default 512) is the Felix publisher's records per batch.
 * FELIX_BENCH_WARMUP=N (default 3) runs N untimed passes of the throughput cases for every system
 * first, so the rounds measure warm code (a cold JIT costs Felix and nats.js alike; on two busy
 * cores one pass left Felix's rounds still speeding up, docs/perf.md session 9).
 * The throughput clients of each system (NATS core, Felix TLS, Felix QUIC) run in a process of
 * their own (this script again, with FELIX_BENCH_CLIENT_ROLE=nats, tls or quic, answering one run
 * per stdin line), so no client's garbage and heap sizing weigh on another's rounds;
 * FELIX_BENCH_CLIENTS=shared runs them all in this process, as before session 9.
 * FELIX_BENCH_CASES=1024x1,100x10 keeps only those throughput cases (bytes x fanout). Every Felix
 * throughput run prints the CPU per message of its client process (publisher and subscribers) and
 * of the broker (from /proc, 10 ms ticks). FELIX_BENCH_NATS=0 skips NATS in the throughput and durable runs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg as osLoadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { type FelixClient, connect as felixConnect } from '@felix/client';
import {
  type BenchBroker,
  barChartSvg,
  markdownTable,
  median,
  padCells,
  pairedRatios,
  percentile as pct,
  pidNamed,
  procCpuSecs,
  rssMiB,
  startBroker,
} from '@felix/testing-bench-kit';
import { type NatsConnection, connect as natsConnect } from 'nats';

const HERE = import.meta.dirname;
const QUICK = process.env.FELIX_BENCH_QUICK === '1';
const NATS_URL = process.env.NATS_URL ?? '127.0.0.1:4222';
const TIMEOUT_MS = 60_000;
/** How long subscribers get after the last ack before an end marker is published for them. */
const MARKER_GRACE_MS = 2_000;
const ROUNDS = Math.max(1, Number(process.env.FELIX_BENCH_ROUNDS ?? 1));
/** Untimed warm-up passes of the throughput cases before the timed rounds (FELIX_BENCH_WARMUP). */
const WARMUP = Math.max(0, Number(process.env.FELIX_BENCH_WARMUP ?? 3));
/** FELIX_BENCH_CLIENTS=shared: every client in this process (the default gives each system's
 *  throughput clients a process of their own). */
const SHARED_CLIENTS = process.env.FELIX_BENCH_CLIENTS === 'shared';
/** A system whose throughput clients get a process of their own: NATS core, Felix over each transport. */
type ClientSystem = 'nats' | 'tls' | 'quic';
/** Set in a client process: which system's throughput runs it serves. */
const ROLE = process.env.FELIX_BENCH_CLIENT_ROLE as ClientSystem | undefined;
const ONLY = new Set(
  (process.env.FELIX_BENCH_ONLY ?? 'throughput,latency,durable').split(',').map((s) => s.trim()),
);
const TRANSPORTS = (process.env.FELIX_BENCH_TRANSPORTS ?? 'tls,quic')
  .split(',')
  .map((s) => s.trim()) as Array<'tls' | 'quic'>;
/** FELIX_BENCH_SCALE=N (default 3) multiplies the throughput cases' message counts: 300,000 1 KiB
 *  messages make a round of about a second; a third of that was decided by single GC pauses. */
const SCALE = Math.max(1, Number(process.env.FELIX_BENCH_SCALE ?? 3));
/** FELIX_BENCH_NATS=0 skips the NATS throughput and durable runs (a profile then shows Felix alone). */
const NO_NATS = process.env.FELIX_BENCH_NATS === '0';
/** FELIX_BENCH_CASES=1024x1,1024x10 keeps only those throughput cases (size x fanout). */
const CASES = process.env.FELIX_BENCH_CASES
  ? new Set(process.env.FELIX_BENCH_CASES.split(',').map((s) => s.trim()))
  : null;

interface Row {
  scenario: string;
  system: string;
  value: number;
  unit: string;
  note?: string;
}
const rows: Row[] = [];

function record(row: Row): void {
  rows.push(row);
  console.log(
    `${padCells([row.scenario, row.system, fmt(row.value), row.unit], [34, 16, -10, 0])}${row.note ? `  (${row.note})` : ''}`,
  );
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1);
}

const loadavg = () =>
  osLoadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

// ---- the broker ----------------------------------------------------------------------------

/** What a client process needs of the broker: where it listens and whose CPU to read. */
interface BrokerRef {
  pid: number;
  port: number;
  fingerprint: string;
}

function startPubsubBroker(): Promise<BenchBroker> {
  return startBroker({
    config: [
      'streams:',
      '  - { tenant: t1, name: bench }',
      '  - { tenant: t1, name: durable, durable: true, fsync: onCommit }',
      '',
    ].join('\n'),
  });
}

/** Sums of the broker's Prometheus samples whose name (with labels) starts with each prefix. */
async function metrics(b: BenchBroker, prefixes: string[]): Promise<number[]> {
  const text = await b.metricsText();
  return prefixes.map((p) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(p))
      .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0),
  );
}

/** The local nats-server's pid (its CPU is read from /proc like the broker's), or null. */
const natsServerPid = () => pidNamed('nats-server');

function felix(b: BrokerRef, transport: 'tls' | 'quic'): Promise<FelixClient> {
  return felixConnect({
    servers: [`${transport}://127.0.0.1:${b.port}`],
    tenant: 't1',
    tls: { fingerprint: b.fingerprint },
  });
}

// ---- pub→sub throughput --------------------------------------------------------------------

async function felixThroughput(
  b: BrokerRef,
  transport: 'tls' | 'quic',
  size: number,
  fanout: number,
  count: number,
): Promise<number> {
  const subs = await Promise.all(Array.from({ length: fanout }, () => felix(b, transport)));
  const pubClient = await felix(b, transport);
  const start = await pubClient.publish('bench', 'mark');
  const from = start.offset! + 1;
  const last = from + count - 1;
  const done = subs.map(async (c) => {
    let n = 0;
    for await (const ev of c.subscribe('bench', { from, shard: 0 })) {
      if (ev.offset <= last) n++; // an end marker past `last` is not a record of the run
      if (ev.offset >= last) break;
    }
    return n;
  });
  const payload = new Uint8Array(size).fill(97);
  const cpu0 = process.cpuUsage();
  const brokerCpu0 = procCpuSecs(b.pid);
  const t0 = performance.now();
  const pub = pubClient.publisher('bench', {
    lingerMs: 1,
    maxBatchRecords: Number(process.env.FELIX_BENCH_BATCH ?? 512),
    ack: true,
  });
  // Like the NATS loop: publish without a promise per message. Every batch is still acked by the
  // broker; `ready()` is the publisher's backpressure (at most PUBLISHER_UNACKED_RECORDS_HIGH
  // records unacknowledged) and `flush()` waits for every ack and throws any failure.
  for (let i = 0; i < count; i++) {
    if (!pub.send(payload)) await pub.ready();
  }
  await pub.flush();
  // A subscriber whose queue overflowed may have lost the last batch, and with it the offset it
  // stops at: after a grace, publish a marker past `last` now and then so it ends (what it lost
  // is reported below) instead of waiting out the timeout.
  let finished = false;
  let timer: NodeJS.Timeout | undefined;
  const nudge = (): void => {
    timer = setTimeout(() => {
      if (finished) return;
      void pubClient
        .publish('bench', 'end-marker')
        // The marker only wakes the subscriber; a failure is seen as the round timing out.
        .catch(() => undefined)
        .finally(() => {
          if (!finished) nudge();
        });
    }, MARKER_GRACE_MS);
  };
  nudge();
  const received = await withTimeout(Promise.all(done), TIMEOUT_MS, 'subscribers').finally(() => {
    finished = true;
    clearTimeout(timer);
  });
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const brokerCpu = procCpuSecs(b.pid) - brokerCpu0;
  // Memory after the round, of this client process and the broker: a run whose rounds slow
  // down shows here whether either process kept growing.
  const m = process.memoryUsage();
  const mib = (n: number): string => (n / 1024 / 1024).toFixed(0);
  console.log(
    `    CPU per message: client ${((cpu.user + cpu.system) / count).toFixed(2)} µs, broker ${((brokerCpu * 1e6) / count).toFixed(2)} µs (wall ${((secs * 1e6) / count).toFixed(2)} µs); memory MiB: client rss ${mib(m.rss)} heap ${mib(m.heapUsed)} external ${mib(m.external)}, broker rss ${rssMiB(b.pid).rss.toFixed(0)}`,
  );
  await Promise.all([...subs, pubClient].map((c) => c.close()));
  const lost = received.reduce((a, n) => a + (count - n), 0);
  if (lost > 0) console.log(`  note: ${lost} records missing across subscribers`);
  return count / secs;
}

async function natsThroughput(size: number, fanout: number, count: number): Promise<number> {
  const subs = await Promise.all(
    Array.from({ length: fanout }, () => natsConnect({ servers: NATS_URL })),
  );
  const pubConn = await natsConnect({ servers: NATS_URL });
  const subject = `bench.${Math.random().toString(36).slice(2)}`;
  const done = subs.map(
    (nc) =>
      new Promise<void>((resolveDone) => {
        let n = 0;
        nc.subscribe(subject, {
          callback: () => {
            if (++n === count) resolveDone();
          },
        });
      }),
  );
  await Promise.all(subs.map((nc) => nc.flush()));
  const payload = new Uint8Array(size).fill(97);
  const server = natsServerPid();
  const cpu0 = process.cpuUsage();
  const serverCpu0 = server === null ? 0 : procCpuSecs(server);
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    pubConn.publish(subject, payload);
    if (i % 10_000 === 9_999) await pubConn.flush();
  }
  await pubConn.flush();
  await withTimeout(Promise.all(done), TIMEOUT_MS, 'nats subscribers');
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const serverCpu = server === null ? Number.NaN : procCpuSecs(server) - serverCpu0;
  console.log(
    `    CPU per message: client ${((cpu.user + cpu.system) / count).toFixed(2)} µs, nats-server ${((serverCpu * 1e6) / count).toFixed(2)} µs (wall ${((secs * 1e6) / count).toFixed(2)} µs)`,
  );
  await Promise.all([...subs, pubConn].map((nc) => nc.close()));
  return count / secs;
}

// ---- acked publish latency -----------------------------------------------------------------

async function felixAckLatency(
  b: BenchBroker,
  transport: 'tls' | 'quic',
  samples: number,
): Promise<number[]> {
  const c = await felix(b, transport);
  const payload = new Uint8Array(100);
  const out: number[] = [];
  for (let i = 0; i < samples + 500; i++) {
    const t0 = process.hrtime.bigint();
    await c.publish('bench', payload);
    if (i >= 500) out.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  await c.close();
  return out.sort((a, z) => a - z);
}

async function natsRequestLatency(samples: number): Promise<number[]> {
  const responder = await natsConnect({ servers: NATS_URL });
  const requester = await natsConnect({ servers: NATS_URL });
  const subject = `echo.${Math.random().toString(36).slice(2)}`;
  responder.subscribe(subject, { callback: (_e, m) => m.respond() });
  await responder.flush();
  const payload = new Uint8Array(100);
  const out: number[] = [];
  for (let i = 0; i < samples + 500; i++) {
    const t0 = process.hrtime.bigint();
    await requester.request(subject, payload, { timeout: 5000 });
    if (i >= 500) out.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  await Promise.all([responder.close(), requester.close()]);
  return out.sort((a, z) => a - z);
}

// ---- durable publishes, 64 in flight -------------------------------------------------------

async function felixDurable(
  b: BenchBroker,
  transport: 'tls' | 'quic',
  seconds: number,
): Promise<number> {
  const c = await felix(b, transport);
  const payload = new Uint8Array(100);
  let n = 0;
  const watched = [
    'felix_broker_durable_advances_total',
    'felix_broker_append_seconds_sum{durable="true"',
    'felix_broker_append_seconds_count{durable="true"',
  ];
  const before = await metrics(b, watched);
  const cpu0 = process.cpuUsage();
  const brokerCpu0 = procCpuSecs(b.pid);
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (performance.now() < until) {
        await c.publish('durable', payload);
        n++;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const brokerCpu = procCpuSecs(b.pid) - brokerCpu0;
  const after = await metrics(b, watched);
  await c.close();
  const [syncs, sum, count] = after.map((v, i) => v - before[i]!) as [number, number, number];
  // A cycle is one group commit: the append (write and fdatasync, the disk's share) and the
  // rest (acks out, the client's turnaround, publishes in), which the disk's drift leaves alone.
  const cycleUs = (seconds * 1e6) / Math.max(1, syncs);
  const appendUs = (sum / Math.max(1, count)) * 1e6;
  const perRecord = (secs: number) => ((secs * 1e6) / Math.max(1, n)).toFixed(1);
  console.log(
    `    ${transport}: ${Math.round(syncs / seconds)} fsyncs/s, ${(n / Math.max(1, syncs)).toFixed(1)} records per fsync, broker append ${(appendUs / 1e3).toFixed(2)} ms mean; cycle ${Math.round(cycleUs)} µs, outside the append ${Math.round(cycleUs - appendUs)} µs; CPU per record: bench ${perRecord((cpu.user + cpu.system) / 1e6)} µs, broker ${perRecord(brokerCpu)} µs`,
  );
  return n / seconds;
}

async function jetstreamDurable(seconds: number): Promise<number> {
  const nc: NatsConnection = await natsConnect({ servers: NATS_URL });
  const jsm = await nc.jetstreamManager();
  const name = `FELIXBENCH${Date.now()}`;
  await jsm.streams.add({ name, subjects: [`${name}.x`] });
  const js = nc.jetstream();
  const payload = new Uint8Array(100);
  let n = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (performance.now() < until) {
        await js.publish(`${name}.x`, payload);
        n++;
      }
    }),
  );
  await jsm.streams.delete(name);
  await nc.close();
  return n / seconds;
}

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// ---- client processes ----------------------------------------------------------------------

interface ThroughputJob {
  size: number;
  fanout: number;
  count: number;
}

/** This script again, serving one system's throughput runs: a job per stdin line, each answered
 *  by a `@@`-prefixed JSON line; its other output (the CPU lines) is passed on as it comes. */
class ClientProcess {
  private readonly proc: ChildProcess;
  private answer: ((line: string) => void) | null = null;
  private readonly exited: Promise<number | null>;

  constructor(role: ClientSystem, broker: BrokerRef) {
    this.proc = spawn(process.execPath, [...process.execArgv, process.argv[1]!], {
      env: {
        ...process.env,
        FELIX_BENCH_CLIENT_ROLE: role,
        FELIX_BENCH_BROKER_REF: JSON.stringify({
          pid: broker.pid,
          port: broker.port,
          fingerprint: broker.fingerprint,
        }),
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.exited = new Promise((r) => this.proc.once('exit', (code) => r(code)));
    createInterface({ input: this.proc.stdout! }).on('line', (line) => {
      if (line.startsWith('@@')) this.answer?.(line.slice(2));
      else console.log(line);
    });
  }

  async run(job: ThroughputJob): Promise<number> {
    const line = await Promise.race([
      new Promise<string>((r) => {
        this.answer = r;
        this.proc.stdin!.write(`${JSON.stringify(job)}\n`);
      }),
      this.exited.then((code) => {
        throw new Error(`a client process exited with ${code}`);
      }),
    ]);
    this.answer = null;
    const a = JSON.parse(line) as { rate?: number; error?: string };
    if (a.error !== undefined) throw new Error(a.error);
    return a.rate!;
  }

  async close(): Promise<void> {
    this.proc.stdin!.end();
    await this.exited;
  }
}

if (ROLE !== undefined) {
  const ref = JSON.parse(process.env.FELIX_BENCH_BROKER_REF!) as BrokerRef;
  for await (const line of createInterface({ input: process.stdin })) {
    const job = JSON.parse(line) as ThroughputJob;
    try {
      const rate =
        ROLE === 'nats'
          ? await natsThroughput(job.size, job.fanout, job.count)
          : await felixThroughput(ref, ROLE, job.size, job.fanout, job.count);
      process.stdout.write(`@@${JSON.stringify({ rate })}\n`);
    } catch (err) {
      process.stdout.write(`@@${JSON.stringify({ error: String(err) })}\n`);
    }
  }
  process.exit(0);
}

// ---- main ----------------------------------------------------------------------------------

const broker = await startPubsubBroker();
/** One process per system for the throughput runs (none when FELIX_BENCH_CLIENTS=shared). */
const clients = new Map<ClientSystem, ClientProcess>();
if (!SHARED_CLIENTS && ONLY.has('throughput')) {
  for (const system of [...(NO_NATS ? [] : ['nats' as const]), ...TRANSPORTS])
    clients.set(system, new ClientProcess(system, broker));
}
/** A throughput run of `system`: in its client process, or here when the clients are shared. */
function throughput(system: ClientSystem, job: ThroughputJob): Promise<number> {
  const c = clients.get(system);
  if (c !== undefined) return c.run(job);
  return system === 'nats'
    ? natsThroughput(job.size, job.fanout, job.count)
    : felixThroughput(broker, system, job.size, job.fanout, job.count);
}
console.log(
  `broker pid ${broker.pid}, port ${broker.port}; ${NO_NATS ? 'NATS skipped (FELIX_BENCH_NATS=0)' : `NATS at ${NATS_URL}`}; ${ROUNDS} round(s)${QUICK ? '; QUICK run' : ''}\n`,
);
/** Samples per scenario and system across rounds; the median becomes the row. */
/** Messages one throughput run publishes (fanout 10 delivers ten times as many). */
function throughputCount(size: number, fanout: number): number {
  if (QUICK) return 5_000;
  const base = (size === 1024 ? 100_000 : 200_000) * SCALE;
  return fanout === 10 ? base / 4 : base;
}

const samples = new Map<string, { row: Omit<Row, 'value'>; values: number[] }>();
function sample(row: Row): void {
  console.log(
    `  ${padCells([row.scenario, row.system, fmt(row.value), row.unit], [34, 16, -10, 0])}`,
  );
  const k = `${row.scenario}\u0000${row.system}`;
  const { value, ...rest } = row;
  const s = samples.get(k) ?? { row: rest, values: [] };
  s.values.push(value);
  samples.set(k, s);
}
try {
  // Untimed warm-up drains of every throughput case, for NATS and Felix alike, so the timed
  // rounds measure steady state rather than the JIT compiling both clients and the broker.
  if (ONLY.has('throughput') && WARMUP > 0) {
    console.log(`warm-up: ${WARMUP} untimed pass(es) of the throughput cases`);
    for (let w = 0; w < WARMUP; w++) {
      for (const size of [1024, 100]) {
        for (const fanout of [1, 10]) {
          if (CASES !== null && !CASES.has(`${size}x${fanout}`)) continue;
          // As many messages as a timed round: a shorter pass left Felix's later rounds faster
          // than its first (the JIT and V8's young generation still growing), NATS's flat.
          const n = throughputCount(size, fanout);
          if (!NO_NATS) await throughput('nats', { size, fanout, count: n });
          for (const t of TRANSPORTS) await throughput(t, { size, fanout, count: n });
        }
      }
    }
  }
  // The durable rows too: an untimed second of each system first (the first timed round used
  // to run 20-40 % slower than the rest for Felix and JetStream alike).
  if (ONLY.has('durable') && WARMUP > 0) {
    console.log('warm-up: 1 untimed second of each durable publisher');
    if (!NO_NATS) await jetstreamDurable(1);
    for (const t of TRANSPORTS) await felixDurable(broker, t, 1);
  }
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`round ${round}/${ROUNDS} (load average ${loadavg()})`);
    if (ONLY.has('throughput')) {
      for (const [size, label] of [
        [1024, '1 KiB'],
        [100, '100 B'],
      ] as const) {
        for (const fanout of [1, 10]) {
          if (CASES !== null && !CASES.has(`${size}x${fanout}`)) continue;
          const scenario = `pub→sub ${label}, fanout ${fanout}`;
          const n = throughputCount(size, fanout);
          if (!NO_NATS) {
            sample({
              scenario,
              system: 'NATS core',
              value: await throughput('nats', { size, fanout, count: n }),
              unit: 'msgs/s',
            });
          }
          if (TRANSPORTS.includes('tls')) {
            sample({
              scenario,
              system: 'Felix TLS',
              value: await throughput('tls', { size, fanout, count: n }),
              unit: 'msgs/s',
            });
          }
          if (TRANSPORTS.includes('quic')) {
            sample({
              scenario,
              system: 'Felix QUIC',
              // As many records as the TLS round: a tenth (what QUIC ran when it was ten times
              // slower) made 0.15 s rounds that a connection's start and one collection decided.
              value: await throughput('quic', { size, fanout, count: n }),
              unit: 'msgs/s',
            });
          }
        }
      }
    }
    if (ONLY.has('latency')) {
      const count = QUICK ? 500 : 5_000;
      const nats = await natsRequestLatency(count);
      for (const p of [50, 99]) {
        sample({
          scenario: `acked publish p${p} (100 B)`,
          system: 'NATS req/reply',
          value: pct(nats, p),
          unit: 'µs',
        });
      }
      for (const transport of TRANSPORTS) {
        const s = await felixAckLatency(
          broker,
          transport,
          transport === 'quic' ? count / 5 : count,
        );
        const system = `Felix ${transport.toUpperCase()}`;
        for (const p of [50, 99]) {
          sample({
            scenario: `acked publish p${p} (100 B)`,
            system,
            value: pct(s, p),
            unit: 'µs',
          });
        }
      }
    }
    if (ONLY.has('durable')) {
      const secs = QUICK ? 2 : 5;
      if (!NO_NATS) {
        sample({
          scenario: 'durable publish, 64 in flight',
          system: 'JetStream',
          value: await jetstreamDurable(secs),
          unit: 'msgs/s',
          note: 'no fsync per message',
        });
      }
      for (const transport of TRANSPORTS) {
        sample({
          scenario: 'durable publish, 64 in flight',
          system: `Felix ${transport.toUpperCase()}`,
          value: await felixDurable(broker, transport, secs),
          unit: 'msgs/s',
          note: 'onCommit: fsync before every ack',
        });
      }
    }
  }
  console.log('');
  for (const { row, values } of samples.values()) record({ ...row, value: median(values) });
  // Each round measures the peer and Felix back to back, so a round's ratio cancels most of the
  // drift of a shared machine between rounds: the median of those ratios is the verdict. Felix's
  // peers are NATS's systems, and for Felix QUIC also Felix TLS (issue 25's pub→sub goal:
  // QUIC / TLS ≥ 0.5).
  const peers = ['NATS core', 'NATS req/reply', 'JetStream'];
  for (const [, peer] of samples)
    for (const [, felixRow] of samples) {
      const judged = peers.includes(peer.row.system)
        ? felixRow.row.system.startsWith('Felix')
        : peer.row.system === 'Felix TLS' && felixRow.row.system === 'Felix QUIC';
      if (!judged || felixRow.row.scenario !== peer.row.scenario) continue;
      const { ratios, median: mid } = pairedRatios(felixRow.values, peer.values);
      console.log(
        `paired: ${felixRow.row.scenario}, ${felixRow.row.system} / ${peer.row.system} per round ${ratios.map((r) => r.toFixed(2)).join(', ')}; median ${mid.toFixed(2)}${felixRow.row.unit === 'µs' ? ' (lower is better)' : ''}`,
      );
    }
} finally {
  await Promise.all([...clients.values()].map((c) => c.close()));
  const mem = rssMiB(broker.pid);
  console.log(`\nbroker RSS ${mem.rss.toFixed(0)} MiB (peak ${mem.peak.toFixed(0)} MiB)`);
  rows.push({ scenario: 'broker memory', system: 'Felix', value: mem.peak, unit: 'MiB peak RSS' });
  await broker.stop();
}

// ---- outputs -------------------------------------------------------------------------------

console.log(
  `\n${markdownTable(
    ['scenario', 'system', 'result'],
    rows.map((r) => [
      r.scenario,
      r.system,
      `${fmt(r.value)} ${r.unit}${r.note ? ` (${r.note})` : ''}`,
    ]),
  )}`,
);
if (!QUICK) {
  writeFileSync(
    join(HERE, 'results.json'),
    `${JSON.stringify({ at: new Date().toISOString(), rounds: ROUNDS, rows }, null, 2)}\n`,
  );
  writeFileSync(join(HERE, 'pubsub.svg'), chart(rows));
  console.log(`\nwrote ${join(HERE, 'results.json')} and ${join(HERE, 'pubsub.svg')}`);
}
process.exit(0);

/** Horizontal bars, one group per scenario, each bar scaled within its scenario. */
function chart(all: Row[]): string {
  const grey = '#7f7f7f';
  return barChartSvg(
    all
      .filter((r) => r.scenario !== 'broker memory')
      .map((r) => ({ group: r.scenario, label: r.system, value: r.value, unit: r.unit })),
    {
      title: 'Felix vs NATS pub/sub benchmark',
      heading: 'Felix vs NATS on this machine (scripts/bench/pubsub)',
      colors: {
        'NATS core': grey,
        'NATS req/reply': grey,
        JetStream: grey,
        'Felix TLS': '#d62728',
        'Felix QUIC': '#1f77b4',
      },
      format: fmt,
    },
  );
}
