/**
 * Caches, counters and watches through the broker, side by side with Redis on this machine.
 *
 *   npx pnpm@10.34.9 build && node --import tsx scripts/bench/cache-broker/main.ts
 *
 * One run prints a Markdown table of: cache get and put latency one at a time (p50/p99) over TLS
 * and QUIC against Redis GET/SET (ioredis, 127.0.0.1:6379); pipelined puts (64 in flight)
 * against a pipelined SET; counter add against INCRBY (one at a time and 64 in flight); watch
 * delivery latency with 1, 50 and 500 watchers over TLS (put sent -> event at the watcher, every
 * watcher's latency counted); retained-join time for 100, 1,000 and 10,000 keys (watch opened ->
 * `state_complete`). The broker runs with durable storage: every put and add is acknowledged
 * after its fsync (group-committed), while Redis here acknowledges from memory.
 * FELIX_BENCH_QUICK=1 shrinks the counts for a smoke run. FELIX_BENCH_ONLY=get runs only the
 * get comparison: FELIX_BENCH_ROUNDS (default 5) rounds of Felix TLS get, Redis GET and a raw
 * node:tls ping-pong of a get's sizes (raw-tls.ts, the floor), one at a time over a hot key set
 * of 1,000, the order rotating per round; it prints each round's p50/p99 with the load average
 * and the median of the per-round ratios.
 * FELIX_BENCH_BROKER_ARGS (or FELIX_BENCH_BROKER_NODE_ARGS) passes node flags to the broker,
 * e.g. "--cpu-prof --cpu-prof-dir=/tmp/p", as in the pubsub bench.
 */
import { setMaxListeners } from 'node:events';
import { loadavg } from 'node:os';
import { type FelixClient, connect } from '@felix/client';
import { Redis } from 'ioredis';
import {
  latencies,
  markdownTable,
  median,
  opsPerSecond,
  padCells,
  pairedRatios,
  percentile as pct,
  startBroker,
} from '@felix/testing-bench-kit';
import { startRawTls } from './raw-tls.js';

const QUICK = process.env.FELIX_BENCH_QUICK === '1';
const N = QUICK ? 300 : 5000;
const SECONDS = QUICK ? 1 : 3;
const VALUE = new Uint8Array(100).fill(42);
const REDIS_VALUE = Buffer.from(VALUE);

const rows: string[][] = [];
function row(scenario: string, system: string, p50: string, p99: string, note = ''): void {
  rows.push([scenario, system, p50, p99, note]);
  console.log(padCells([scenario, system, p50, p99, note], [36, 14, -12, -12, 0]));
}
const us = (v: number) => `${Math.round(v)} µs`;
const perSec = (v: number) => `${Math.round(v).toLocaleString('en-US')}/s`;

/** `inFlight` loops of `op` for SECONDS; `op` gets a number unique across the loops. */
const throughput = (inFlight: number, op: (i: number) => Promise<unknown>) =>
  opsPerSecond(inFlight, SECONDS, (w, i) => op(w * 1_000_000 + i));

const broker = await startBroker({
  // Another checkout's built broker, for a client-vs-broker A/B (FELIX_BENCH_BROKER_ROOT).
  ...(process.env.FELIX_BENCH_BROKER_ROOT ? { root: process.env.FELIX_BENCH_BROKER_ROOT } : {}),
  config: 'caches:\n  - { tenant: bench, name: kv }\n  - { tenant: bench, name: watched }\n',
  env: { FELIX_BROKER_WATCH_QUEUE_CAPACITY: '65536' },
});
const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
await redis.connect();
console.log(`broker pid ${broker.pid}; Redis 127.0.0.1:6379${QUICK ? '; QUICK run' : ''}\n`);

const clients: Record<string, FelixClient> = {};
for (const t of ['tls', 'quic'] as const) {
  clients[t] = await connect({
    servers: [broker.url(t)],
    tenant: 'bench',
    tls: { fingerprint: broker.fingerprint },
  });
}

