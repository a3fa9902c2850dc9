/**
 * CPU per cache get, two builds side by side, with the floors under them: one process drives,
 * in alternating bursts (the order rotating per round), a TLS get against the broker of build A
 * (with A's client), the same against build B, a raw node:tls ping-pong of a get's sizes (100 B
 * out, 200 B back, the answering side in its own process) and the same ping-pong through the
 * Felix multiplexer alone (build B's @felix/transport, echo on one stream). Load from other
 * processes on this shared machine lands on all four alike, which back-to-back runs of
 * get-cpu.ts cannot promise. Prints wall time, client CPU and server CPU per operation.
 *
 *   A=/path/to/main-worktree B=$PWD node --import tsx scripts/bench/cache-broker/ab-cpu.ts
 *
 * Both trees must be built. ROUNDS (default 24) and BURST (default 2000 operations) size it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { procCpuSecs, startBroker } from '@felix/testing-bench-kit';

const HERE = resolve(import.meta.dirname, '..', '..', '..');
const A = resolve(process.env.A ?? HERE);
const B = resolve(process.env.B ?? HERE);
const ROUNDS = Number(process.env.ROUNDS ?? 24);
const BURST = Number(process.env.BURST ?? 2000);
const WARM = 20_000;

const cpu = procCpuSecs;

interface Side {
  name: string;
  serverPid: number;
  op(i: number): Promise<unknown>;
  stop(): Promise<void>;
  client: number;
  server: number;
  wall: number;
  n: number;
}

function side(name: string, serverPid: number, op: Side['op'], stop: Side['stop']): Side {
  return { name, serverPid, op, stop, client: 0, server: 0, wall: 0, n: 0 };
}

async function felix(name: string, root: string): Promise<Side> {
  // Each build's own broker (started the same way for both) and its client's public entry.
  const { connect } = await import(join(root, 'packages/client/dist/index.js'));
  const broker = await startBroker({ root, config: 'caches:\n  - { tenant: bench, name: kv }\n' });
  const c = await connect({
    servers: [broker.url('tls')],
    tenant: 'bench',
    tls: { fingerprint: broker.fingerprint },
  });
  const kv = c.cache('kv');
  for (let i = 0; i < 1000; i++) await kv.put(`k${i}`, new Uint8Array(100).fill(42));
  return side(
    `${name} Felix get`,
    broker.pid,
    (i) => kv.get(`k${i % 1000}`),
    async () => {
      await c.close();
      await broker.stop();
    },
  );
}

/** A child node process running `code` that prints one JSON line when it listens. */
async function server(code: string, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const info = await new Promise<{ port: number }>((ok) =>
    child.stdout!.once('data', (d) => ok(JSON.parse(String(d)))),
  );
  return { child, port: info.port };
}

async function material(dir: string) {
  const t = await import(join(B, 'packages/transport/dist/index.js'));
  return t.loadOrCreateDevCertificate(dir) as Promise<{
    certPem: string;
    keyPem: string;
    fingerprint: string;
  }>;
}

async function rawTls(dir: string): Promise<Side> {
  const m = await material(dir);
  const { child, port } = await server(
    `import { createServer } from 'node:tls';
     const answer = Buffer.alloc(200, 7);
     const s = createServer({ cert: process.env.CERT, key: process.env.KEY, ciphers: 'TLS_AES_128_GCM_SHA256' }, (c) => {
       c.setNoDelay(true);
       let have = 0;
       c.on('data', (d) => { have += d.length; while (have >= 100) { have -= 100; c.write(answer); } });
       c.on('error', () => {});
     });
     s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: s.address().port })));`,
    { CERT: m.certPem, KEY: m.keyPem },
  );
  const socket = await new Promise<ReturnType<typeof tlsConnect>>((ok) => {
    // Benchmark only: same machine, a certificate made a moment ago.
    const s = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => ok(s));
  });
  socket.setNoDelay(true);
  const request = Buffer.alloc(100, 1);
  let need = 0;
  let done: (() => void) | null = null;
  socket.on('data', (c: Buffer) => {
    need -= c.length;
    if (need <= 0) done?.();
  });
  const ping = () =>
    new Promise<void>((ok) => {
      need = 200;
      done = ok;
      socket.write(request);
    });
  return side('raw node:tls', child.pid!, ping, async () => {
    socket.destroy();
    child.kill();
  });
}

async function muxEcho(dir: string): Promise<Side> {
  const m = await material(dir);
  const transport = join(B, 'packages/transport/dist/index.js');
  const { child, port } = await server(
    `const t = await import(${JSON.stringify(transport)});
     const l = await t.listen({ transport: 'tls', port: 0, host: '127.0.0.1', tls: { certPem: process.env.CERT, keyPem: process.env.KEY } });
     console.log(JSON.stringify({ port: l.port }));
     const answer = new Uint8Array(200).fill(7);
     for await (const conn of l.connections()) {
       (async () => { for await (const s of conn.incoming()) (async () => { for await (const c of s) s.write(answer); })(); })();
     }`,
    { CERT: m.certPem, KEY: m.keyPem },
  );
  const t = await import(transport);
  const conn = await t.dial(`tls://127.0.0.1:${port}`, { fingerprint: m.fingerprint });
  const s = await conn.openBidi();
  const it = s[Symbol.asyncIterator]();
  const request = new Uint8Array(100).fill(1);
  const ping = async () => {
    void s.write(request);
    for (let got = 0; got < 200; ) got += (await it.next()).value.length;
  };
  return side('mux echo', child.pid!, ping, async () => {
    await conn.close();
    child.kill();
  });
}

const dir = mkdtempSync(join(tmpdir(), 'felix-bench-ab-cpu-'));
const sides = [
  await felix('A', A),
  await felix('B', B),
  await rawTls(join(dir, 'raw')),
  await muxEcho(join(dir, 'mux')),
];
for (const s of sides) for (let i = 0; i < WARM; i++) await s.op(i);
for (let r = 0; r < ROUNDS; r++) {
  for (let k = 0; k < sides.length; k++) {
    const s = sides[(k + r) % sides.length]!;
    const s0 = cpu(s.serverPid);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < BURST; i++) await s.op(i);
    s.wall += performance.now() - t0;
    const cc = process.cpuUsage(c0);
    s.client += (cc.user + cc.system) / 1e6;
    s.server += cpu(s.serverPid) - s0;
    s.n += BURST;
  }
}
const us = (seconds: number, n: number) => ((seconds * 1e6) / n).toFixed(1);
console.log(`A=${A}\nB=${B}`);
for (const s of sides) {
  console.log(
    `${s.name.padEnd(16)} per op: wall ${us(s.wall / 1000, s.n)} µs, client CPU ${us(s.client, s.n)} µs, server CPU ${us(s.server, s.n)} µs (${s.n} ops)`,
  );
  await s.stop();
}
rmSync(dir, { recursive: true, force: true });
