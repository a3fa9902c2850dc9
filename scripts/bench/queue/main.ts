/**
 * Queue drain throughput: a Felix consumer group side by side with Redis Streams (XREADGROUP +
 * XACK, ioredis, 127.0.0.1:6379) and a NATS JetStream pull consumer (127.0.0.1:4222), in one run.
 *
 *   npx pnpm@10.34.9 build && node --import tsx scripts/bench/queue/main.ts
 *
 * Each system is loaded once with 2N records of 100 bytes (N = FELIX_BENCH_RECORDS, default
 * 100,000); every round then drains N of them into fresh groups with 1 and with 4 consumers,
 * Felix and Redis interleaved within the round and JetStream in a block of its own after them
 * (its server keeps working after a drain). FELIX_BENCH_ROUNDS (default 3) rounds; each row is
 * the median, with the range. Before them, FELIX_BENCH_WARMUP untimed rounds of the same drains,
 * for every system (default: enough to drain 400,000 records per configuration, 4 rounds at the
 * default N): Node's JIT keeps compiling the client's and the broker's paths over the first few
 * hundred thousand records (ten back-to-back drains of 100,000 with four consumers on a fresh
 * client and broker went from 241k/s to 672k/s, CPU per record falling from 3.5 to 1.3 µs in
 * the client and from 3.3 to 1.1 µs in the broker), and a running queue is warm. N was 20,000
 * before 2026-11-30: such a drain lasts 30-50 ms, so a single GC pause (client scavenges of
 * 2-10 ms, tens of ms on a loaded machine) or scheduler hiccup decided a round, and the fixed
 * costs of starting and ending a drain weighed five times as much. Every system gets the same N,
 * warm-up, record size and batch size. The broker's in-memory ring is sized to hold the whole
 * backlog (FELIX_MEMORY_RING_RECORDS = 2N; the default ring holds 65,536 records), as Redis
 * holds its stream in memory, so Felix drains from memory rather than from its log. Felix is
 * drained two ways: `group.consume()` (up to three polls in flight ahead while the batch is
 * acked, polls answered as binary group_records frames when the broker offers them, the acks
 * of one turn sent as one `group_ack_batch` when the broker offers it) and a poll loop
 * (poll 100, ack each, await all, poll again; `waitMs: 0`, like XREADGROUP without BLOCK, so a
 * consumer that finds everything claimed by the others does not sit out a long poll at the end).
 * Felix acknowledgements are durable (the group's cursor is written with an fsync before the ack
 * is answered, coalesced across the acks in flight); Redis Streams here acknowledge from memory;
 * JetStream acks are fire-and-forget (`m.ack()`), its default. Also prints the poll -> ack round
 * trip p50/p99 for one consumer taking one record at a time, and for each drain the CPU time
 * per record of this process and of the server: the Felix broker (utime + stime from /proc,
 * 10 ms ticks; the table also gives the mean over rounds, finer than one round's ticks) or the
 * Redis server (`INFO cpu`), a figure a shared machine disturbs less than a rate.
 * FELIX_BENCH_QUICK=1 shrinks the counts; FELIX_BENCH_SYSTEMS=felix,redis (default
 * felix,redis,nats) picks systems; FELIX_BENCH_CONSUME_ONLY=1 runs only the consume() drains
 * for Felix (for profiles).
 */
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { type FelixClient, connect } from '@felix/client';
import { Redis } from 'ioredis';
import {
  AckPolicy,
  type JetStreamClient,
  type JetStreamManager,
  connect as natsConnect,
} from 'nats';
import {
  latencies,
  markdownTable,
  median,
  padCells,
  percentile as pct,
  procCpuSecs,
  startBroker,
} from '@felix/testing-bench-kit';

const QUICK = process.env.FELIX_BENCH_QUICK === '1';
/** Records per drain (FELIX_BENCH_RECORDS); each system is loaded with twice as many. */
const N = Math.max(1000, Number(process.env.FELIX_BENCH_RECORDS ?? (QUICK ? 2000 : 100_000)));
const BATCH = 100;
const ROUNDS = Math.max(1, Number(process.env.FELIX_BENCH_ROUNDS ?? 3));
/** Untimed rounds first (same drains, every system), so timed rounds measure warm code: by
 *  default enough to drain 400,000 records per configuration. */
const WARMUP = Math.max(
  0,
  Number(process.env.FELIX_BENCH_WARMUP ?? (QUICK ? 1 : Math.ceil(400_000 / N))),
);
/** True while the warm-up rounds run: nothing is recorded or printed. */
let warming = false;
const SYSTEMS = (process.env.FELIX_BENCH_SYSTEMS ?? 'felix,redis,nats').split(',');
const PAYLOAD = new Uint8Array(100).fill(7);
const NATS_URL = process.env.NATS_URL ?? '127.0.0.1:4222';
/** Felix drains with consume() only (no poll loop, no one-at-a-time latency), so a client
 *  profile (`node --cpu-prof`) holds the consume path and the load alone. */