if (process.env.FELIX_BENCH_ONLY === 'get') {
  // Paired rounds: Felix, Redis and a raw node:tls ping-pong (the floor under any TLS get) take
  // turns, the order rotating per round, so load from the other processes on this shared machine
  // lands on all of them; the verdict is the median of the per-round ratios, not a ratio of
  // medians taken at different moments.
  const rounds = Math.max(1, Number(process.env.FELIX_BENCH_ROUNDS ?? 5));
  const kv = clients.tls!.cache('kv');
  const raw = await startRawTls();
  for (let i = 0; i < 1000; i++) await kv.put(`k${i}`, VALUE);
  for (let i = 0; i < 1000; i++) await redis.set(`k${i}`, REDIS_VALUE);
  const systems = [
    { name: 'Felix TLS get', op: (i: number) => kv.get(`k${i % 1000}`) },
    { name: 'Redis GET', op: (i: number) => redis.getBuffer(`k${i % 1000}`) },
    { name: 'raw node:tls', op: () => raw.ping() },
  ];
  // Warm every path (JIT, hot values) before the first timed round.
  for (const sys of systems) await latencies(QUICK ? 200 : 2000, sys.op);
  const at = (r: number, p: number) => (xs: number[][]) => pct(xs[r]!, p);
  const runs: number[][][] = systems.map(() => []);
  for (let r = 0; r < rounds; r++) {
    const load = loadavg()[0]!.toFixed(1);
    for (let k = 0; k < systems.length; k++) {
      const s = (k + r) % systems.length;
      runs[s]!.push(await latencies(N, systems[s]!.op));
    }
    const [f, g, t] = runs.map(at(r, 50));
    console.log(
      `round ${r + 1} (load ${load}): p50 Felix ${us(f!)}, Redis ${us(g!)}, raw TLS ${us(t!)}; p99 Felix ${us(at(r, 99)(runs[0]!))}, Redis ${us(at(r, 99)(runs[1]!))}, raw TLS ${us(at(r, 99)(runs[2]!))}`,
    );
  }
  for (const p of [50, 99]) {
    const per = runs.map((rs) => rs.map((xs) => pct(xs, p)));
    const ratio = (a: number, b: number) => pairedRatios(per[a]!, per[b]!).median;
    console.log(
      `median of ${rounds} rounds, p${p}: ${systems.map((sys, k) => `${sys.name} ${us(median(per[k]!))}`).join(', ')}; median ratio of pairs Felix/Redis ${ratio(0, 1).toFixed(2)}x, raw TLS/Redis ${ratio(2, 1).toFixed(2)}x`,
    );
  }
  await raw.stop();
  for (const c of Object.values(clients)) await c.close();
  redis.disconnect();
  await broker.stop();
  process.exit(0);
}

// ---- get / put one at a time ----
for (const t of ['tls', 'quic'] as const) {
  const kv = clients[t]!.cache('kv');
  for (let i = 0; i < 1000; i++) await kv.put(`k${i}`, VALUE);
  const put = await latencies(N, (i) => kv.put(`k${i % 1000}`, VALUE));
  row(
    'cache put, one at a time',
    `Felix ${t}`,
    us(pct(put, 50)),
    us(pct(put, 99)),
    'fsync before ack',
  );
  const get = await latencies(N, (i) => kv.get(`k${i % 1000}`));
  row('cache get, one at a time', `Felix ${t}`, us(pct(get, 50)), us(pct(get, 99)));
}
for (let i = 0; i < 1000; i++) await redis.set(`k${i}`, REDIS_VALUE);
const rset = await latencies(N, (i) => redis.set(`k${i % 1000}`, REDIS_VALUE));
row(
  'cache put, one at a time',
  'Redis SET',
  us(pct(rset, 50)),
  us(pct(rset, 99)),
  'memory, no fsync',
);
const rget = await latencies(N, (i) => redis.getBuffer(`k${i % 1000}`));
row('cache get, one at a time', 'Redis GET', us(pct(rget, 50)), us(pct(rget, 99)));

// ---- pipelined puts ----
for (const t of ['tls', 'quic'] as const) {
  const kv = clients[t]!.cache('kv');
  const r = await throughput(64, (i) => kv.put(`p${i % 10_000}`, VALUE));
  row('cache put, 64 in flight', `Felix ${t}`, perSec(r), '', 'group-committed fsync');
}
{
  let done = 0;
  const until = performance.now() + SECONDS * 1000;
  const start = performance.now();
  while (performance.now() < until) {
    const p = redis.pipeline();
    for (let i = 0; i < 64; i++) p.set(`p${(done + i) % 10_000}`, REDIS_VALUE);
    await p.exec();
    done += 64;
  }
  row(
    'cache put, 64 in flight',
    'Redis SET pipe',
    perSec(done / ((performance.now() - start) / 1000)),
    '',
  );
}

