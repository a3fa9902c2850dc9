/**
 * Where a QUIC round trip goes: 100 B echoed on one stream, one at a time, the echo side in a
 * child process. Per round trip it reports
 *   - the CPU each process spent (`process.cpuUsage()` here, /proc for the child);
 *   - with `--count`, how many timers, immediates, promises, UDP sends and UDP receives each
 *     side created (async_hooks init by resource type, plus wrappers on node:dgram);
 *   - with `--trace`, a per-stage timeline: the median time from the client's write to each
 *     stage on either side (process.hrtime is CLOCK_MONOTONIC, shared by both processes).
 * Profile either side with `--cpu-prof` (this process) or FELIX_BENCH_CHILD_PROF=1 (the echo side).
 *
 *   node --import tsx scripts/bench/transport/quic-rtt-trace.ts [--pings 5000] [--count] [--trace]
 *        [--transport quic|tls]
 */
import { createHook } from 'node:async_hooks';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TransportStream, dial, listen, loadOrCreateDevCertificate } from '@felix/transport';
import {
  argValue,
  assertFreshBuild,
  percentile,
  procCpuSecs,
  serveSelf,
  threadCpuSecs,
} from '@felix/testing-bench-kit';

assertFreshBuild(import.meta.resolve('@felix/transport'));

const PINGS = Number(argValue('--pings', '5000'));
const TRANSPORT = argValue('--transport', 'quic') as 'quic' | 'tls';
const COUNT = process.argv.includes('--count');
const NATIVE = process.argv.includes('--native');
const TRACE = process.argv.includes('--trace');
const SIZE = 100;
/** The first byte of a stream asking the echo side for its counters and trace. */
const OP_REPORT = 0x52;

// ------------------------------------------------------------------ counters and trace (both)

const counts = new Map<string, number>();
function bump(name: string): void {
  counts.set(name, (counts.get(name) ?? 0) + 1);
}
const events: Array<[string, bigint]> = [];
let tracing = false;
function stamp(label: string): void {
  if (tracing) events.push([label, process.hrtime.bigint()]);
}

function instrument(): void {
  if (COUNT) {
    createHook({
      init(_id, type) {
        bump(type);
      },
    }).enable();
  }
  const proto = dgram.Socket.prototype as unknown as {
    send: (...a: unknown[]) => void;
    emit: (ev: string, ...a: unknown[]) => boolean;
  };
  const send = proto.send;
  proto.send = function (this: unknown, ...a: unknown[]) {
    bump('udp send');
    stamp('udp send');
    return send.apply(this, a);
  };
  const emit = proto.emit;
  proto.emit = function (this: unknown, ev: string, ...a: unknown[]) {
    if (ev !== 'message') return emit.call(this, ev, ...a);
    bump('udp message');
    stamp('udp message');
    const r = emit.call(this, ev, ...a);
    stamp('udp message handled');
    return r;
  };
}

