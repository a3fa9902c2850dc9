/**
 * Auth on against auth off at the broker, in one run (issue 21's goals: auth costs at most 3 %
 * of 1 KiB pub→sub throughput and at most 3 µs of cache get p50).
 *
 *   npx pnpm@10.34.9 build && node --import tsx scripts/bench/authz/broker-ab.ts
 *
 * Two brokers of this checkout's build run side by side: one with `auth.mode: dev` (tokens
 * accepted as given, no check per request: "off"), one with `auth.mode: tokens` and a keys file
 * (the token verified at auth, every request checked against its permissions: "on"). Each round
 * runs the same two scenarios against both, the order alternating per round, so load from other
 * processes on this shared machine lands on both: 1 KiB pub→sub throughput over TLS (fanout 1,
 * the pubsub bench's publisher idiom: `publisher().send()`, acked per batch) and cache get
 * latency one at a time over TLS on a hot set of 1,000 keys. It prints every round with the load
 * average, the medians and ranges, and the median of the per-round on/off ratios (or
 * differences, for p50), and the broker's CPU per record and per get from /proc (steadier than
 * wall-clock figures on a loaded machine). FELIX_BENCH_ONLY=get runs the gets alone;
 * FELIX_BENCH_AA=1 runs both brokers with auth off (a control). FELIX_BENCH_ROUNDS (default 6) rounds; FELIX_BENCH_QUICK=1 shrinks the
 * counts for a smoke run.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BROKER_AUDIENCE, exportPublicJwk, generateSigningKey, signToken } from '@felix/authz';
import { type FelixClient, connect } from '@felix/client';
import {
  type BenchBroker,
  latencies,
  markdownTable,
  median,
  pairedRatios,
  percentile as pct,
  procCpuSecs,
  startBroker,
} from '@felix/testing-bench-kit';

const QUICK = process.env.FELIX_BENCH_QUICK === '1';
const ROUNDS = Math.max(1, Number(process.env.FELIX_BENCH_ROUNDS ?? 6));
const MESSAGES = QUICK ? 5_000 : 100_000;
const GETS = QUICK ? 1_000 : 10_000;
const TENANT = 'bench';
/** FELIX_BENCH_ONLY=get: the get scenario alone. */
const GETS_ONLY = process.env.FELIX_BENCH_ONLY === 'get';
/** FELIX_BENCH_AA=1: both brokers run auth off (an A/A control: how far two processes differ). */
const AA = process.env.FELIX_BENCH_AA === '1';
const CONFIG = `streams:\n  - { tenant: ${TENANT}, name: ab }\ncaches:\n  - { tenant: ${TENANT}, name: kv }\n`;
const load = () => loadavg()[0]!.toFixed(1);

/** A keys file for the bench tenant and a token granting its data actions. */
async function credentials(): Promise<{ keysFile: string; token: string }> {
  const key = await generateSigningKey();
  const dir = mkdtempSync(join(tmpdir(), 'felix-authz-bench-'));
  const keysFile = join(dir, 'keys.json');
  const jwk = await exportPublicJwk(key.publicKey, key.kid);
  writeFileSync(keysFile, JSON.stringify({ tenants: { [TENANT]: { keys: [jwk] } } }));
  const token = await signToken(
    {
      audience: BROKER_AUDIENCE,
      subject: 'bench',
      tenant: TENANT,
      // Several grants, as a real token carries, so the check walks a realistic set.
      permissions: [
        `stream.publish:stream:${TENANT}/default/ab`,
        `stream.subscribe:stream:${TENANT}/default/*`,
        `cache.read:cache:${TENANT}/*/*`,
        `cache.write:cache:${TENANT}/default/kv`,
        `group.consume:group:${TENANT}/default/ab/*`,
      ],
      lifetimeS: 86_400,
    },
    key,
  );
  return { keysFile, token };
}

