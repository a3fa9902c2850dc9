/**
 * Diagnostic (not a comparison): where a Felix `consume()` drain spends its wall time, one line
 * per timed drain. Same setup as main.ts (2N records of 100 B held in the shard's ring, untimed
 * warm-up drains first), Felix only. For each drain: polls (and how many came back empty),
 * gaps between poll answers, poll and ack-batch round trips, stream opens, the client's event
 * loop use and GC pauses, the broker's GC and group counters (its /metrics), syscalls and
 * context switches of both processes, and the CPU of both split into the main thread and the
 * others (GC helpers, compiler, thread pool), both as ticks and as time on a CPU against time
 * runnable but waiting for one (schedstat). A `SUM` line gathers the figures that compare.
 *
 *   FELIX_BENCH_CONSUMERS=4 FELIX_BENCH_ROUNDS=3 node --import tsx scripts/bench/queue/trace.ts
 *
 * FELIX_BENCH_RECORDS (100,000), FELIX_BENCH_WARMUP (4), FELIX_BENCH_ROUNDS (3),
 * FELIX_BENCH_CONSUMERS (4) loops on one Group; FELIX_BENCH_ONE=0 leaves out the one-consumer
 * drains; FELIX_TRACE_INFLIGHT=1 samples the group's records in flight (`describe`) every 5 ms;
 * FELIX_TRACE_ALLOC=path writes a sampling allocation profile of this process over the timed
 * drains (scavenged objects included); FELIX_BENCH_BROKER_ARGS="--cpu-prof --cpu-prof-dir=d"
 * profiles the broker, and the `window` lines give each drain's span in CLOCK_MONOTONIC µs (the
 * clock of a .cpuprofile's timestamps), to cut the profile to the drains.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { PerformanceObserver, constants, performance } from 'node:perf_hooks';
import { connect } from '@felix/client';
import { percentile, procCpuSecs, startBroker, threadCpuSecs } from '@felix/testing-bench-kit';

const N = Number(process.env.FELIX_BENCH_RECORDS ?? 100_000);
const ROUNDS = Number(process.env.FELIX_BENCH_ROUNDS ?? 3);
const WARMUP = Number(process.env.FELIX_BENCH_WARMUP ?? 4);
const CONSUMERS = Number(process.env.FELIX_BENCH_CONSUMERS ?? 4);
/** FELIX_BENCH_ONE=0 leaves out the one-consumer drains (a profile of the others alone). */
const ONE = process.env.FELIX_BENCH_ONE !== '0';
const PAYLOAD = new Uint8Array(100).fill(7);

const broker = await startBroker({
  config: 'streams:\n  - { tenant: bench, name: q, durable: true, fsync: none }\n',
  env: { FELIX_MEMORY_RING_RECORDS: String(Math.max(65_536, 2 * N)) },
});
const felix = await connect({
  servers: [broker.url('tls')],
  tenant: 'bench',
  tls: { fingerprint: broker.fingerprint },
});
{
  const pub = felix.publisher('q', { lingerMs: 1 });
  await Promise.all(Array.from({ length: N * 2 }, () => pub.publish(PAYLOAD)));
}

function brokerCpuUs(): number {
  return existsSync(`/proc/${broker.pid}/stat`) ? procCpuSecs(broker.pid) * 1e6 : Number.NaN;
}

/** Syscalls (read/write-class, /proc/<pid>/io) and the main thread's context switches. */
function sys(pid: number | 'self'): { r: number; w: number; vcs: number; ivcs: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const st = readFileSync(`/proc/${pid}/status`, 'utf8');
  const f = (t: string, k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(t)?.[1]);
  return {
    r: f(io, 'syscr'),
    w: f(io, 'syscw'),
    vcs: f(st, 'voluntary_ctxt_switches'),
    ivcs: f(st, 'nonvoluntary_ctxt_switches'),
  };
}
function sysDelta(a: ReturnType<typeof sys>, b: ReturnType<typeof sys>): string {
  return `syscr ${b.r - a.r} syscw ${b.w - a.w} vcs ${b.vcs - a.vcs} ivcs ${b.ivcs - a.ivcs}`;
}