/** Wall time inside each native quiche call and the UDP send syscall (µs totals, in `counts`). */
async function timeNative(): Promise<void> {
  const url = new URL(
    '../../../packages/transport/node_modules/@felix-vendor/matrixai-quic/dist/native/quiche.js',
    import.meta.url,
  );
  const quiche = (await import(url.href)).default as Record<string, { prototype: object }>;
  const wrap = (proto: Record<string, unknown>, name: string, label: string) => {
    const f = proto[name] as (...a: unknown[]) => unknown;
    if (typeof f !== 'function') return;
    proto[name] = function (this: unknown, ...a: unknown[]) {
      const t = process.hrtime.bigint();
      try {
        return f.apply(this, a);
      } finally {
        const us = Number(process.hrtime.bigint() - t) / 1000;
        counts.set(`µs ${label}`, (counts.get(`µs ${label}`) ?? 0) + us);
        bump(`calls ${label}`);
      }
    };
  };
  const conn = quiche.Connection!.prototype as Record<string, unknown>;
  // The stream iterators are napi generators: time walking them, not only creating them.
  for (const name of ['readable', 'writable']) {
    const f = conn[name] as (...a: unknown[]) => Iterable<number>;
    conn[name] = function (this: unknown) {
      const t = process.hrtime.bigint();
      const ids = [...f.call(this)];
      const us = Number(process.hrtime.bigint() - t) / 1000;
      counts.set(`µs walk ${name}`, (counts.get(`µs walk ${name}`) ?? 0) + us);
      return ids;
    };
  }
  const connUrl = new URL('../QUICConnection.js', url);
  const QUICConnection = (await import(connUrl.href)).default as { prototype: object };
  for (const name of ['processStreams', 'send', 'recv'])
    wrap(QUICConnection.prototype as Record<string, unknown>, name, `js ${name}`);
  const iterProto = (quiche as unknown as Record<string, { prototype: object }>).StreamIter;
  if (iterProto)
    wrap(iterProto.prototype as Record<string, unknown>, 'next', 'quiche StreamIter.next');
  for (const name of Object.getOwnPropertyNames(conn)) {
    if (name !== 'constructor') wrap(conn, name, `quiche ${name}`);
  }
  // biome-ignore lint/suspicious/noExplicitAny: the deprecated binding is the only way to the UDP handle
  const udp = (process as any).binding('udp_wrap').UDP.prototype as Record<string, unknown>;
  wrap(udp, 'send', 'udp handle.send');
  // Wall time inside the send can include being preempted by the peer it wakes: CPU time too.
  const timed = udp.send as (...a: unknown[]) => unknown;
  udp.send = function (this: unknown, ...a: unknown[]) {
    const c = process.cpuUsage();
    try {
      return timed.apply(this, a);
    } finally {
      const d = process.cpuUsage(c);
      counts.set(
        'µs cpu udp handle.send',
        (counts.get('µs cpu udp handle.send') ?? 0) + d.user + d.system,
      );
    }
  };
}

function snapshot(): Record<string, number> {
  const out = Object.fromEntries(counts);
  counts.clear();
  return out;
}

// ------------------------------------------------------------------ echo side (child)

async function serve(dir: string): Promise<void> {
  // Exit cleanly on SIGTERM so a --cpu-prof of this side is written.
  process.on('SIGTERM', () => process.exit(0));
  instrument();
  if (NATIVE) await timeNative();
  const tls = await loadOrCreateDevCertificate(dir);
  const l = await listen({ transport: TRANSPORT, port: 0, tls, maxStreams: 16 });
  void (async () => {
    for await (const conn of l.connections()) {
      void (async () => {
        for await (const s of conn.incoming()) void echo(s).catch(() => undefined); // peer gone
      })().catch(() => undefined); // the connection closing at the end of the run
    }
  })();
  process.stdout.write(`${JSON.stringify({ port: l.port, fingerprint: tls.fingerprint })}\n`);
}

async function echo(s: TransportStream): Promise<void> {
  const it = s[Symbol.asyncIterator]();
  for (;;) {
    const r = await it.next();
    if (r.done) break;
    stamp('echo read');
    if (r.value[0] === OP_REPORT) {
      const body = JSON.stringify({
        counts: snapshot(),
        cpu: procCpuSecs('self'),
        events: events.map(([l, t]) => [l, t.toString()]),
      });
      events.length = 0;
      tracing = r.value[1] === 1;
      await s.write(Buffer.from(body));
      await s.end();
      return;
    }
    await s.write(r.value);
    stamp('echo written');
  }
  await s.end();
}

// ------------------------------------------------------------------ client (this process)

interface Report {
  counts: Record<string, number>;
  events: Array<[string, string]>;
}

async function report(conn: Awaited<ReturnType<typeof dial>>, traceNext: boolean) {
  const s = await conn.openBidi();
  await s.write(Uint8Array.of(OP_REPORT, traceNext ? 1 : 0));
  await s.end();
  const parts: Uint8Array[] = [];
  for await (const p of s) parts.push(p);
  return JSON.parse(Buffer.concat(parts).toString()) as Report;
}