const CONSUME_ONLY = process.env.FELIX_BENCH_CONSUME_ONLY === '1';

/** Samples per "scenario|system|note|unit" across rounds. */
const samples = new Map<string, number[]>();
function sample(scenario: string, system: string, value: number, unit: '/s' | 'µs', note = '') {
  if (warming) return;
  const key = `${scenario}|${system}|${note}|${unit}`;
  samples.set(key, [...(samples.get(key) ?? []), value]);
  const shown = unit === '/s' ? `${fmt(value)}/s` : `${fmtUs(value)} µs`;
  console.log(padCells([scenario, system, shown, note], [34, 26, -12, 0]));
}
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
/** Microseconds: small values (CPU per record) keep two decimals. */
const fmtUs = (n: number) => (n < 100 ? n.toFixed(2) : fmt(n));
const perSec = (n: number, ms: number) => (n * 1000) / ms;
const drainName = (c: number) =>
  `drain ${N.toLocaleString('en-US')}, ${c} consumer${c > 1 ? 's' : ''}`;

/** Runs `consumers` loops of `drainOnce` until `n` records were acknowledged; answers ms. */
async function drain(
  consumers: number,
  n: number,
  drainOnce: (i: number) => Promise<number>,
): Promise<number> {
  let acked = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: consumers }, async (_, i) => {
      while (acked < n) {
        const got = await drainOnce(i); // read-after-await: `acked += await` would lose updates
        acked += got;
      }
    }),
  );
  return performance.now() - t0;
}

// ---- CPU per record (a shared machine's throughput is noisy; CPU spent per record is less so) ----
interface CpuMark {
  client: number;
  server: number | undefined;
}

/** CPU µs used so far by this process and (Linux /proc, 10 ms ticks) by the broker process. */
function felixCpu(): CpuMark {
  const c = process.cpuUsage();
  const brokerUs = existsSync(`/proc/${broker.pid}/stat`)
    ? procCpuSecs(broker.pid) * 1e6
    : undefined;
  return { client: c.user + c.system, server: brokerUs };
}

/** CPU µs used so far by this process and by the Redis server (`INFO cpu`, µs resolution; the
 *  INFO call itself is a few µs of server CPU per drain). */
async function redisCpu(redis: Redis): Promise<CpuMark> {
  const c = process.cpuUsage();
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1]);
  const server = (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
  return { client: c.user + c.system, server: Number.isFinite(server) ? server : undefined };
}

function sampleCpu(
  scenario: string,
  system: string,
  since: CpuMark,
  now: CpuMark,
  serverName = 'broker',
) {
  sample(`${scenario}, CPU per record`, `${system} client`, (now.client - since.client) / N, 'µs');
  if (now.server !== undefined && since.server !== undefined) {
    sample(
      `${scenario}, CPU per record`,
      `${system} ${serverName}`,
      (now.server - since.server) / N,
      'µs',
    );
  }
}

// ---- Felix ----
async function felixRound(felix: FelixClient, round: number): Promise<void> {
  for (const consumers of [1, 4]) {
    // consume(): each consumer runs a loop and acks without awaiting; done when N acks resolved.
    // The loops stop taking records once N were taken (as the Redis loops stop reading once N
    // were acked): otherwise they keep working through records polled ahead while the last
    // acks wait for their cursor write, work no other system here does inside its timing.
    const group = felix.group('q', `c${consumers}-r${round}`);
    await group.seek('earliest');
    const stop = new AbortController();
    let taken = 0;
    let acked = 0;
    let done!: () => void;
    const all = new Promise<void>((r) => {
      done = r;
    });
    const cpu0 = felixCpu();
    const t0 = performance.now();
    const loops = Array.from({ length: consumers }, async () => {
      for await (const m of group.consume({ max: BATCH, waitMs: 1000, signal: stop.signal })) {
        m.ack().then(
          () => {
            if (++acked === N) done();
          },
          () => undefined,
        );
        if (++taken >= N) break;
      }
    });
    await all;
    const ms = performance.now() - t0;
    stop.abort();
    await Promise.allSettled(loops);
    sample(drainName(consumers), 'Felix consume() (TLS)', perSec(N, ms), '/s', 'durable cursor');
    sampleCpu(drainName(consumers), 'Felix consume()', cpu0, felixCpu());
  }
  if (CONSUME_ONLY) return;
  for (const consumers of [1, 4]) {
    const group = felix.group('q', `p${consumers}-r${round}`);
    await group.seek('earliest');
    const cpu0 = felixCpu();
    const ms = await drain(consumers, N, async () => {
      const msgs = await group.poll({ max: BATCH, waitMs: 0 });
      await Promise.all(msgs.map((m) => m.ack()));
      return msgs.length;
    });
    sample(drainName(consumers), 'Felix poll loop (TLS)', perSec(N, ms), '/s', 'durable cursor');
    sampleCpu(drainName(consumers), 'Felix poll loop', cpu0, felixCpu());
  }
  const group = felix.group('q', `one-r${round}`);
  await group.seek('earliest');
  const lat = await latencies(QUICK ? 200 : 2000, async () => {
    const [m] = await group.poll({ max: 1, waitMs: 1000 });
    await m!.ack();
  });
  sample('poll 1 + ack, one at a time, p50', 'Felix group (TLS)', pct(lat, 50), 'µs');
}

