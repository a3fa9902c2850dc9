// Transport benchmark: the patched QUIC, the stock @matrixai/quic, the TLS multiplexer and raw
// node:tls (no multiplexing), side by side in one run, on loopback, one connection each.
// The receiver is a child process (one core each on a 2-core machine), the sender is this one.
// Measures: RTT p50/p99 for 100 B (echo on one stream); one-way throughput for 1 KiB and 100 B
// messages on 1, 8 and 64 streams (one awaited write per message); server push (1 KiB messages
// on a server-opened uni stream).
// Run: npx pnpm@10.34.9 exec tsx scripts/bench/transport/main.ts [--seconds 1] [--rounds 3]
//      [--only quic,quic-stock,tls,raw-tls] [--pairs 5]
// Imports @felix/transport's public entry (its dist): a src/ newer than the build stops the run.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TLSSocket, connect as tlsConnect, createServer as createTlsServer } from 'node:tls';
import {
  type Connection,
  TLS13_CIPHER_SUITES,
  type TransportStream,
  dial,
  listen,
  loadOrCreateDevCertificate,
} from '@felix/transport';
import {
  argValue,
  assertFreshBuild,
  markdownTable,
  median,
  percentile,
  serveSelf,
} from '@felix/testing-bench-kit';

assertFreshBuild(import.meta.resolve('@felix/transport'));

const arg = argValue;
const SECONDS = Number(arg('--seconds', '1'));
const OP_ECHO = 0x45;
const OP_SINK = 0x53;
const OP_COUNT = 0x43;
const OP_PUSH = 0x50;

type Kind = 'quic' | 'quic-stock' | 'tls' | 'raw-tls';

// ---------------------------------------------------------------- receiver (child process)

async function serve(dataDir: string): Promise<void> {
  const tls = await loadOrCreateDevCertificate(dataDir);
  const ports: Record<string, number> = {};
  for (const [name, transport, stock] of [
    ['quic', 'quic', false],
    ['quic-stock', 'quic', true],
    ['tls', 'tls', false],
  ] as const) {
    const l = await listen({ transport, port: 0, tls, maxStreams: 1024, quicStock: stock });
    ports[name] = l.port;
    void (async () => {
      for await (const conn of l.connections()) void serveConnection(conn);
    })();
  }
  // The raw peer settles on the same cipher suite as the mux listener, so the comparison is of
  // the multiplexer alone.
  const raw = createTlsServer({
    cert: tls.certPem,
    key: tls.keyPem,
    ALPNProtocols: ['felix/1'],
    ciphers: TLS13_CIPHER_SUITES,
    honorCipherOrder: true,
  });
  raw.on('secureConnection', serveRaw);
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', () => r()));
  const addr = raw.address();
  ports['raw-tls'] = typeof addr === 'object' && addr ? addr.port : 0;
  process.stdout.write(`${JSON.stringify({ ports, fingerprint: tls.fingerprint })}\n`);
}

function u32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}

async function serveConnection(conn: Connection): Promise<void> {
  let sinkBytes = 0;
  let sinkEnded = 0;
  const wake: { waiter: (() => void) | null } = { waiter: null };
  for await (const s of conn.incoming()) {
    void (async () => {
      const it = s[Symbol.asyncIterator]();
      let first = (await it.next()).value as Uint8Array | undefined;
      if (!first) return;
      const op = first[0];
      first = first.subarray(1);
      if (op === OP_ECHO) {
        if (first.length) await s.write(first);
        for (;;) {
          const r = await it.next();
          if (r.done) break;
          await s.write(r.value);
        }
        await s.end();
      } else if (op === OP_SINK) {
        let n = first.length;
        for (;;) {
          const r = await it.next();
          if (r.done) break;
          n += r.value.length;
        }
        sinkBytes += n;
        sinkEnded++;
        wake.waiter?.();
      } else if (op === OP_COUNT) {
        let buf = first;
        while (buf.length < 4) buf = Buffer.concat([buf, (await it.next()).value as Uint8Array]);
        const expect = u32(buf, 0);
        while (sinkEnded < expect)
          await new Promise<void>((r) => {
            wake.waiter = r;
          });
        const out = Buffer.alloc(8);
        out.writeBigUInt64BE(BigInt(sinkBytes));
        sinkBytes = 0;
        sinkEnded = 0;
        await s.write(out);
        await s.end();
      } else if (op === OP_PUSH) {
        let buf = first;
        while (buf.length < 8) buf = Buffer.concat([buf, (await it.next()).value as Uint8Array]);
        const size = u32(buf, 0);
        const ms = u32(buf, 4);
        const u = await conn.openUni();
        const msg = new Uint8Array(size).fill(7);
        const until = performance.now() + ms;
        while (performance.now() < until) {
          for (let i = 0; i < 64; i++) await u.write(msg);
        }
        await u.end();
        await s.end();
      }
    })().catch(() => {}); // a peer closing mid-echo at the end of a round is expected
  }
}