/** CPU µs of the main thread and of the others (/proc/<pid>/task/<tid>/stat), 10 ms ticks. */
function threadCpu(pid: number | 'self'): Map<string, number> {
  const t = threadCpuSecs(pid);
  return new Map([
    ['main', t.main * 1e6],
    ['others', t.others * 1e6],
  ]);
}
function threadDelta(a: Map<string, number>, b: Map<string, number>): string {
  return [...b]
    .map(([k, v]) => [k, v - (a.get(k) ?? 0)] as const)
    .filter(([, d]) => d > 0)
    .map(([k, d]) => `${k} ${(d / 1000).toFixed(0)}ms`)
    .join(', ');
}

/** ns on a CPU and ns runnable but waiting for one (schedstat), main thread and the others. */
function sched(pid: number | 'self'): Map<string, number> {
  const out = new Map<string, number>();
  const dir = `/proc/${pid}/task`;
  const me = String(pid === 'self' ? process.pid : pid);
  for (const tid of readdirSync(dir)) {
    let text: string;
    try {
      text = readFileSync(`${dir}/${tid}/schedstat`, 'utf8');
    } catch {
      continue;
    }
    const [run, wait] = text.split(' ').map(Number) as [number, number];
    const k = tid === me ? 'main' : 'others';
    out.set(`${k} run`, (out.get(`${k} run`) ?? 0) + run);
    out.set(`${k} wait`, (out.get(`${k} wait`) ?? 0) + wait);
  }
  return out;
}
function schedDelta(a: Map<string, number>, b: Map<string, number>, ms: number): string {
  return [...b]
    .map(([k, v]) => `${k} ${((v - (a.get(k) ?? 0)) / 1e6).toFixed(0)}`)
    .join(', ')
    .concat(` (ms of ${ms.toFixed(0)})`);
}

/** This process's GC pauses by kind (ms), from a PerformanceObserver. */
const clientGc = { minor: 0, major: 0, minorN: 0, majorN: 0 };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
      clientGc.minor += e.duration;
      clientGc.minorN++;
    } else {
      clientGc.major += e.duration;
      clientGc.majorN++;
    }
  }
}).observe({ entryTypes: ['gc'] });

interface Stats {
  polls: number;
  empty: number;
  pollMs: number[];
  records: number;
  opens: number;
  ackBatches: number;
  ackOffsets: number;
  ackMs: number[];
  lastAnswer: number;
  gaps1: number;
  gapMs: number;
  gapMax: number;
}
let stats: Stats;
const fresh = (): Stats => ({
  polls: 0,
  empty: 0,
  pollMs: [],
  records: 0,
  opens: 0,
  ackBatches: 0,
  ackOffsets: 0,
  ackMs: [],
  lastAnswer: 0,
  gaps1: 0,
  gapMs: 0,
  gapMax: 0,
});
stats = fresh();

// Instrument one Group's prototype (poll, and the request channel's group_ack_batch) and the
// connection's stream opens. Only `poll` is public; the others are private members of the built
// client, reached as plain properties (a diagnostic, not an API): when a client no longer has one,
// its probe is left out and its figures read 0, rather than the trace failing.
type Obj = Record<string, unknown>;
interface PendingAck {
  resolve(): void;
}
const missing: string[] = [];
const probe = felix.group('q', 'probe') as unknown as Obj;
const proto = Object.getPrototypeOf(probe) as Obj;
const poll = proto.poll as (...a: unknown[]) => Promise<unknown[]>;
proto.poll = async function (this: Obj, ...a: unknown[]) {
  const t = performance.now();
  const out = await poll.apply(this, a);
  stats.polls++;
  const now = performance.now();
  stats.pollMs.push(now - t);
  if (stats.lastAnswer > 0) {
    const gap = now - stats.lastAnswer;
    if (gap > 1) {
      stats.gaps1++;
      stats.gapMs += gap;
    }
    if (gap > stats.gapMax) stats.gapMax = gap;
  }
  stats.lastAnswer = now;
  stats.records += out.length;
  if (out.length === 0) stats.empty++;
  return out;
};
// The ack batches leave through `sendAcks(bc, items)`: on the group's settles part since the
// client's split (group-settles.ts), on the Group itself before it.
const ackProto = [probe.settles, probe]
  .map((o) => (o === undefined ? undefined : (Object.getPrototypeOf(o) as Obj)))
  .find((p) => typeof p?.sendAcks === 'function');
