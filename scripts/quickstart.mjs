#!/usr/bin/env node
// Quickstart: starts a felix-broker with its data under ./.felix/, runs demos/simple-pubsub
// against it, prints what happened, and stops the broker. Needs the workspace built
// (`pnpm install && pnpm build`). Set FELIX_QUICKSTART_TRANSPORT=tls to use TLS over TCP.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const felixDir = join(root, '.felix');
const dataDir = join(felixDir, 'data');
const configPath = join(felixDir, 'broker.yaml');
const brokerMain = join(root, 'services', 'broker', 'dist', 'main.js');
const demoMain = join(root, 'demos', 'simple-pubsub', 'main.mjs');
const transport = process.env.FELIX_QUICKSTART_TRANSPORT === 'tls' ? 'tls' : 'quic';
const STARTUP_MS_MAX = 30_000;

if (!existsSync(brokerMain)) {
  console.error(`quickstart: ${brokerMain} is missing; build first: npx --yes pnpm@10.34.9 build`);
  process.exit(1);
}

const portFree = (port) =>
  new Promise((done) => {
    const tcp = createServer();
    tcp.once('error', () => done(false));
    tcp.listen(port, '127.0.0.1', () =>
      tcp.close(() => {
        const udp = createSocket('udp4');
        udp.once('error', () => done(false));
        udp.bind(port, '127.0.0.1', () => udp.close(() => done(true)));
      }),
    );
  });

async function pickPort(preferred) {
  if (await portFree(preferred)) return preferred;
  for (let p = 20_000 + Math.floor(Math.random() * 20_000), i = 0; i < 50; i++, p++) {
    if (await portFree(p)) return p;
  }
  throw new Error('no free port');
}

mkdirSync(dataDir, { recursive: true });
writeFileSync(
  configPath,
  [
    '# Written by scripts/quickstart.mjs: the streams the demos use.',
    'streams:',
    '  - { tenant: t1, name: demo, durable: true, fsync: periodic }',
    '  - { tenant: t1, name: orders, durable: true, fsync: onCommit }',
    '  - { tenant: t1, name: ticks }',
    '',
  ].join('\n'),
);
const port = await pickPort(5000);
const httpPort = await pickPort(8080);

console.log(
  `quickstart: starting felix-broker on ${transport}://127.0.0.1:${port} (data in ${dataDir})`,
);
const broker = spawn(process.execPath, [brokerMain], {
  cwd: root,
  env: {
    ...process.env,
    FELIX_BROKER_CONFIG: configPath,
    FELIX_DURABLE_STORAGE_DIR: dataDir,
    FELIX_BROKER_PORT: String(port),
    FELIX_BROKER_HTTP_PORT: String(httpPort),
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let brokerErr = '';
broker.stderr.on('data', (c) => {
  brokerErr += c;
});

const listening = await new Promise((done, fail) => {
  let buf = '';
  const timer = setTimeout(
    () => fail(new Error('the broker did not start in time')),
    STARTUP_MS_MAX,
  );
  broker.once('exit', (code) => fail(new Error(`the broker exited (${code}): ${brokerErr}`)));
  broker.stdout.on('data', (chunk) => {
    buf += chunk;
    for (const line of buf.split('\n')) {
      if (!line.includes('"msg":"listening"')) continue;
      clearTimeout(timer);
      done(JSON.parse(line));
    }
  });
}).catch((err) => {
  console.error(`quickstart: ${err.message}`);
  broker.kill('SIGKILL');
  process.exit(1);
});
console.log(
  `quickstart: broker is up (QUIC ${listening.quic_port}, TLS ${listening.tls_port}, HTTP ${listening.http_port}, certificate ${listening.cert_fingerprint.slice(0, 23)}...)`,
);
console.log('quickstart: running demos/simple-pubsub\n');

const demo = spawn(process.execPath, [demoMain], {
  cwd: root,
  env: {
    ...process.env,
    FELIX_SERVERS: `${transport}://127.0.0.1:${port}`,
    FELIX_FINGERPRINT: listening.cert_fingerprint,
  },
  stdio: 'inherit',
});
const demoCode = await new Promise((done) => demo.once('exit', (code) => done(code ?? 1)));

const metrics = await fetch(`http://127.0.0.1:${httpPort}/metrics`)
  .then((r) => r.text())
  .catch(() => '');
const published = /felix_broker_published_records_total (\d+)/.exec(metrics)?.[1] ?? '?';
const delivered = /felix_broker_delivered_records_total (\d+)/.exec(metrics)?.[1] ?? '?';

broker.kill('SIGTERM');
const brokerCode = await new Promise((done) => broker.once('exit', (code) => done(code)));
console.log(
  `\nquickstart: broker metrics said ${published} records published, ${delivered} delivered; broker stopped (exit ${brokerCode})`,
);
console.log(`
What next:
  - Start a broker yourself and keep it running:
      FELIX_BROKER_CONFIG=.felix/broker.yaml FELIX_DURABLE_STORAGE_DIR=.felix/data node services/broker/dist/main.js
    (its first log line prints cert_fingerprint; metrics at http://127.0.0.1:8080/metrics)
  - Run the demos against it:
      FELIX_SERVERS=quic://127.0.0.1:5000 FELIX_FINGERPRINT=<fingerprint> node demos/simple-pubsub/main.mjs
      node demos/durable-restart/main.mjs   # SIGKILLs its own broker mid-stream; nothing acked is lost
      node demos/latency/main.mjs           # p50/p99/p999 and an SVG chart
  - Use the client in your code: packages/client/README.md. Broker settings: docs/broker-config.md.
`);
process.exit(demoCode === 0 && brokerCode === 0 ? 0 : 1);
