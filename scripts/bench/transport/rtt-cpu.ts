/**
 * CPU per round trip, the TLS multiplexer against raw node:tls: 100 B echoed on one stream (or
 * one raw socket), one at a time, the echo side in a child process. Prints, per round and
 * transport, the p50 round trip and the CPU each process spent per round trip
 * (`process.cpuUsage()` here, /proc for the child), so what the multiplexer adds to a round
 * trip shows as CPU on each side rather than only as waiting.
 *
 *   node --import tsx scripts/bench/transport/rtt-cpu.ts [--pings 20000] [--rounds 3]
 *
 * A cache get is one such round trip plus the codecs and the cache: see docs/perf.md (session 6).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import {
  type Connection,
  TLS13_CIPHER_SUITES,
  dial,
  listen,
  loadOrCreateDevCertificate,
} from '@felix/transport';
import {
  argValue,
  assertFreshBuild,
  percentile,
  procCpuSecs,
  serveSelf,
} from '@felix/testing-bench-kit';
import { rawTlsClient } from '../cache-broker/raw-tls.js';

assertFreshBuild(import.meta.resolve('@felix/transport'));

const arg = argValue;
const PINGS = Number(arg('--pings', '20000'));
const ROUNDS = Number(arg('--rounds', '3'));
const SIZE = 100;

async function serve(dir: string): Promise<void> {
  const tls = await loadOrCreateDevCertificate(dir);
  const l = await listen({ transport: 'tls', port: 0, tls, maxStreams: 16 });
  void (async () => {
    for await (const conn of l.connections()) {
      void (async () => {
        for await (const s of conn.incoming()) {
          void (async () => {
            for await (const chunk of s) await s.write(chunk);
            await s.end();
          })().catch(() => undefined); // the client tearing down mid-stream ends the echo
        }
      })().catch(() => undefined); // as does the connection closing at the end of the run
    }
  })();
  const raw = createTlsServer({
    cert: tls.certPem,
    key: tls.keyPem,
    ciphers: TLS13_CIPHER_SUITES,
    honorCipherOrder: true,
  });
  raw.on('secureConnection', (socket) => {
    socket.setNoDelay(true);
    socket.on('data', (c: Buffer) => socket.write(c));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', () => r()));
  const addr = raw.address();
  const rawPort = typeof addr === 'object' && addr ? addr.port : 0;
  process.stdout.write(
    `${JSON.stringify({ mux: l.port, raw: rawPort, fingerprint: tls.fingerprint })}\n`,
  );
}

interface Pinger {
  ping(): Promise<void>;
  close(): Promise<void>;
}

async function muxPinger(port: number, fingerprint: string): Promise<Pinger> {
  const conn: Connection = await dial(`tls://127.0.0.1:${port}`, { fingerprint });
  const s = await conn.openBidi();
  const it = s[Symbol.asyncIterator]();
  const msg = new Uint8Array(SIZE).fill(1);
  return {
    async ping() {
      await s.write(msg);
      let got = 0;
      while (got < SIZE) {
        const r = await it.next();
        if (r.done) throw new Error('echo stream ended');
        got += r.value.length;
      }
    },
    async close() {
      await s.end();
      await conn.close();
    },
  };
}

async function rawPinger(port: number): Promise<Pinger> {
  const client = await rawTlsClient(port, SIZE, SIZE);
  return {
    ping: client.ping,
    async close() {
      client.socket.destroy();
    },
  };
}

async function run(p: Pinger, childPid: number): Promise<string> {
  for (let i = 0; i < 2000; i++) await p.ping(); // warm the JIT on both sides
  const lat = new Float64Array(PINGS);
  const c0 = process.cpuUsage();
  const b0 = procCpuSecs(childPid);
  for (let i = 0; i < PINGS; i++) {
    const t0 = performance.now();
    await p.ping();
    lat[i] = (performance.now() - t0) * 1000;
  }
  const c = process.cpuUsage(c0);
  const b = procCpuSecs(childPid) - b0;
  lat.sort();
  const p50 = percentile(lat, 50);
  return `p50 ${p50.toFixed(0)} µs, CPU per round trip: here ${((c.user + c.system) / PINGS).toFixed(1)} µs, echo side ${((b * 1e6) / PINGS).toFixed(1)} µs`;
}

if (process.argv.includes('--serve')) {
  await serve(arg('--data', '.'));
} else {
  const dir = mkdtempSync(join(tmpdir(), 'felix-bench-rtt-'));
  const { child, info: target } = await serveSelf<{
    mux: number;
    raw: number;
    fingerprint: string;
  }>(['--data', dir], 'echo side');
  try {
    const mux = await muxPinger(target.mux, target.fingerprint);
    const raw = await rawPinger(target.raw);
    console.log(`${PINGS} pings of ${SIZE} B per run, echo side pid ${child.pid}`);
    for (let r = 1; r <= ROUNDS; r++) {
      // Alternate the order so drift on the shared machine falls on both alike.
      const order: Array<[string, Pinger]> = [
        ['TLS multiplexer', mux],
        ['raw node:tls   ', raw],
      ];
      if (r % 2 === 0) order.reverse();
      for (const [name, p] of order) console.log(`round ${r}: ${name} ${await run(p, child.pid!)}`);
    }
    await mux.close();
    await raw.close();
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