// ---- counters ----
for (const t of ['tls', 'quic'] as const) {
  const hits = clients[t]!.counter('kv');
  const one = await latencies(N, (i) => hits.add(`c${i % 100}`, 1n));
  row(
    'counter add, one at a time',
    `Felix ${t}`,
    us(pct(one, 50)),
    us(pct(one, 99)),
    'fsync before ack',
  );
  const r = await throughput(64, (i) => hits.add(`c${i % 100}`, 1n));
  row('counter add, 64 in flight', `Felix ${t}`, perSec(r), '');
}
{
  const one = await latencies(N, (i) => redis.incrby(`c${i % 100}`, 1));
  row('counter add, one at a time', 'Redis INCRBY', us(pct(one, 50)), us(pct(one, 99)));
  let done = 0;
  const until = performance.now() + SECONDS * 1000;
  const start = performance.now();
  while (performance.now() < until) {
    const p = redis.pipeline();
    for (let i = 0; i < 64; i++) p.incrby(`c${i % 100}`, 1);
    await p.exec();
    done += 64;
  }
  row(
    'counter add, 64 in flight',
    'Redis INCRBY pipe',
    perSec(done / ((performance.now() - start) / 1000)),
    '',
  );
}

// ---- watch delivery latency ----
for (const watchers of [1, 50, 500]) {
  const felix = clients.tls!;
  const watched = felix.cache('watched');
  const prefix = `w${watchers}-`;
  const ac = new AbortController();
  setMaxListeners(watchers + 10, ac.signal);
  const sentAt = new Map<number, number>();
  const lat: number[] = [];
  const puts = QUICK ? 20 : watchers >= 500 ? 50 : 200;
  let ready = 0;
  const readers = Array.from({ length: watchers }, async () => {
    let seen = 0;
    const it = watched
      .watch({ prefix }, { retained: true, signal: ac.signal })
      [Symbol.asyncIterator]();
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      const ev = r.value;
      if (ev.type === 'state_complete') {
        ready++;
        continue;
      }
      if (ev.type !== 'put') continue;
      const i = new DataView(ev.value.buffer, ev.value.byteOffset).getUint32(0);
      lat.push((performance.now() - sentAt.get(i)!) * 1000);
      if (++seen === puts) {
        await it.return?.();
        return;
      }
    }
  });
  while (ready < watchers) await new Promise((r) => setTimeout(r, 5));
  const body = new Uint8Array(100);
  for (let i = 0; i < puts; i++) {
    new DataView(body.buffer).setUint32(0, i);
    sentAt.set(i, performance.now());
    await watched.put(`${prefix}k`, body.slice());
  }
  await Promise.all(readers);
  ac.abort();
  lat.sort((a, b) => a - b);
  row(
    `watch delivery, ${watchers} watcher${watchers === 1 ? '' : 's'}`,
    'Felix tls',
    us(pct(lat, 50)),
    us(pct(lat, 99)),
    'put sent -> event, incl. fsync',
  );
}

// ---- retained join ----
for (const keys of [100, 1000, 10_000]) {
  const felix = clients.tls!;
  const watched = felix.cache('watched');
  const prefix = `r${keys}-`;
  await Promise.all(
    Array.from({ length: 64 }, async (_, w) => {
      for (let i = w; i < keys; i += 64) await watched.put(`${prefix}${i}`, VALUE);
    }),
  );
  const t0 = performance.now();
  let got = 0;
  for await (const ev of watched.watch({ prefix }, { retained: true })) {
    if (ev.type === 'put') got++;
    if (ev.type === 'state_complete') break;
  }
  row(
    `retained join, ${keys.toLocaleString('en-US')} keys`,
    'Felix tls',
    `${(performance.now() - t0).toFixed(1)} ms`,
    '',
    `${got} values`,
  );
}

const right = (title: string) => ({ title, align: 'right' as const });
console.log(
  `\n${markdownTable(['scenario', 'system', right('p50 (or rate)'), right('p99'), 'note'], rows)}`,
);
await Promise.all(Object.values(clients).map((c) => c.close()));
redis.disconnect();
await broker.stop();
