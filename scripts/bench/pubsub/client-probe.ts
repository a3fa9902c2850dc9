/**
 * Where the pub→sub client's CPU goes: the throughput case of scripts/bench/pubsub (a publisher
 * and a subscriber connection in this process, the broker in a child) with counts around it.
 * Per message it prints the CPU of this process (main thread and other threads apart) and of the
 * broker, the garbage collections of this process by kind and reason, and per UDP socket the
 * datagrams sent and received with their bytes. With `--allocs` it also counts the buffers this
 * process allocates outside V8's heap (Buffer.from/alloc/allocUnsafe/allocUnsafeSlow of 4 KiB or
 * more, which skip Node's pool) by the function that asked, and the UDP receive buffers.
 *
 *   node --import tsx scripts/bench/pubsub/client-probe.ts [--transport quic|tls] [--count 30000]
 *        [--rounds 5] [--allocs] [--external] [--native] [--memory]
 * `--external` adds up the rises of V8's external memory once per event-loop turn (about the
 * off-heap bytes allocated); `--native` counts the calls into quiche's binding by method;
 * `--memory` prints after each round this process's and the broker's RSS, heap used and
 * external memory, and the broker's collections in the round (from its /metrics), so a memory
 * that grows across rounds shows as a trend.
 */
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { type FelixClient, connect } from '@felix/client';
import {
  type BenchBroker,
  argValue,
  procCpuSecs,
  rssMiB,
  startBroker,
  threadCpuSecs,
} from '@felix/testing-bench-kit';

const TRANSPORT = argValue('--transport', 'quic') as 'quic' | 'tls';
const COUNT = Number(argValue('--count', '30000'));
const ROUNDS = Number(argValue('--rounds', '5'));
const SIZE = Number(argValue('--size', '1024'));
const ALLOCS = process.argv.includes('--allocs');
/** Samples V8's external memory once per event-loop turn and adds up the rises: about the
 *  off-heap bytes allocated (frees come only with a collection, which a turn rarely holds). */
const EXTERNAL = process.argv.includes('--external');
/** Counts every call into quiche's binding (the copy @felix/client loads) by method. */
const NATIVE = process.argv.includes('--native');
/** Per-round memory of both processes and the broker's collections (its Prometheus metrics). */
const MEMORY = process.argv.includes('--memory');

const counts = new Map<string, number>();
function bump(name: string, by = 1): void {
  counts.set(name, (counts.get(name) ?? 0) + by);
}

/** A short name for each UDP socket, in the order they first send or receive. */
const socketNames = new WeakMap<object, string>();
let sockets = 0;
function socketName(s: object): string {
  let n = socketNames.get(s);
  if (n === undefined) {
    n = `udp${sockets++}`;
    socketNames.set(s, n);
  }
  return n;
}

function instrumentUdp(): void {
  const proto = dgram.Socket.prototype as unknown as {
    send: (...a: unknown[]) => void;
    emit: (ev: string, ...a: unknown[]) => boolean;
  };
  const send = proto.send;
  proto.send = function (this: object, ...a: unknown[]) {
    const name = socketName(this);
    const buf = a[0] as Uint8Array;
    const len = typeof a[2] === 'number' ? (a[2] as number) : buf.byteLength;
    bump(`${name} sent datagrams`);
    bump(`${name} sent bytes`, len);
    if (len < 1200) bump(`${name} sent datagrams < 1200 B`);
    return send.apply(this, a);
  };
  const emit = proto.emit;
  proto.emit = function (this: object, ev: string, ...a: unknown[]) {
    if (ev === 'message') {
      const name = socketName(this);
      const buf = a[0] as Uint8Array;
      bump(`${name} received datagrams`);
      bump(`${name} received bytes`, buf.byteLength);
      if (buf.byteLength < 1200) bump(`${name} received datagrams < 1200 B`);
    }
    return emit.call(this, ev, ...a);
  };
}

/** Who asked for an unpooled buffer: the first stack frame outside node:buffer. */
function caller(): string {
  const stack = new Error().stack?.split('\n') ?? [];
  const frame = stack.slice(3).find((l) => !l.includes('node:buffer')) ?? '?';
  return frame
    .trim()
    .replace(/^at /, '')
    .replace(/\(.*\/([^/]+:\d+):\d+\)$/, '($1)');
}

function instrumentAllocs(): void {
  const B = Buffer as unknown as Record<string, (...a: unknown[]) => Buffer>;
  for (const name of ['from', 'alloc', 'allocUnsafe', 'allocUnsafeSlow']) {
    const f = B[name]!;
    B[name] = function (this: unknown, ...a: unknown[]) {
      const b = f.apply(this, a);
      if (b.byteLength >= 4096) {
        const who = `alloc ${name} ${caller()}`;
        bump(`${who} calls`);
        bump(`${who} bytes`, b.byteLength);
      }
      return b;
    };
  }
}