// ---- Redis Streams ----
async function redisRound(redis: Redis, key: string, round: number): Promise<void> {
  for (const consumers of [1, 4]) {
    const group = `g${consumers}-r${round}`;
    await redis.xgroup('CREATE', key, group, '0');
    const conns = Array.from(
      { length: consumers },
      () => new Redis({ host: '127.0.0.1', port: 6379 }),
    );
    const cpu0 = await redisCpu(redis);
    const ms = await drain(consumers, N, async (i) => {
      const r = conns[i]!;
      const res = (await r.xreadgroup(
        'GROUP',
        group,
        `c${i}`,
        'COUNT',
        BATCH,
        'STREAMS',
        key,
        '>',
      )) as [string, [string, string[]][]][] | null;
      const ids = res?.[0]?.[1].map(([id]) => id) ?? [];
      if (ids.length > 0) await r.xack(key, group, ...ids);
      return ids.length;
    });
    const cpu1 = await redisCpu(redis);
    sample(drainName(consumers), 'Redis Streams', perSec(N, ms), '/s', 'in memory');
    sampleCpu(drainName(consumers), 'Redis Streams', cpu0, cpu1, 'server');
    for (const r of conns) r.disconnect();
  }
  const one = `one-r${round}`;
  await redis.xgroup('CREATE', key, one, '0');
  const lat = await latencies(QUICK ? 200 : 2000, async () => {
    const res = (await redis.xreadgroup('GROUP', one, 'c', 'COUNT', 1, 'STREAMS', key, '>')) as [
      string,
      [string, string[]][],
    ][];
    await redis.xack(key, one, res[0]![1][0]![0]);
  });
  sample('poll 1 + ack, one at a time, p50', 'Redis Streams', pct(lat, 50), 'µs');
}

// ---- NATS JetStream ----
/** Waits (at most 10 s) until the JetStream consumer has no acknowledgement pending. */
async function settleAcks(jsm: JetStreamManager, stream: string, durable: string): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    const info = await jsm.consumers.info(stream, durable);
    if (info.num_ack_pending === 0) return;
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function natsRound(
  jsm: JetStreamManager,
  js: JetStreamClient,
  name: string,
  round: number,
): Promise<void> {
  for (const consumers of [1, 4]) {
    const durable = `g${consumers}-r${round}`;
    await jsm.consumers.add(name, { durable_name: durable, ack_policy: AckPolicy.Explicit });
    const consumer = await js.consumers.get(name, durable);
    const ms = await drain(consumers, N, async () => {
      const iter = await consumer.fetch({ max_messages: BATCH, expires: 1000 });
      let n = 0;
      for await (const m of iter) {
        m.ack();
        n++;
      }
      return n;
    });
    sample(drainName(consumers), 'JetStream pull', perSec(N, ms), '/s', 'acks not awaited');
    // Untimed: let the server finish the acks sent without waiting, so its work does not spill
    // into the next system's drain (Felix's, in the next round) on these two cores.
    await settleAcks(jsm, name, durable);
  }
  const one = `one-r${round}`;
  await jsm.consumers.add(name, { durable_name: one, ack_policy: AckPolicy.Explicit });
  const consumer = await js.consumers.get(name, one);
  const lat = await latencies(QUICK ? 200 : 2000, async () => {
    const m = await consumer.next({ expires: 1000 });
    await m!.ackAck();
  });
  sample('poll 1 + ack, one at a time, p50', 'JetStream (ackAck)', pct(lat, 50), 'µs');
}