interface Side {
  name: 'off' | 'on';
  broker: BenchBroker;
  token: string;
  throughput: number[];
  getP50: number[];
  getP99: number[];
  /** The broker's CPU (user+system, /proc, 10 ms ticks) per published record and per get, µs. */
  cpuPerRecord: number[];
  cpuPerGet: number[];
}

function client(side: Side): Promise<FelixClient> {
  return connect({
    servers: [side.broker.url('tls')],
    tenant: TENANT,
    token: side.token,
    tls: { fingerprint: side.broker.fingerprint },
  });
}

/** Records per second from the first publish to the subscriber's last record. */
async function throughput(side: Side, count: number): Promise<number> {
  const sub = await client(side);
  const pubClient = await client(side);
  try {
    const start = await pubClient.publish('ab', 'mark');
    const from = start.offset! + 1;
    const last = from + count - 1;
    const done = (async () => {
      for await (const ev of sub.subscribe('ab', { from, shard: 0 })) {
        if (ev.offset >= last) return;
      }
    })();
    const payload = new Uint8Array(1024).fill(97);
    const cpu0 = procCpuSecs(side.broker.pid);
    const t0 = performance.now();
    const pub = pubClient.publisher('ab', { lingerMs: 1, maxBatchRecords: 512, ack: true });
    for (let i = 0; i < count; i++) {
      if (!pub.send(payload)) await pub.ready();
    }
    await pub.flush();
    await done;
    const rate = count / ((performance.now() - t0) / 1000);
    side.cpuPerRecord.push(((procCpuSecs(side.broker.pid) - cpu0) * 1e6) / count);
    return rate;
  } finally {
    await Promise.allSettled([sub.close(), pubClient.close()]);
  }
}

/** Cache get latencies in µs, one at a time over a hot set of 1,000 keys. */
async function gets(side: Side, n: number): Promise<{ p50: number; p99: number }> {
  const c = await client(side);
  try {
    const kv = c.cache('kv');
    for (let i = 0; i < 1000; i++) await kv.put(`k${i}`, new Uint8Array(100).fill(42));
    for (let i = 0; i < 2000; i++) await kv.get(`k${i % 1000}`); // warm
    const cpu0 = procCpuSecs(side.broker.pid);
    const lat = (await latencies(n, (i) => kv.get(`k${i % 1000}`))).sort((a, b) => a - b);
    side.cpuPerGet.push(((procCpuSecs(side.broker.pid) - cpu0) * 1e6) / n);
    return { p50: pct(lat, 50), p99: pct(lat, 99) };
  } finally {
    await c.close();
  }
}

async function round(sides: Side[], r: number): Promise<void> {
  const order = r % 2 === 0 ? sides : [...sides].reverse();
  for (const s of order) s.throughput.push(GETS_ONLY ? 0 : await throughput(s, MESSAGES));
  for (const s of [...order].reverse()) {
    const g = await gets(s, GETS);
    s.getP50.push(g.p50);
    s.getP99.push(g.p99);
  }
  const [off, on] = sides as [Side, Side];
  console.log(
    `round ${r + 1} (load ${load()}, first ${order[0]!.name}): ` +
      `pub→sub off ${Math.round(off.throughput[r]!)}/s on ${Math.round(on.throughput[r]!)}/s; ` +
      `get p50 off ${off.getP50[r]!.toFixed(1)} µs on ${on.getP50[r]!.toFixed(1)} µs`,
  );
}

/** The median of the per-round differences (on − off), with each pair's. */
function diffCell(on: number[], off: number[], digits: number): string {
  const d = on.map((v, i) => v - off[i]!);
  const m = median(d);
  return `${m >= 0 ? '+' : ''}${m.toFixed(digits)} µs (pairs ${d.map((x) => x.toFixed(digits)).join(', ')})`;
}

const range = (v: number[], digits = 0) =>
  `${Math.min(...v).toFixed(digits)}–${Math.max(...v).toFixed(digits)}`;