function perRoundTrip(c: Record<string, number>, n: number): string {
  return Object.entries(c)
    .filter(([, v]) => v >= n / 10)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${(v / n).toFixed(2)}`)
    .join(', ');
}

/** Median time from each round trip's write to the first event of each label in it. */
function timeline(local: Array<[string, bigint]>, remote: Array<[string, string]>): string {
  const all = [
    ...local.map(([l, t]) => [`client ${l}`, t] as const),
    ...remote.map(([l, t]) => [`echo   ${l}`, BigInt(t)] as const),
  ].sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  const byLabel = new Map<string, number[]>();
  let t0: bigint | null = null;
  let seen = new Set<string>();
  const order: string[] = [];
  for (const [label, t] of all) {
    if (label === 'client write') {
      t0 = t;
      seen = new Set();
    }
    if (t0 === null || seen.has(label)) continue;
    seen.add(label);
    if (!byLabel.has(label)) order.push(label);
    const list = byLabel.get(label) ?? [];
    list.push(Number(t - t0) / 1000);
    byLabel.set(label, list);
  }
  const rows = order.map((label) => {
    const v = byLabel.get(label)!.sort((a, b) => a - b);
    return [label, percentile(v, 50), v.length] as const;
  });
  rows.sort((a, b) => a[1] - b[1]);
  return rows
    .map(([l, p50, n]) => `  ${l.padEnd(34)} +${p50.toFixed(1).padStart(7)} µs  (${n})`)
    .join('\n');
}

async function client(): Promise<void> {
  instrument();
  if (NATIVE) await timeNative();
  const dir = mkdtempSync(join(tmpdir(), 'felix-bench-quic-rtt-'));
  const { child, info } = await serveSelf<{ port: number; fingerprint: string }>(
    [
      '--data',
      dir,
      '--transport',
      TRANSPORT,
      ...(COUNT ? ['--count'] : []),
      ...(NATIVE ? ['--native'] : []),
    ],
    'echo side',
  );
  try {
    const conn = await dial(`${TRANSPORT}://127.0.0.1:${info.port}`, {
      fingerprint: info.fingerprint,
    });
    const s = await conn.openBidi();
    const it = s[Symbol.asyncIterator]();
    const msg = new Uint8Array(SIZE).fill(1);
    const ping = async () => {
      stamp('write');
      await s.write(msg);
      let got = 0;
      while (got < SIZE) {
        const r = await it.next();
        if (r.done) throw new Error('echo stream ended');
        got += r.value.length;
      }
      stamp('read');
    };
    for (let i = 0; i < 2000; i++) await ping(); // warm the JIT on both sides
    await report(conn, TRACE);
    snapshot();
    tracing = TRACE;
    const lat = new Float64Array(PINGS);
    const c0 = process.cpuUsage();
    const b0 = procCpuSecs(child.pid!);
    const t0Here = threadCpuSecs('self');
    const t0There = threadCpuSecs(child.pid!);
    for (let i = 0; i < PINGS; i++) {
      const t0 = performance.now();
      await ping();
      lat[i] = (performance.now() - t0) * 1000;
    }
    const c = process.cpuUsage(c0);
    const b = procCpuSecs(child.pid!) - b0;
    const t1Here = threadCpuSecs('self');
    const t1There = threadCpuSecs(child.pid!);
    const us = (x: number) => ((x * 1e6) / PINGS).toFixed(1);
    tracing = false;
    const mine = snapshot();
    const theirs = await report(conn, false);
    lat.sort();
    console.log(
      `${TRANSPORT}: ${PINGS} round trips of ${SIZE} B: p50 ${percentile(lat, 50).toFixed(0)} µs, p99 ${percentile(lat, 99).toFixed(0)} µs; CPU per round trip: client ${((c.user + c.system) / PINGS).toFixed(1)} µs, echo side ${((b * 1e6) / PINGS).toFixed(1)} µs`,
    );
    // 10 ms ticks: meaningful over thousands of round trips only.
    console.log(
      `main thread / other threads per round trip: client ${us(t1Here.main - t0Here.main)} / ${us(t1Here.others - t0Here.others)} µs, echo side ${us(t1There.main - t0There.main)} / ${us(t1There.others - t0There.others)} µs`,
    );
    if (COUNT || NATIVE) {
      console.log(`per round trip, client:    ${perRoundTrip(mine, PINGS)}`);
      // The echo side's figures include the report stream's own few resources.
      console.log(`per round trip, echo side: ${perRoundTrip(theirs.counts, PINGS)}`);
    }
    if (TRACE)
      console.log(
        `stage timeline (median from the client's write):\n${timeline(events, theirs.events)}`,
      );
    await s.end();
    await conn.close();
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv.includes('--serve')) await serve(argValue('--data', '.'));
else await client();
