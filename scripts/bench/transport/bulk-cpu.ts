/**
 * CPU per KiB of a one-way bulk transfer: plain TCP, raw node:tls (the suites Felix offers) and
 * the TLS multiplexer on one stream. The sender runs here, the receiver in a child process; both
 * sides' CPU is read per KiB delivered. What TLS costs over TCP here is the floor under any
 * Felix-over-TLS against NATS-over-TCP comparison: a 1 KiB pub/sub message crosses two hops and
 * so pays it twice on each side (docs/perf.md, session 8).
 *
 * `quic` runs the same over Felix's QUIC transport (one stream, 512 KiB writes).
 *
 *   node --import tsx scripts/bench/transport/bulk-cpu.ts [--mib 512] [--rounds 3] [--only tcp,tls,mux,quic]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { type Socket, connect as netConnect, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, createServer as createTlsServer } from 'node:tls';
import {
  type Listener,
  TLS13_CIPHER_SUITES,
  dial,
  listen,
  loadOrCreateDevCertificate,
} from '@felix/transport';
import { argValue, assertFreshBuild, procCpuSecs, serveSelf } from '@felix/testing-bench-kit';

assertFreshBuild(import.meta.resolve('@felix/transport'));

const MIB = Number(argValue('--mib', '512'));
const ROUNDS = Number(argValue('--rounds', '3'));
/** Bytes per write: a 512-record publish batch of 1 KiB records. */
const BATCH_BYTES = 512 * 1024;
const TOTAL_BYTES = MIB * 1024 * 1024;
/** Which transports run (a profile of one alone is easier to read). */
const ONLY = new Set(argValue('--only', 'tcp,tls,mux').split(','));

interface Ports {
  tcp: number;
  tls: number;
  mux: number;
  quic: number;
  fingerprint: string;
}

/** The receiving side: counts bytes and answers one byte when a transfer's last byte lands. */
async function serve(dir: string): Promise<void> {
  const material = await loadOrCreateDevCertificate(dir);
  const onSocket = (socket: Socket): void => {
    let got = 0;
    socket.on('data', (c: Buffer) => {
      got += c.length;
      if (got >= TOTAL_BYTES) {
        got -= TOTAL_BYTES;
        socket.write(Buffer.of(1));
      }
    });
    socket.on('error', () => undefined);
  };
  const tcp = createNetServer(onSocket);
  const tls = createTlsServer({
    cert: material.certPem,
    key: material.keyPem,
    minVersion: 'TLSv1.3',
    ciphers: TLS13_CIPHER_SUITES,
    honorCipherOrder: true,
  });
  tls.on('secureConnection', onSocket);
  const mux = await listen({ transport: 'tls', port: 0, tls: material, maxStreams: 4 });
  const quic = await listen({ transport: 'quic', port: 0, tls: material, maxStreams: 4 });
  for (const l of [mux, quic]) serveStreams(l);
  await Promise.all([
    new Promise<void>((r) => tcp.listen(0, '127.0.0.1', () => r())),
    new Promise<void>((r) => tls.listen(0, '127.0.0.1', () => r())),
  ]);
  const port = (s: { address(): unknown }) => (s.address() as { port: number }).port;
  const ports: Ports = {
    tcp: port(tcp),
    tls: port(tls),
    mux: mux.port,
    quic: quic.port,
    fingerprint: material.fingerprint,
  };
  process.stdout.write(`${JSON.stringify(ports)}\n`);
}

/** Counts each stream's bytes and answers one byte per transfer (the multiplexer and QUIC). */
function serveStreams(listener: Listener): void {
  void (async () => {
    for await (const conn of listener.connections()) {
      void (async () => {
        for await (const s of conn.incoming()) {
          void (async () => {
            let got = 0;
            for await (const chunk of s) {
              got += chunk.length;
              if (got >= TOTAL_BYTES) {
                got -= TOTAL_BYTES;
                await s.write(Uint8Array.of(1));
              }
            }
          })().catch(() => undefined); // the client tearing down mid-stream ends the echo
        }
      })().catch(() => undefined); // as does the connection closing at the end of the run
    }
  })();
}