function serveRaw(socket: TLSSocket): void {
  socket.setNoDelay(true);
  let op = -1;
  let count = 0;
  socket.on('data', (chunk: Buffer) => {
    if (op < 0) {
      op = chunk[0]!;
      chunk = chunk.subarray(1);
    }
    if (op === OP_ECHO) socket.write(chunk);
    else if (op === OP_SINK) count += chunk.length;
  });
  socket.on('end', () => {
    if (op === OP_SINK) {
      const out = Buffer.alloc(8);
      out.writeBigUInt64BE(BigInt(count));
      socket.end(out);
    } else socket.end();
  });
  socket.on('error', () => {});
}

// ---------------------------------------------------------------- sender (this process)

interface Target {
  ports: Record<Kind, number>;
  fingerprint: string;
}

async function dialKind(t: Target, kind: Exclude<Kind, 'raw-tls'>): Promise<Connection> {
  const transport = kind === 'tls' ? 'tls' : 'quic';
  return dial(`${transport}://127.0.0.1:${t.ports[kind]}`, {
    fingerprint: t.fingerprint,
    quicStock: kind === 'quic-stock',
    maxStreams: 1024,
  });
}

async function readExactly(it: AsyncIterator<Uint8Array>, n: number): Promise<void> {
  let got = 0;
  while (got < n) {
    const r = await it.next();
    if (r.done) throw new Error('stream ended early');
    got += r.value.length;
  }
}

async function rttMux(conn: Connection): Promise<number[]> {
  const s = await conn.openBidi();
  const it = s[Symbol.asyncIterator]();
  const msg = new Uint8Array(100).fill(1);
  await s.write(Uint8Array.of(OP_ECHO));
  const samples: number[] = [];
  const until = performance.now() + SECONDS * 1000;
  let i = 0;
  while (performance.now() < until || i < 50) {
    const t0 = performance.now();
    await s.write(msg);
    await readExactly(it, 100);
    if (i++ >= 20) samples.push((performance.now() - t0) * 1000);
  }
  await s.end();
  return samples.sort((a, b) => a - b);
}

async function onewayMux(conn: Connection, size: number, streams: number): Promise<number> {
  const msg = new Uint8Array(size).fill(3);
  const opened: TransportStream[] = [];
  for (let i = 0; i < streams; i++) {
    const s = await conn.openBidi();
    await s.write(Uint8Array.of(OP_SINK));
    opened.push(s);
  }
  const t0 = performance.now();
  const until = t0 + SECONDS * 1000;
  await Promise.all(
    opened.map(async (s) => {
      while (performance.now() < until) {
        for (let i = 0; i < 32; i++) await s.write(msg);
      }
      await s.end();
    }),
  );
  const c = await conn.openBidi();
  const req = Buffer.alloc(5);
  req[0] = OP_COUNT;
  req.writeUInt32BE(streams, 1);
  await c.write(req);
  const parts: Uint8Array[] = [];
  for await (const p of c) parts.push(p);
  const bytes = Number(Buffer.concat(parts).readBigUInt64BE(0));
  const seconds = (performance.now() - t0) / 1000;
  return (bytes - streams) / size / seconds; // messages per second received (op bytes excluded)
}

async function pushMux(conn: Connection, size: number): Promise<number> {
  const c = await conn.openBidi();
  const req = Buffer.alloc(9);
  req[0] = OP_PUSH;
  req.writeUInt32BE(size, 1);
  req.writeUInt32BE(Math.round(SECONDS * 1000), 5);
  const incoming = conn.incoming()[Symbol.asyncIterator]();
  await c.write(req);
  const u = (await incoming.next()).value as TransportStream;
  let bytes = 0;
  let t0 = 0;
  for await (const chunk of u) {
    if (t0 === 0) t0 = performance.now();
    bytes += chunk.length;
  }
  return bytes / size / ((performance.now() - t0) / 1000);
}

