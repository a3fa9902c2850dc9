/**
 * Pub/sub benchmark: Felix (TLS and QUIC) side by side with NATS on this machine, in one run.
 *
 *   node --import tsx scripts/bench/pubsub/main.ts        (build first: pnpm build)
 *
 * Scenarios: pub→sub throughput (1 KiB and 100 B, fanout 1 and 10); acked publish latency
 * against NATS request/reply; durable publish with an fsync before every ack (`onCommit`, 64 in
 * flight) against JetStream `js.publish` with 64 in flight. Prints a Markdown table, writes
 * results.json and pubsub.svg next to this file, and records the broker's RSS.
 * FELIX_BENCH_QUICK=1 shrinks every count for a smoke run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type FelixClient, connect as felixConnect } from '@felix/client';
import { type NatsConnection, connect as natsConnect } from 'nats';

const HERE = import.meta.dirname;
const ROOT = resolve(HERE, '..', '..', '..');
const BROKER_MAIN = join(ROOT, 'services', 'broker', 'dist', 'main.js');
const QUICK = process.env.FELIX_BENCH_QUICK === '1';
const NATS_URL = process.env.NATS_URL ?? '127.0.0.1:4222';
const TIMEOUT_MS = 60_000;

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
    `${row.scenario.padEnd(34)} ${row.system.padEnd(16)} ${fmt(row.value).padStart(10)} ${row.unit}${row.note ? `  (${row.note})` : ''}`,
  );
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1);
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

// ---- the broker ----------------------------------------------------------------------------

interface Broker {
  proc: ChildProcess;
  port: number;
  fingerprint: string;
  dir: string;
}

async function startBroker(): Promise<Broker> {
  const dir = mkdtempSync(join(tmpdir(), 'felix-bench-pubsub-'));
  const config = join(dir, 'broker.yaml');
  writeFileSync(
    config,
    [
      'streams:',
      '  - { tenant: t1, name: bench }',
      '  - { tenant: t1, name: durable, durable: true, fsync: onCommit }',
      '',
    ].join('\n'),
  );
  const proc = spawn(process.execPath, [BROKER_MAIN], {
    env: {
      ...process.env,
      FELIX_BROKER_CONFIG: config,
      FELIX_DURABLE_STORAGE_DIR: join(dir, 'data'),
      FELIX_BROKER_PORT: '0',
      FELIX_BROKER_HTTP_PORT: '0',
      FELIX_BROKER_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<{ tls_port: number; cert_fingerprint: string }>((done, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error('broker did not start')), 30_000);
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const l = out.split('\n').find((x) => x.includes('"msg":"listening"'));
      if (l) {
        clearTimeout(timer);
        out = '';
        done(JSON.parse(l));
      }
    });
  });
  return { proc, port: line.tls_port, fingerprint: line.cert_fingerprint, dir };
}

function rssMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

function felix(b: Broker, transport: 'tls' | 'quic'): Promise<FelixClient> {
  return felixConnect({
    servers: [`${transport}://127.0.0.1:${b.port}`],
    tenant: 't1',
    tls: { fingerprint: b.fingerprint },
  });
}

// ---- pub→sub throughput --------------------------------------------------------------------

async function felixThroughput(
  b: Broker,
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
      n++;
      if (ev.offset >= last) break;
    }
    return n;
  });
  const payload = new Uint8Array(size).fill(97);
  const t0 = performance.now();
  const pub = pubClient.publisher('bench', { lingerMs: 1, maxBatchRecords: 512, ack: true });
  const inflight: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    inflight.push(pub.publish(payload));
    if (inflight.length >= 16_384) await Promise.all(inflight.splice(0));
  }
  await Promise.all(inflight);
  const received = await withTimeout(Promise.all(done), TIMEOUT_MS, 'subscribers');
  const secs = (performance.now() - t0) / 1000;
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
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    pubConn.publish(subject, payload);
    if (i % 10_000 === 9_999) await pubConn.flush();
  }
  await pubConn.flush();
  await withTimeout(Promise.all(done), TIMEOUT_MS, 'nats subscribers');
  const secs = (performance.now() - t0) / 1000;
  await Promise.all([...subs, pubConn].map((nc) => nc.close()));
  return count / secs;
}

// ---- acked publish latency -----------------------------------------------------------------

async function felixAckLatency(
  b: Broker,
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
  b: Broker,
  transport: 'tls' | 'quic',
  seconds: number,
): Promise<number> {
  const c = await felix(b, transport);
  const payload = new Uint8Array(100);
  let n = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (performance.now() < until) {
        await c.publish('durable', payload);
        n++;
      }
    }),
  );
  await c.close();
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

// ---- main ----------------------------------------------------------------------------------

const broker = await startBroker();
console.log(
  `broker pid ${broker.proc.pid}, port ${broker.port}; NATS at ${NATS_URL}${QUICK ? '; QUICK run' : ''}\n`,
);
try {
  for (const [size, label] of [
    [1024, '1 KiB'],
    [100, '100 B'],
  ] as const) {
    for (const fanout of [1, 10]) {
      const scenario = `pub→sub ${label}, fanout ${fanout}`;
      const base = size === 1024 ? 100_000 : 200_000;
      const n = QUICK ? 5_000 : fanout === 10 ? base / 4 : base;
      record({
        scenario,
        system: 'NATS core',
        value: await natsThroughput(size, fanout, n),
        unit: 'msgs/s',
      });
      record({
        scenario,
        system: 'Felix TLS',
        value: await felixThroughput(broker, 'tls', size, fanout, n),
        unit: 'msgs/s',
      });
      record({
        scenario,
        system: 'Felix QUIC',
        value: await felixThroughput(broker, 'quic', size, fanout, Math.max(2_000, n / 10)),
        unit: 'msgs/s',
        note: 'n/10',
      });
    }
  }
  const samples = QUICK ? 500 : 5_000;
  const nats = await natsRequestLatency(samples);
  record({
    scenario: 'acked publish p50 (100 B)',
    system: 'NATS req/reply',
    value: pct(nats, 50),
    unit: 'µs',
  });
  record({
    scenario: 'acked publish p99 (100 B)',
    system: 'NATS req/reply',
    value: pct(nats, 99),
    unit: 'µs',
  });
  for (const transport of ['tls', 'quic'] as const) {
    const s = await felixAckLatency(
      broker,
      transport,
      transport === 'quic' ? samples / 5 : samples,
    );
    const system = `Felix ${transport.toUpperCase()}`;
    record({ scenario: 'acked publish p50 (100 B)', system, value: pct(s, 50), unit: 'µs' });
    record({ scenario: 'acked publish p99 (100 B)', system, value: pct(s, 99), unit: 'µs' });
  }
  const secs = QUICK ? 2 : 5;
  record({
    scenario: 'durable publish, 64 in flight',
    system: 'JetStream',
    value: await jetstreamDurable(secs),
    unit: 'msgs/s',
    note: 'no fsync per message',
  });
  for (const transport of ['tls', 'quic'] as const) {
    record({
      scenario: 'durable publish, 64 in flight',
      system: `Felix ${transport.toUpperCase()}`,
      value: await felixDurable(broker, transport, secs),
      unit: 'msgs/s',
      note: 'onCommit: fsync before every ack',
    });
  }
} finally {
  const mem = rssMiB(broker.proc.pid!);
  console.log(`\nbroker RSS ${mem.rss.toFixed(0)} MiB (peak ${mem.peak.toFixed(0)} MiB)`);
  rows.push({ scenario: 'broker memory', system: 'Felix', value: mem.peak, unit: 'MiB peak RSS' });
  broker.proc.kill('SIGTERM');
  await new Promise((r) => broker.proc.once('exit', r));
  rmSync(broker.dir, { recursive: true, force: true });
}

// ---- outputs -------------------------------------------------------------------------------

console.log('\n| scenario | system | result |\n| --- | --- | --- |');
for (const r of rows)
  console.log(
    `| ${r.scenario} | ${r.system} | ${fmt(r.value)} ${r.unit}${r.note ? ` (${r.note})` : ''} |`,
  );
if (!QUICK) {
  writeFileSync(
    join(HERE, 'results.json'),
    `${JSON.stringify({ at: new Date().toISOString(), rows }, null, 2)}\n`,
  );
  writeFileSync(join(HERE, 'pubsub.svg'), chart(rows));
  console.log(`\nwrote ${join(HERE, 'results.json')} and ${join(HERE, 'pubsub.svg')}`);
}
process.exit(0);

/** Horizontal bars, one group per scenario, each bar scaled within its scenario. */
function chart(all: Row[]): string {
  const groups = [
    ...new Set(all.filter((r) => r.scenario !== 'broker memory').map((r) => r.scenario)),
  ];
  const colors: Record<string, string> = {
    'NATS core': '#7f7f7f',
    'NATS req/reply': '#7f7f7f',
    JetStream: '#7f7f7f',
    'Felix TLS': '#d62728',
    'Felix QUIC': '#1f77b4',
  };
  const W = 760;
  const barH = 14;
  let y = 40;
  let body = '';
  for (const g of groups) {
    const rs = all.filter((r) => r.scenario === g);
    const max = Math.max(...rs.map((r) => r.value));
    body += `<text x="10" y="${y}" font-weight="bold">${g} (${rs[0]!.unit}${rs[0]!.unit === 'µs' ? ', lower is better' : ''})</text>`;
    y += 6;
    for (const r of rs) {
      const w = Math.max(1, ((W - 330) * r.value) / max);
      body += `<text x="20" y="${y + 11}">${r.system}</text><rect x="150" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${colors[r.system] ?? '#2ca02c'}"/><text x="${(155 + w).toFixed(1)}" y="${y + 11}">${fmt(r.value)}</text>`;
      y += barH + 3;
    }
    y += 18;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${y}" font-family="sans-serif" font-size="11"><title>Felix vs NATS pub/sub benchmark</title><rect width="${W}" height="${y}" fill="white"/><text x="10" y="20" font-size="14">Felix vs NATS on this machine (scripts/bench/pubsub)</text>${body}</svg>\n`;
}