interface Sender {
  /** Sends TOTAL_BYTES and resolves when the receiver has them all. */
  transfer(): Promise<void>;
  close(): Promise<void>;
}

function socketSender(socket: Socket): Sender {
  const batch = Buffer.alloc(BATCH_BYTES, 97);
  return {
    async transfer() {
      const done = new Promise<void>((r) => socket.once('data', () => r()));
      for (let sent = 0; sent < TOTAL_BYTES; sent += BATCH_BYTES) {
        if (!socket.write(batch)) await new Promise((r) => socket.once('drain', r));
      }
      await done;
    },
    async close() {
      socket.destroy();
    },
  };
}

async function streamSender(url: string, fingerprint: string): Promise<Sender> {
  const conn = await dial(url, { fingerprint });
  const s = await conn.openBidi();
  const it = s[Symbol.asyncIterator]();
  const batch = new Uint8Array(BATCH_BYTES).fill(97);
  return {
    async transfer() {
      for (let sent = 0; sent < TOTAL_BYTES; sent += BATCH_BYTES) await s.write(batch);
      const r = await it.next();
      if (r.done) throw new Error('receiver ended the stream');
    },
    async close() {
      await s.end();
      await conn.close();
    },
  };
}

async function run(s: Sender, childPid: number): Promise<string> {
  const c0 = process.cpuUsage();
  const r0 = procCpuSecs(childPid);
  const t0 = performance.now();
  await s.transfer();
  const secs = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const r = procCpuSecs(childPid) - r0;
  const kib = TOTAL_BYTES / 1024;
  return (
    `sender ${((c.user + c.system) / kib).toFixed(3)} µs/KiB, receiver ${((r * 1e6) / kib).toFixed(3)} µs/KiB, ` +
    `${(TOTAL_BYTES / 1e6 / secs).toFixed(0)} MB/s`
  );
}

if (process.argv.includes('--serve')) {
  // Exit cleanly on SIGTERM so a --cpu-prof of the receiver is written.
  process.once('SIGTERM', () => process.exit(0));
  await serve(argValue('--data', '.'));
} else {
  const dir = mkdtempSync(join(tmpdir(), 'felix-bench-bulk-'));
  const { child, info: ports } = await serveSelf<Ports>(
    ['--data', dir, '--mib', String(MIB)],
    'receiver',
  );
  try {
    const tcpSocket = netConnect({ port: ports.tcp, host: '127.0.0.1' });
    await new Promise((r) => tcpSocket.once('connect', r));
    const tlsSocket = tlsConnect({
      port: ports.tls,
      host: '127.0.0.1',
      rejectUnauthorized: false,
      ciphers: TLS13_CIPHER_SUITES,
    });
    await new Promise((r) => tlsSocket.once('secureConnect', r));
    const all: Array<[string, string, () => Sender | Promise<Sender>]> = [
      ['tcp', 'plain TCP        ', () => socketSender(tcpSocket)],
      ['tls', 'raw node:tls     ', () => socketSender(tlsSocket)],
      [
        'mux',
        'TLS multiplexer  ',
        () => streamSender(`tls://127.0.0.1:${ports.mux}`, ports.fingerprint),
      ],
      [
        'quic',
        'QUIC             ',
        () => streamSender(`quic://127.0.0.1:${ports.quic}`, ports.fingerprint),
      ],
    ];
    const senders: Array<[string, Sender]> = [];
    for (const [key, name, make] of all) if (ONLY.has(key)) senders.push([name, await make()]);
    console.log(
      `${MIB} MiB one way per run in ${BATCH_BYTES / 1024} KiB writes; receiver pid ${child.pid}`,
    );
    for (const [, s] of senders) await s.transfer(); // warm-up, untimed
    for (let r = 1; r <= ROUNDS; r++) {
      // Rotate the order so drift on the shared machine falls on all alike.
      const k = r % senders.length;
      const order = [...senders.slice(k), ...senders.slice(0, k)];
      for (const [name, s] of order) console.log(`round ${r}: ${name} ${await run(s, child.pid!)}`);
    }
    for (const [, s] of senders) await s.close();
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