function rawConnect(t: Target): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({
      host: '127.0.0.1',
      port: t.ports['raw-tls'],
      ALPNProtocols: ['felix/1'],
      rejectUnauthorized: false, // benchmark only: same machine, same certificate
    });
    s.once('secureConnect', () => {
      s.setNoDelay(true);
      resolve(s);
    });
    s.once('error', reject);
  });
}

async function rttRaw(t: Target): Promise<number[]> {
  const s = await rawConnect(t);
  s.write(Uint8Array.of(OP_ECHO));
  const msg = new Uint8Array(100).fill(1);
  const samples: number[] = [];
  let need = 0;
  let done: (() => void) | null = null;
  s.on('data', (c: Buffer) => {
    need -= c.length;
    if (need <= 0 && done) done();
  });
  const until = performance.now() + SECONDS * 1000;
  let i = 0;
  while (performance.now() < until || i < 50) {
    const t0 = performance.now();
    need = 100;
    await new Promise<void>((r) => {
      done = r;
      s.write(msg);
    });
    if (i++ >= 20) samples.push((performance.now() - t0) * 1000);
  }
  s.end();
  return samples.sort((a, b) => a - b);
}

async function onewayRaw(t: Target, size: number): Promise<number> {
  const s = await rawConnect(t);
  s.write(Uint8Array.of(OP_SINK));
  const msg = new Uint8Array(size).fill(3);
  const t0 = performance.now();
  const until = t0 + SECONDS * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < 32; i++) {
      if (!s.write(msg)) await new Promise((r) => s.once('drain', r));
    }
  }
  const reply = new Promise<Buffer>((resolve) => {
    const parts: Buffer[] = [];
    s.on('data', (c: Buffer) => parts.push(c));
    s.on('end', () => resolve(Buffer.concat(parts)));
  });
  s.end();
  const bytes = Number((await reply).readBigUInt64BE(0));
  return bytes / size / ((performance.now() - t0) / 1000);
}

interface Result {
  rtt: [number, number];
  oneway: Record<string, number | null>;
  push: number | null;
}

async function measure(t: Target, kind: Kind): Promise<Result> {
  const oneway: Record<string, number | null> = {};
  if (kind === 'raw-tls') {
    const samples = await rttRaw(t);
    for (const size of [1024, 100]) {
      for (const streams of [1, 8, 64]) {
        oneway[`${size}x${streams}`] = streams === 1 ? await onewayRaw(t, size) : null;
      }
    }
    return { rtt: [percentile(samples, 50), percentile(samples, 99)], oneway, push: null };
  }
  const conn = await dialKind(t, kind);
  const samples = await rttMux(conn);
  for (const size of [1024, 100]) {
    for (const streams of [1, 8, 64])
      oneway[`${size}x${streams}`] = await onewayMux(conn, size, streams);
  }
  const push = await pushMux(conn, 1024);
  await conn.close();
  return { rtt: [percentile(samples, 50), percentile(samples, 99)], oneway, push };
}

function medianResult(list: Result[]): Result {
  const first = list[0]!;
  const oneway: Record<string, number | null> = {};
  for (const key of Object.keys(first.oneway)) {
    oneway[key] = first.oneway[key] === null ? null : median(list.map((r) => r.oneway[key]!));
  }
  return {
    rtt: [median(list.map((r) => r.rtt[0])), median(list.map((r) => r.rtt[1]))],
    oneway,
    push: first.push === null ? null : median(list.map((r) => r.push!)),
  };
}

const fmt = (n: number | null) => (n === null ? 'n/a' : Math.round(n).toLocaleString('en-US'));

/** Starts a receiver child process and waits for its ports. */
async function startReceiver(dataDir: string): Promise<{ child: ChildProcess; target: Target }> {
  const { child, info } = await serveSelf<Target>(['--data', dataDir], 'receiver');
  return { child, target: info };
}

/**
 * TLS mux against raw node:tls in back-to-back pairs on one receiver (order alternating), so
 * both sides of each ratio see the same outside load; reports the median of the pair ratios.
 */