async function main(): Promise<void> {
  const { keysFile, token } = await credentials();
  const loadBefore = load();
  const off: Side = {
    name: 'off',
    broker: await startBroker({ config: CONFIG, env: { FELIX_AUTH_MODE: 'dev' } }),
    token: '',
    throughput: [],
    getP50: [],
    getP99: [],
    cpuPerRecord: [],
    cpuPerGet: [],
  };
  const on: Side = {
    name: 'on',
    broker: await startBroker({
      config: CONFIG,
      env: AA
        ? { FELIX_AUTH_MODE: 'dev' }
        : { FELIX_AUTH_MODE: 'tokens', FELIX_AUTH_KEYS_FILE: keysFile },
    }),
    token,
    throughput: [],
    getP50: [],
    getP99: [],
    cpuPerRecord: [],
    cpuPerGet: [],
  };
  const sides = [off, on];
  try {
    // One untimed pass each: the rounds measure warm code on both brokers.
    for (const s of sides) {
      if (!GETS_ONLY) await throughput(s, Math.min(MESSAGES, 20_000));
      await gets(s, Math.min(GETS, 2_000));
      s.cpuPerRecord.length = 0;
      s.cpuPerGet.length = 0;
    }
    for (let r = 0; r < ROUNDS; r++) await round(sides, r);
  } finally {
    await Promise.allSettled(sides.map((s) => s.broker.stop()));
  }
  const tput = pairedRatios(on.throughput, off.throughput);
  const p50Diffs = on.getP50.map((v, i) => v - off.getP50[i]!);
  console.log(
    `\n${ROUNDS} alternated pairs, ${GETS_ONLY ? 0 : MESSAGES} x 1 KiB pub→sub and ${GETS} gets per run${AA ? ' (A/A control: both auth off)' : ''}; ` +
      `load average ${loadBefore} before, ${load()} after (2 cores shared with other work)\n`,
  );
  console.log(
    markdownTable(
      [
        'scenario',
        'auth off (median, range)',
        'auth on (median, range)',
        'on vs off (median of pairs)',
      ],
      [
        [
          '1 KiB pub→sub, TLS, fanout 1',
          `${Math.round(median(off.throughput))}/s (${range(off.throughput)})`,
          `${Math.round(median(on.throughput))}/s (${range(on.throughput)})`,
          `${((tput.median - 1) * 100).toFixed(1)} % (pairs ${tput.ratios.map((x) => `${((x - 1) * 100).toFixed(1)}`).join(', ')})`,
        ],
        [
          'cache get p50, TLS',
          `${median(off.getP50).toFixed(1)} µs (${range(off.getP50, 1)})`,
          `${median(on.getP50).toFixed(1)} µs (${range(on.getP50, 1)})`,
          `${median(p50Diffs) >= 0 ? '+' : ''}${median(p50Diffs).toFixed(1)} µs (pairs ${p50Diffs.map((d) => d.toFixed(1)).join(', ')})`,
        ],
        [
          'broker CPU per 1 KiB record (pub→sub)',
          `${median(off.cpuPerRecord).toFixed(2)} µs (${range(off.cpuPerRecord, 2)})`,
          `${median(on.cpuPerRecord).toFixed(2)} µs (${range(on.cpuPerRecord, 2)})`,
          diffCell(on.cpuPerRecord, off.cpuPerRecord, 2),
        ],
        [
          'broker CPU per cache get',
          `${median(off.cpuPerGet).toFixed(1)} µs (${range(off.cpuPerGet, 1)})`,
          `${median(on.cpuPerGet).toFixed(1)} µs (${range(on.cpuPerGet, 1)})`,
          diffCell(on.cpuPerGet, off.cpuPerGet, 1),
        ],
        [
          'cache get p99, TLS',
          `${median(off.getP99).toFixed(1)} µs (${range(off.getP99, 1)})`,
          `${median(on.getP99).toFixed(1)} µs (${range(on.getP99, 1)})`,
          '',
        ],
      ].filter((row) => !GETS_ONLY || !row[0]!.includes('pub→sub')),
    ),
  );
}

await main();