const sendAcks = ackProto?.sendAcks as ((bc: unknown, items: PendingAck[]) => void) | undefined;
if (ackProto !== undefined && typeof sendAcks === 'function') {
  ackProto.sendAcks = function (this: Obj, bc: unknown, items: PendingAck[]) {
    stats.ackBatches++;
    stats.ackOffsets += items.length;
    const t = performance.now();
    const last = items[items.length - 1]!;
    const resolve = last.resolve;
    last.resolve = () => {
      stats.ackMs.push(performance.now() - t);
      resolve();
    };
    return sendAcks.call(this, bc, items);
  };
} else missing.push('sendAcks (ack batches)');
const host = probe.host as { connection?(): Promise<unknown> } | undefined;
const bc = (typeof host?.connection === 'function' ? await host.connection() : undefined) as
  | Obj
  | undefined;
if (bc !== undefined && typeof bc.openStream === 'function') {
  const open = (bc.openStream as () => Promise<unknown>).bind(bc);
  bc.openStream = () => {
    stats.opens++;
    return open();
  };
} else missing.push('connection.openStream (stream opens)');
if (missing.length > 0)
  console.log(`not probed (the client has no such member): ${missing.join(', ')}`);

/** Broker metrics worth a delta per drain: GC seconds by kind, group counters. */
async function brokerMetrics(): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    if (
      line.includes('gc_duration_seconds_sum') ||
      line.includes('gc_duration_seconds_count') ||
      line.startsWith('felix_group_')
    ) {
      const i = line.lastIndexOf(' ');
      out.set(line.slice(0, i), Number(line.slice(i + 1)));
    }
  }
  return out;
}
function delta(a: Map<string, number>, b: Map<string, number>): string {
  const parts: string[] = [];
  for (const [k, v] of b) {
    const d = v - (a.get(k) ?? 0);
    if (d === 0) continue;
    const name = k
      .replace('felix_broker_process_nodejs_gc_duration_seconds', 'gc')
      .replace('felix_group_', '');
    parts.push(`${name}=${k.includes('_sum') ? `${(d * 1000).toFixed(1)}ms` : d}`);
  }
  return parts.join(' ');
}

/** Quantile `p` (0..1) of unsorted samples. */
const q = (xs: number[], p: number) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    p * 100,
  );