function observeGc(): void {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      // perf_hooks' NODE_PERFORMANCE_GC_*: 1 minor (scavenge), 4 major, 8 incremental, 16 weak
      const name = ({ 1: 'scavenge', 4: 'mark-compact', 8: 'incremental', 16: 'weakcb' } as const)[
        kind as 1 | 4 | 8 | 16
      ];
      bump(`gc ${name ?? kind}`);
      bump(`gc ${name ?? kind} ms`, e.duration);
    }
  }).observe({ entryTypes: ['gc'] });
}

async function run(b: { port: number; fingerprint: string }): Promise<Record<string, number>> {
  const dial = (): Promise<FelixClient> =>
    connect({
      servers: [`${TRANSPORT}://127.0.0.1:${b.port}`],
      tenant: 't1',
      tls: { fingerprint: b.fingerprint },
    });
  sockets = 0;
  const sub = await dial();
  const pubClient = await dial();
  const start = await pubClient.publish('bench', 'mark');
  const from = start.offset! + 1;
  const last = from + COUNT - 1;
  const done = (async () => {
    for await (const ev of sub.subscribe('bench', { from, shard: 0 })) {
      if (ev.offset >= last) break;
    }
  })();
  const payload = new Uint8Array(SIZE).fill(97);
  counts.clear();
  const cpu0 = process.cpuUsage();
  const thr0 = threadCpuSecs('self');
  const broker0 = threadCpuSecs(brokerPid);
  const faults0 = [minorFaults('self'), minorFaults(brokerPid)];
  const t0 = performance.now();
  const pub = pubClient.publisher('bench', { lingerMs: 1, maxBatchRecords: 512, ack: true });
  for (let i = 0; i < COUNT; i++) {
    if (!pub.send(payload)) await pub.ready();
  }
  await pub.flush();
  await done;
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const thr = threadCpuSecs('self');
  const broker = threadCpuSecs(brokerPid);
  const faults = [minorFaults('self') - faults0[0]!, minorFaults(brokerPid) - faults0[1]!];
  const out: Record<string, number> = Object.fromEntries(counts);
  await Promise.all([sub.close(), pubClient.close()]);
  const perMsg = (s: number) => (s * 1e6) / COUNT;
  return {
    ...out,
    'msgs/s': COUNT / secs,
    'µs/msg client cpuUsage': (cpu.user + cpu.system) / COUNT,
    'µs/msg client main thread': perMsg(thr.main - thr0.main),
    'µs/msg client other threads': perMsg(thr.others - thr0.others),
    'µs/msg broker main thread': perMsg(broker.main - broker0.main),
    'µs/msg broker other threads': perMsg(broker.others - broker0.others),
    'client minor faults': faults[0]!,
    'broker minor faults': faults[1]!,
  };
}

function meterExternal(): void {
  let last = getHeapStatistics().external_memory;
  const tick = (): void => {
    const now = getHeapStatistics().external_memory;
    if (now > last) bump('external bytes allocated', now - last);
    last = now;
    setImmediate(tick).unref();
  };
  tick();
}

function countNative(): void {
  // The same file @felix/client's bundle requires, so the same module and classes.
  const req = createRequire(import.meta.resolve('@felix/client'));
  const quiche = req('@matrixai/quic-linux-x64') as { Connection: { prototype: object } };
  const proto = quiche.Connection.prototype as Record<string, unknown>;
  for (const name of Object.getOwnPropertyNames(proto)) {
    const f = proto[name];
    if (name === 'constructor' || typeof f !== 'function') continue;
    proto[name] = function (this: unknown, ...a: unknown[]) {
      bump(`quiche ${name}`);
      return (f as (...x: unknown[]) => unknown).apply(this, a);
    };
  }
}

/** The broker's samples this probe reads (prom-client's default metrics, the broker's prefix). */
const BROKER_SAMPLES = {
  heapMiB: 'felix_broker_process_nodejs_heap_size_used_bytes',
  externalMiB: 'felix_broker_process_nodejs_external_memory_bytes',
  majorGcs: 'felix_broker_process_nodejs_gc_duration_seconds_count{kind="major"}',
  minorGcs: 'felix_broker_process_nodejs_gc_duration_seconds_count{kind="minor"}',
  /** Summed over labels: connections still open once a round's clients closed. */
  connections: 'felix_broker_connections',
  batches: 'felix_broker_event_batches_encoded_total',
} as const;