async function pairedTls(dataDir: string, pairs: number): Promise<void> {
  const { child, target } = await startReceiver(dataDir);
  try {
    const conn = await dialKind(target, 'tls');
    for (const size of [1024, 100]) {
      const ratios: number[] = [];
      for (let i = 0; i < pairs; i++) {
        let mux = 0;
        let raw = 0;
        if (i % 2 === 0) {
          mux = await onewayMux(conn, size, 1);
          raw = await onewayRaw(target, size);
        } else {
          raw = await onewayRaw(target, size);
          mux = await onewayMux(conn, size, 1);
        }
        ratios.push(mux / raw);
        process.stderr.write(
          `pair ${i + 1}/${pairs}, ${size} B: mux ${fmt(mux)}, raw ${fmt(raw)}\n`,
        );
      }
      const pct = (x: number) => `${Math.round(100 * x)}%`;
      const sorted = [...ratios].sort((a, b) => a - b);
      console.log(
        `TLS mux / raw node:tls, ${size} B x1, ${pairs} back-to-back pairs: median ${pct(median(ratios))} (range ${pct(sorted[0]!)}-${pct(sorted[sorted.length - 1]!)})`,
      );
    }
    await conn.close();
  } finally {
    child.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--serve')) {
    await serve(arg('--data', ''));
    return;
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'felix-bench-transport-'));
  const only = arg('--only', 'quic,quic-stock,tls,raw-tls').split(',') as Kind[];
  const ROUNDS = Number(arg('--rounds', '3'));
  const PAIRS = Number(arg('--pairs', '5'));
  const rounds = new Map<Kind, Result[]>();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // A fresh receiver per transport, so nothing one transport leaves behind (the stock
      // library can keep a closed connection busy) disturbs the next.
      for (const kind of only) {
        process.stderr.write(`round ${round + 1}/${ROUNDS}: measuring ${kind}...\n`);
        const { child, target } = await startReceiver(dataDir);
        try {
          const list = rounds.get(kind) ?? [];
          list.push(await measure(target, kind));
          rounds.set(kind, list);
        } finally {
          child.kill('SIGKILL');
        }
      }
    }
    // The machine is shared: each figure is the median over the rounds (the rounds interleave
    // the transports, so a burst of outside load hits them alike).
    const results = new Map<Kind, Result>();
    for (const [kind, list] of rounds) results.set(kind, medianResult(list));
    const names: Record<Kind, string> = {
      quic: 'QUIC, patched (vendor/matrixai-quic)',
      'quic-stock': 'QUIC, stock @matrixai/quic 2.0.9',
      tls: 'TLS + Felix multiplexer',
      'raw-tls': 'raw node:tls, no multiplexing',
    };
    console.log(
      `seconds per case: ${SECONDS}; rounds: ${ROUNDS} (median shown); node ${process.version}; messages/s received\n`,
    );
    const cases = ['1024x1', '1024x8', '1024x64', '100x1', '100x8', '100x64'];
    const numbers = ['RTT p50 (µs)', 'RTT p99 (µs)', '1 KiB ×1', '1 KiB ×8', '1 KiB ×64']
      .concat(['100 B ×1', '100 B ×8', '100 B ×64', 'push 1 KiB'])
      .map((title) => ({ title, align: 'right' as const }));
    console.log(
      markdownTable(
        ['transport', ...numbers],
        [...results].map(([kind, r]) => [
          names[kind],
          fmt(r.rtt[0]),
          fmt(r.rtt[1]),
          ...cases.map((c) => fmt(r.oneway[c]!)),
          fmt(r.push),
        ]),
      ),
    );
    const q = results.get('quic');
    const qs = results.get('quic-stock');
    const tl = results.get('tls');
    const raw = results.get('raw-tls');
    console.log('');
    if (q && qs) {
      console.log(
        `patched/stock QUIC, 1 KiB x1: ${(q.oneway['1024x1']! / qs.oneway['1024x1']!).toFixed(1)}x; x64: ${(q.oneway['1024x64']! / qs.oneway['1024x64']!).toFixed(1)}x`,
      );
    }
    if (tl && raw) {
      console.log(
        `TLS mux / raw node:tls, 1 KiB x1: ${((100 * tl.oneway['1024x1']!) / raw.oneway['1024x1']!).toFixed(0)}%; 100 B x1: ${((100 * tl.oneway['100x1']!) / raw.oneway['100x1']!).toFixed(0)}%`,
      );
    }
    if (PAIRS > 0 && only.includes('tls') && only.includes('raw-tls')) {
      process.stderr.write('paired TLS mux / raw node:tls...\n');
      await pairedTls(dataDir, PAIRS);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