async function drainOnce(name: string, consumers: number, print: boolean) {
  const group = felix.group('q', name);
  await group.seek('earliest');
  stats = fresh();
  const stop = new AbortController();
  let taken = 0;
  let acked = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => {
    done = r;
  });
  const m0 = print ? await brokerMetrics() : undefined;
  const xb0 = sched(broker.pid);
  const xc0 = sched('self');
  const tb0 = threadCpu(broker.pid);
  const tc0 = threadCpu('self');
  const sb0 = sys(broker.pid);
  const sc0 = sys('self');
  const b0 = brokerCpuUs();
  const c0 = process.cpuUsage();
  const g0 = { ...clientGc };
  const h0 = process.hrtime.bigint() / 1000n;
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  let tTaken = 0;
  // FELIX_TRACE_INFLIGHT=1: sample the group's in-flight count (describe) every 5 ms.
  const inflight: number[] = [];
  let sampling = process.env.FELIX_TRACE_INFLIGHT === '1';
  const sampler = (async () => {
    while (sampling) {
      inflight.push((await group.describe()).inFlight);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const loops = Array.from({ length: consumers }, async () => {
    for await (const m of group.consume({ max: 100, waitMs: 1000, signal: stop.signal })) {
      m.ack().then(
        () => {
          if (++acked === N) done();
        },
        () => undefined,
      );
      if (++taken >= N) {
        tTaken = performance.now();
        break;
      }
    }
  });
  await all;
  const ms = performance.now() - t0;
  const c1 = process.cpuUsage();
  const elu = performance.eventLoopUtilization(elu0).utilization;
  const b1 = brokerCpuUs();
  const sb1 = sys(broker.pid);
  const tb1 = threadCpu(broker.pid);
  const xb1 = sched(broker.pid);
  const xc1 = sched('self');
  const tc1 = threadCpu('self');
  const sc1 = sys('self');
  stop.abort();
  sampling = false;
  await sampler;
  await Promise.allSettled(loops);
  if (inflight.length > 0 && print)
    console.log(
      `INFLIGHT ${name} p10 ${q(inflight, 0.1)} p50 ${q(inflight, 0.5)} p90 ${q(inflight, 0.9)} max ${q(inflight, 1)} (${inflight.length} samples)`,
    );
  if (!print) return;
  await new Promise((r) => setImmediate(r)); // GC entries arrive asynchronously
  const m1 = await brokerMetrics();
  const cg = `client gc minor ${clientGc.minorN - g0.minorN} ${(clientGc.minor - g0.minor).toFixed(0)} ms, other ${clientGc.majorN - g0.majorN} ${(clientGc.major - g0.major).toFixed(0)} ms`;
  // CLOCK_MONOTONIC µs, as a V8 .cpuprofile's timestamps: cut a broker profile to the drains.
  console.log(`window ${name} ${h0} ${h0 + BigInt(Math.round(ms * 1000))}`);
  const major = [...m1]
    .filter(([k]) => k.includes('count{kind="major"'))
    .reduce((a, [k, v]) => a + v - (m0!.get(k) ?? 0), 0);
  const td = (a: Map<string, number>, b: Map<string, number>, k: string) =>
    ((b.get(k) ?? 0) - (a.get(k) ?? 0)) / N;
  console.log(
    `SUM ${name} ${Math.round((N * 1000) / ms)} client ${td(tc0, tc1, 'main').toFixed(2)}+${td(tc0, tc1, 'others').toFixed(2)} broker ${td(tb0, tb1, 'main').toFixed(2)}+${td(tb0, tb1, 'others').toFixed(2)} µs/rec, broker major GCs ${major}; ${cg}; ack p50 ${q(stats.ackMs, 0.5).toFixed(1)} ms`,
  );
  const cpuC = (c1.user + c1.system - c0.user - c0.system) / N;
  console.log(
    `${name}: ${Math.round((N * 1000) / ms).toLocaleString('en-US')}/s ${ms.toFixed(1)} ms ` +
      `(last taken at ${(tTaken - t0).toFixed(1)} ms); cpu/rec client ${cpuC.toFixed(2)} broker ${((b1 - b0) / N).toFixed(2)} µs\n` +
      `  polls ${stats.polls} (empty ${stats.empty}), recs ${stats.records}, opens ${stats.opens}, ` +
      `answer gaps >1ms ${stats.gaps1} (${stats.gapMs.toFixed(1)} ms, max ${stats.gapMax.toFixed(1)}), client ELU ${elu.toFixed(2)}\n  poll ms p50 ${q(stats.pollMs, 0.5).toFixed(2)} p90 ${q(stats.pollMs, 0.9).toFixed(2)} max ${q(stats.pollMs, 1).toFixed(2)}\n` +
      `  ack batches ${stats.ackBatches} (${(stats.ackOffsets / stats.ackBatches).toFixed(0)} per), ` +
      `ack ms p50 ${q(stats.ackMs, 0.5).toFixed(2)} p90 ${q(stats.ackMs, 0.9).toFixed(2)} max ${q(stats.ackMs, 1).toFixed(2)}\n` +
      `  broker: ${delta(m0!, m1)}\n  broker ${sysDelta(sb0, sb1)}; client ${sysDelta(sc0, sc1)}\n` +
      `  broker threads: ${threadDelta(tb0, tb1)}\n  client threads: ${threadDelta(tc0, tc1)}\n` +
      `  broker sched: ${schedDelta(xb0, xb1, ms)}\n  client sched: ${schedDelta(xc0, xc1, ms)}`,
  );
}

for (let w = 0; w < WARMUP; w++) {
  if (ONE) await drainOnce(`w1-${w}`, 1, false);
  await drainOnce(`w${CONSUMERS}-${w}`, CONSUMERS, false);
}
// FELIX_TRACE_ALLOC=path: a sampling allocation profile of this process over the timed drains,
// objects collected by scavenges included (so it shows allocation, not what survived).
const allocPath = process.env.FELIX_TRACE_ALLOC;
const insp = allocPath ? new Session() : undefined;
const post = (m: string, p: object = {}) =>
  new Promise<Record<string, unknown>>((ok, fail) =>
    insp!.post(m, p, (e, r) => (e ? fail(e) : ok(r as Record<string, unknown>))),
  );
if (insp) {
  insp.connect();
  await post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMinorGC: true,
    includeObjectsCollectedByMajorGC: true,
  });
}
for (let r = 0; r < ROUNDS; r++) {
  if (ONE) await drainOnce(`c1-r${r}`, 1, true);
  await drainOnce(`c${CONSUMERS}-r${r}`, CONSUMERS, true);
}
if (insp) {
  const { profile } = await post('HeapProfiler.stopSampling');
  writeFileSync(allocPath!, JSON.stringify(profile));
}
await felix.close();
await broker.stop();