// ---- setup, rounds, medians ----
const loads: string[] = [];
const broker = await startBroker({
  config: 'streams:\n  - { tenant: bench, name: q, durable: true, fsync: none }\n',
  // The shard's in-memory ring holds the whole backlog (Redis holds it in memory too), so a
  // larger FELIX_BENCH_RECORDS still drains from memory rather than from the log.
  env: { FELIX_MEMORY_RING_RECORDS: String(Math.max(65_536, 2 * N)) },
});
const felix = await connect({
  servers: [broker.url('tls')],
  tenant: 'bench',
  tls: { fingerprint: broker.fingerprint },
});
console.log(
  `broker pid ${broker.pid}; Redis 127.0.0.1:6379; NATS ${NATS_URL}; N=${N}; ${ROUNDS} round(s)\n`,
);
{
  const pub = felix.publisher('q', { lingerMs: 1 });
  await Promise.all(Array.from({ length: N * 2 }, () => pub.publish(PAYLOAD)));
}
const redis = new Redis({ host: '127.0.0.1', port: 6379 });
const key = `felix-bench-q-${Date.now()}`;
if (SYSTEMS.includes('redis')) {
  for (let i = 0; i < N * 2; i += 1000) {
    const p = redis.pipeline();
    for (let j = 0; j < 1000; j++) p.xaddBuffer(key, '*', 'p', Buffer.from(PAYLOAD));
    await p.exec();
  }
}
const nc = SYSTEMS.includes('nats') ? await natsConnect({ servers: NATS_URL }) : undefined;
const jsm = await nc?.jetstreamManager();
const js = nc?.jetstream();
const natsName = `FELIXQ${Date.now()}`;
if (jsm && js) {
  await jsm.streams.add({ name: natsName, subjects: [`${natsName}.x`] });
  await Promise.all(
    Array.from({ length: 64 }, async (_, w) => {
      for (let i = w; i < N * 2; i += 64) await js.publish(`${natsName}.x`, PAYLOAD);
    }),
  );
}
warming = true;
// Felix and Redis (the goal's pair) alternate round by round. JetStream runs in a block of its
// own afterwards: its server keeps writing its file store after a drain ends, and on two cores
// that work landed inside the next Felix drains (4 consumers measured 0.39 M/s with JetStream
// interleaved, 0.64-0.77 M/s without, against Redis at 0.69-0.78 M/s either way).
for (let w = 0; w < WARMUP; w++) {
  // Negative round numbers: the warm-up's groups never share a name with a timed round's.
  if (SYSTEMS.includes('felix')) await felixRound(felix, -1 - w);
  if (SYSTEMS.includes('redis')) await redisRound(redis, key, -1 - w);
}
warming = false;
if (WARMUP > 0) console.log(`${WARMUP} warm-up round(s) done (not timed)`);
for (let round = 0; round < ROUNDS; round++) {
  const before = loadavg()[0]!.toFixed(1);
  console.log(`-- round ${round + 1} (load ${before})`);
  if (SYSTEMS.includes('felix')) await felixRound(felix, round);
  if (SYSTEMS.includes('redis')) await redisRound(redis, key, round);
  loads.push(`${before} → ${loadavg()[0]!.toFixed(1)}`);
}
if (jsm && js) {
  warming = true;
  for (let w = 0; w < WARMUP; w++) await natsRound(jsm, js, natsName, -1 - w);
  warming = false;
  for (let round = 0; round < ROUNDS; round++) await natsRound(jsm, js, natsName, round);
}
await felix.close();
await broker.stop();
if (SYSTEMS.includes('redis')) await redis.del(key);
redis.disconnect();
if (jsm) await jsm.streams.delete(natsName);
await nc?.close();

console.log(`\nload average (1 min) per round: ${loads.join('; ')}`);
const table: string[][] = [];
for (const [k, xs] of samples) {
  const [scenario, system, note, unit] = k.split('|') as [string, string, string, string];
  const u = unit === '/s' ? '/s' : ' µs';
  const f = unit === '/s' ? fmt : fmtUs;
  // A round's broker figure is whole 10 ms ticks over one drain (steps of 0.1 µs per record at
  // N = 100,000); the mean over rounds is the CPU of all rounds over all their records, finer.
  const shown = scenario.endsWith('CPU per record')
    ? `mean ${fmtUs(xs.reduce((a, b) => a + b, 0) / xs.length)} µs${note ? `; ${note}` : ''}`
    : note;
  table.push([
    scenario,
    system,
    `${f(median(xs))}${u}`,
    `${f(Math.min(...xs))}-${f(Math.max(...xs))}${u}`,
    shown,
  ]);
}
const right = (title: string) => ({ title, align: 'right' as const });
console.log(
  `\n${markdownTable(['scenario', 'system', right(`median of ${ROUNDS}`), right('range'), 'note'], table)}`,
);
