/**
 * Vendor patch 19 (a flush stops at a short datagram) against the flush it replaced (ask quiche
 * until it says done), alternated in one process so both see the same load: 100 B echoed on one
 * QUIC stream between a client and a server connection in this process, in blocks of
 * `--block` round trips, the mode switched every block. Prints per mode the median over blocks
 * of the CPU per round trip (both ends, this process) and of the blocks' p50 round trip, and
 * the quiche `send` calls per round trip, then the median of the block-pair ratios (new/old).
 *
 * On a machine shared with other work, separate runs of the two builds differ by more than the
 * change; alternating blocks inside one process is what makes them comparable.
 *
 *   node --import tsx scripts/bench/transport/quic-flush-ab.ts [--blocks 20] [--block 2000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TransportStream, dial, listen, loadOrCreateDevCertificate } from '@felix/transport';
import {
  argValue,
  assertFreshBuild,
  median,
  pairedRatios,
  percentile,
} from '@felix/testing-bench-kit';

assertFreshBuild(import.meta.resolve('@felix/transport'));

const BLOCKS = Number(argValue('--blocks', '20'));
const BLOCK = Number(argValue('--block', '2000'));
const SIZE = 100;
type Mode = 'stop at a short datagram' | 'ask until null';

// The vendored library is @felix/transport's dependency: patch the instance it loads.
const vendorDist = new URL(
  '../node_modules/@felix-vendor/matrixai-quic/dist/',
  import.meta.resolve('@felix/transport'),
);
const QUICConnection = (await import(new URL('QUICConnection.js', vendorDist).href)).default as {
  prototype: { flushSync: (shortStops?: boolean) => void };
};
const quiche = (await import(new URL('native/quiche.js', vendorDist).href)).default as {
  Connection: { prototype: { send: (...a: unknown[]) => unknown } };
};

let mode: Mode = 'stop at a short datagram';
const flushSync = QUICConnection.prototype.flushSync;
QUICConnection.prototype.flushSync = function (this: unknown, shortStops?: boolean) {
  return flushSync.call(this, mode === 'ask until null' ? false : shortStops);
};
let sends = 0;
const send = quiche.Connection.prototype.send;
quiche.Connection.prototype.send = function (this: unknown, ...a: unknown[]) {
  sends++;
  return send.apply(this, a);
};

async function echo(s: TransportStream): Promise<void> {
  for await (const chunk of s) await s.write(chunk);
  await s.end();
}

/** One block of round trips: CPU per round trip (µs), p50 (µs), quiche sends per round trip. */
async function block(ping: () => Promise<void>): Promise<[number, number, number]> {
  const lat = new Float64Array(BLOCK);
  const sends0 = sends;
  const c0 = process.cpuUsage();
  for (let i = 0; i < BLOCK; i++) {
    const t0 = performance.now();
    await ping();
    lat[i] = (performance.now() - t0) * 1000;
  }
  const c = process.cpuUsage(c0);
  lat.sort();
  return [(c.user + c.system) / BLOCK, percentile(lat, 50), (sends - sends0) / BLOCK];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'felix-bench-quic-flush-ab-'));
  const tls = await loadOrCreateDevCertificate(dir);
  const l = await listen({ transport: 'quic', port: 0, tls, maxStreams: 16 });
  void (async () => {
    for await (const conn of l.connections())
      for await (const s of conn.incoming()) void echo(s).catch(() => undefined); // run's end
  })().catch(() => undefined); // the listener closing at the end of the run
  const conn = await dial(`quic://127.0.0.1:${l.port}`, { fingerprint: tls.fingerprint });
  const s = await conn.openBidi();
  const it = s[Symbol.asyncIterator]();
  const msg = new Uint8Array(SIZE).fill(1);
  const ping = async () => {
    await s.write(msg);
    for (let got = 0; got < SIZE; ) {
      const r = await it.next();
      if (r.done) throw new Error('echo stream ended');
      got += r.value.length;
    }
  };
  for (let i = 0; i < 2000; i++) await ping(); // warm the JIT
  const results = new Map<Mode, Array<[number, number, number]>>();
  for (let b = 0; b < BLOCKS; b++) {
    mode = b % 2 === 0 ? 'ask until null' : 'stop at a short datagram';
    const r = await block(ping);
    results.set(mode, [...(results.get(mode) ?? []), r]);
  }
  await s.end();
  await conn.close();
  await l.close();
  rmSync(dir, { recursive: true, force: true });
  report(results);
}

function report(results: Map<Mode, Array<[number, number, number]>>): void {
  console.log(`${BLOCKS} alternated blocks of ${BLOCK} round trips of ${SIZE} B, both ends here`);
  for (const [m, rs] of results) {
    const cpu = median(rs.map((r) => r[0]));
    const p50 = median(rs.map((r) => r[1]));
    const calls = median(rs.map((r) => r[2]));
    const each = rs.map((r) => r[0].toFixed(0)).join(' ');
    console.log(
      `${m.padEnd(25)} CPU/round trip ${cpu.toFixed(1)} µs (blocks: ${each}), p50 ${p50.toFixed(0)} µs, quiche send ${calls.toFixed(2)}/round trip`,
    );
  }
  const after = results.get('stop at a short datagram') ?? [];
  const before = results.get('ask until null') ?? [];
  const cpu = pairedRatios(
    after.map((r) => r[0]),
    before.map((r) => r[0]),
  );
  const p50 = pairedRatios(
    after.map((r) => r[1]),
    before.map((r) => r[1]),
  );
  console.log(
    `paired ratios, stop at short / ask until null: CPU ${cpu.median.toFixed(3)}, p50 ${p50.median.toFixed(3)}`,
  );
}

await main();