async function brokerMemory(b: BenchBroker): Promise<Record<keyof typeof BROKER_SAMPLES, number>> {
  const lines = (await b.metricsText()).split('\n');
  // A sample absent so far (no major collection yet) reads 0; labelled samples are summed.
  const read = (name: string): number =>
    lines
      .filter((x) => x.startsWith(`${name} `) || (!name.includes('{') && x.startsWith(`${name}{`)))
      .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const mib = (n: number) => n / 1024 / 1024;
  return {
    heapMiB: mib(read(BROKER_SAMPLES.heapMiB)),
    externalMiB: mib(read(BROKER_SAMPLES.externalMiB)),
    majorGcs: read(BROKER_SAMPLES.majorGcs),
    minorGcs: read(BROKER_SAMPLES.minorGcs),
    connections: read(BROKER_SAMPLES.connections),
    batches: read(BROKER_SAMPLES.batches),
  };
}

/** Minor page faults of a process so far (field 10 of /proc/<pid>/stat, counted after the
 *  command name's closing parenthesis): fresh pages the allocator touched. */
function minorFaults(pid: number | 'self'): number {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[7]);
}

/** One line of both processes' memory after a round, and the broker's collections in it. */
async function memoryLine(
  b: BenchBroker,
  before: Awaited<ReturnType<typeof brokerMemory>>,
): Promise<{ line: string; after: Awaited<ReturnType<typeof brokerMemory>> }> {
  const m = process.memoryUsage();
  const mib = (n: number) => (n / 1024 / 1024).toFixed(1);
  const after = await brokerMemory(b);
  const line =
    `  memory: client rss ${mib(m.rss)} heap ${mib(m.heapUsed)} external ${mib(m.external)} MiB; ` +
    `broker rss ${rssMiB(b.pid).rss.toFixed(1)} heap ${after.heapMiB.toFixed(1)} external ` +
    `${after.externalMiB.toFixed(1)} MiB, mark-compacts ${after.majorGcs - before.majorGcs}, ` +
    `scavenges ${after.minorGcs - before.minorGcs}, connections ${after.connections}, ` +
    `event batches ${((after.batches - before.batches) / COUNT).toFixed(4)}/msg; client handles ` +
    `${(process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().length}`;
  return { line, after };
}

instrumentUdp();
if (EXTERNAL) meterExternal();
if (NATIVE) countNative();
if (ALLOCS) instrumentAllocs();
observeGc();
const broker = await startBroker({ config: 'streams:\n  - { tenant: t1, name: bench }\n' });
const brokerPid = broker.pid;
try {
  await run(broker); // warm-up
  const all: Array<Record<string, number>> = [];
  let brokerBefore = MEMORY ? await brokerMemory(broker) : null;
  for (let r = 0; r < ROUNDS; r++) {
    const load = loadavg()[0]!.toFixed(1);
    const res = await run(broker);
    all.push(res);
    console.log(
      `${TRANSPORT} round ${r + 1} (load ${load}): ${Math.round(res['msgs/s']!)} msgs/s, client ${res['µs/msg client cpuUsage']!.toFixed(2)} µs/msg (main ${res['µs/msg client main thread']!.toFixed(2)}, others ${res['µs/msg client other threads']!.toFixed(2)}), broker main ${res['µs/msg broker main thread']!.toFixed(2)} others ${res['µs/msg broker other threads']!.toFixed(2)}, mark-compacts ${res['gc mark-compact'] ?? 0}, scavenges ${res['gc scavenge'] ?? 0}, minor faults per msg client ${(res['client minor faults']! / COUNT).toFixed(3)} broker ${(res['broker minor faults']! / COUNT).toFixed(3)}${EXTERNAL ? `, off-heap ${Math.round((res['external bytes allocated'] ?? 0) / COUNT)} B/msg` : ''}`,
    );
    if (brokerBefore !== null) {
      const m = await memoryLine(broker, brokerBefore);
      console.log(m.line);
      brokerBefore = m.after;
    }
  }
  // Counts per message, the median over rounds.
  const keys = [...new Set(all.flatMap((r) => Object.keys(r)))].sort();
  for (const k of keys) {
    const v = all.map((r) => r[k] ?? 0).sort((a, z) => a - z)[Math.floor(all.length / 2)]!;
    if (v === 0) continue;
    const plain = k.startsWith('µs/msg') || k === 'msgs/s' || k.startsWith('gc');
    const per = plain ? v : v / COUNT;
    console.log(`  ${k.padEnd(70)} ${per.toFixed(per >= 100 ? 0 : 4)}${plain ? '' : ' per msg'}`);
  }
} finally {
  await broker.stop();
  console.log(`broker cpu ${procCpuSecs('self').toFixed(1)} s (this process)`);
}
process.exit(0);
