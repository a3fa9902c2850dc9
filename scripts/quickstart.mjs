#!/usr/bin/env node
// Quickstart: starts a control plane on SQLite under ./.felix/controlplane, one felix-broker
// registered with it (data under ./.felix/data), creates the demo streams through the control
// plane's REST API, runs demos/simple-pubsub against the broker, prints what happened, and stops
// both (the broker deregisters on SIGTERM). Needs the workspace built (`pnpm run quickstart` does
// that first). Set FELIX_QUICKSTART_TRANSPORT=tls to use TLS over TCP instead of QUIC.
// It takes the secure path: the control plane's bootstrap listener (loopback, a random token,
// dev tokens on) initializes an operator tenant and the demo tenant; every REST call, the
// broker's registration and the demo's connection carry tokens minted from them.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const felixDir = join(root, '.felix');
const cpDir = join(felixDir, 'controlplane');
const dataDir = join(felixDir, 'data');
const cpMain = join(root, 'services', 'control-plane', 'dist', 'main.js');
const brokerMain = join(root, 'services', 'broker', 'dist', 'main.js');
/** The node flags every broker launcher passes (services/broker/node-flags.json says why). */
const brokerNodeFlags = JSON.parse(
  readFileSync(join(root, 'services', 'broker', 'node-flags.json'), 'utf8'),
).flags;
const demoMain = join(root, 'demos', 'simple-pubsub', 'main.mjs');
const transport = process.env.FELIX_QUICKSTART_TRANSPORT === 'tls' ? 'tls' : 'quic';
const NODE_ID = 'quickstart-broker';
const TENANT = 't1';
const NAMESPACE = 'default';
/** The streams the demos use: [name, settings]. */
const STREAMS = [
  ['demo', { shards: 1, durable: true }],
  ['orders', { shards: 4, durable: true }],
  ['ticks', { shards: 1, durable: false }],
];
const STARTUP_MS_MAX = 30_000;
const OPERATOR_TENANT = 'operator';
const OPERATOR_PERMISSIONS = [
  'tenant.manage:cluster:*',
  'node.view:cluster:*',
  'node.manage:cluster:*',
];
/** Random per run: it only guards the bootstrap listener, which lives as long as this script. */
const BOOTSTRAP_TOKEN = randomBytes(24).toString('hex');
const rel = (p) => relative(process.cwd(), p) || '.';

for (const main of [cpMain, brokerMain]) {
  if (!existsSync(main)) {
    console.error(`quickstart: ${main} is missing; build first: npx --yes pnpm@10.34.9 build`);
    process.exit(1);
  }
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

const children = [];
function start(name, main, env, nodeFlags = []) {
  const child = spawn(process.execPath, [...nodeFlags, main], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c) => {
    out = (out + c).slice(-65_536);
  });
  child.stderr.setEncoding('utf8').on('data', (c) => {
    err = (err + c).slice(-65_536);
  });
  const exited = new Promise((done) => child.once('exit', (code) => done(code)));
  const handle = { name, child, exited, out: () => out, err: () => err };
  children.push(handle);
  return handle;
}

function fail(message) {
  console.error(`quickstart: ${message}`);
  for (const c of children) c.child.kill('SIGKILL');
  process.exit(1);
}
// Ctrl-C, or the demos test's deadline: take the control plane, broker and demo down too.
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => fail(`stopped by ${sig}`));

/** Resolves with the first stdout JSON line containing `marker`. */
function waitForLine(h, marker) {
  return new Promise((done, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${h.name} did not start in ${STARTUP_MS_MAX / 1000} s`)),
      STARTUP_MS_MAX,
    );
    const check = () => {
      const line = h
        .out()
        .split('\n')
        .find((l) => l.includes(marker));
      if (!line) return;
      clearTimeout(timer);
      h.child.stdout.off('data', check);
      done(JSON.parse(line));
    };
    h.child.stdout.on('data', check);
    h.exited.then((code) => reject(new Error(`${h.name} exited (${code}): ${h.err().trim()}`)));
    check();
  });
}

async function until(what, cond) {
  const deadline = Date.now() + STARTUP_MS_MAX;
  while (Date.now() < deadline) {
    if (await cond().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

mkdirSync(cpDir, { recursive: true });
mkdirSync(dataDir, { recursive: true });
const cpPort = await pickPort(8443);
const port = await pickPort(5000);
const httpPort = await pickPort(8080);
const bootPort = await pickPort(9095);
const cpUrl = `http://127.0.0.1:${cpPort}`;
const bootUrl = `http://127.0.0.1:${bootPort}`;
/** Control-plane tokens: the operator's, and the demo tenant's admin (set once minted). */
const tokens = { operator: '', tenant: '' };

async function api(method, path, body) {
  const token = path.startsWith(`/v1/tenants/${TENANT}/`) ? tokens.tenant : tokens.operator;
  const res = await fetch(`${cpUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await res.json().catch(() => null);
  if (res.status >= 400)
    throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return { status: res.status, body: json };
}

/** A bootstrap-listener call; `initialize` answers 409 on a re-run (the tenant kept its keys). */
async function bootstrap(tenant, path, body) {
  const res = await fetch(`${bootUrl}/internal/bootstrap/tenants/${tenant}/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-felix-bootstrap-token': BOOTSTRAP_TOKEN },
    body: JSON.stringify(body),
  });
  const json = await res.json().catch(() => null);
  if (res.status >= 400 && !(path === 'initialize' && res.status === 409))
    throw new Error(`bootstrap ${tenant} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return { status: res.status, body: json };
}

const mint = async (tenant, principal, permissions, audience = 'felix-controlplane') =>
  (await bootstrap(tenant, 'dev-token', { principal, permissions, audience })).body.token;

console.log(`quickstart: starting felix-controlplane on ${cpUrl} (SQLite in ${rel(cpDir)})`);
const cp = start('the control plane', cpMain, {
  FELIX_CONTROLPLANE_BIND: `127.0.0.1:${cpPort}`,
  FELIX_CONTROLPLANE_DATA_DIR: cpDir,
  FELIX_CONTROLPLANE_POSTGRES_URL: '',
  FELIX_CONTROLPLANE_LOG_LEVEL: 'warn',
  FELIX_BOOTSTRAP_ENABLED: 'true',
  FELIX_BOOTSTRAP_BIND_ADDR: `127.0.0.1:${bootPort}`,
  FELIX_BOOTSTRAP_TOKEN: BOOTSTRAP_TOKEN,
  FELIX_BOOTSTRAP_DEV_TOKENS: 'true',
});
await waitForLine(cp, '"event":"listening"').catch((err) => fail(err.message));

// Day 0: an operator tenant (cluster rights: tenants and nodes), its operator's token, and the
// broker's node credential (its own node, and the cluster reads brokers follow).
let nodeToken = '';
try {
  const op = await bootstrap(OPERATOR_TENANT, 'initialize', {
    display_name: 'Operators',
    initial_admin_principals: ['quickstart-operator'],
    operator: true,
  });
  tokens.operator = await mint(OPERATOR_TENANT, 'quickstart-operator', OPERATOR_PERMISSIONS);
  nodeToken = await mint(OPERATOR_TENANT, `node-${NODE_ID}`, [
    `node.manage:node:${NODE_ID}`,
    'node.view:cluster:*',
  ]);
  console.log(
    `quickstart: bootstrap on ${bootUrl}: operator tenant ${op.status === 200 ? 'initialized' : 'already initialized'}; minted the operator's token and the broker's node credential`,
  );
} catch (err) {
  fail(`bootstrap failed: ${err.message}`);
}

console.log(
  `quickstart: starting felix-broker ${NODE_ID} on ${transport}://127.0.0.1:${port} (data in ${rel(dataDir)})`,
);
const broker = start(
  'the broker',
  brokerMain,
  {
    FELIX_CONTROLPLANE_URL: cpUrl,
    FELIX_NODE_TOKEN: nodeToken,
    FELIX_NODE_ID: NODE_ID,
    FELIX_DURABLE_STORAGE_DIR: dataDir,
    FELIX_BROKER_PORT: String(port),
    FELIX_BROKER_HTTP_PORT: String(httpPort),
    FELIX_BROKER_CONFIG: '',
    // No auth setting: the broker verifies client tokens against the control plane's JWKS.
  },
  brokerNodeFlags,
);
const listening = await waitForLine(broker, '"msg":"listening"').catch((err) => fail(err.message));
await until('the broker to be ready', async () => {
  const r = await fetch(`http://127.0.0.1:${httpPort}/ready`);
  return r.status === 200;
}).catch((err) => fail(`${err.message}\n${broker.out().slice(-2000)}`));
const node = (await api('GET', `/v1/nodes/${NODE_ID}`)).body;
console.log(
  `quickstart: broker registered: ${NODE_ID} is ${node.node.status.lifecycle} (incarnation ${node.node.status.incarnation}, client address ${node.node.spec.client_addr})`,
);
console.log(
  `quickstart: broker listening on QUIC ${listening.quic_port} and TLS ${listening.tls_port}, HTTP ${httpPort}, certificate ${listening.cert_fingerprint}`,
);

// The catalog, through the REST API (felixctl does the same); re-running finds it already there.
try {
  const created = [];
  const t = await api('POST', '/v1/tenants', { tenant_id: TENANT });
  if (t.status === 201) created.push(`tenant ${TENANT}`);
  // The operator made the tenant; bootstrap gives it its key and admin, whose token runs it.
  await bootstrap(TENANT, 'initialize', { initial_admin_principals: ['quickstart-admin'] });
  // token.delegate and the data permissions: felixctl token mint narrows this admin token
  // into broker tokens (a delegated token never holds more than its source).
  tokens.tenant = await mint(TENANT, 'quickstart-admin', [
    `tenant.manage:tenant:${TENANT}`,
    `token.delegate:tenant:${TENANT}`,
    `stream.publish:stream:${TENANT}/${NAMESPACE}/*`,
    `stream.subscribe:stream:${TENANT}/${NAMESPACE}/*`,
    `cache.read:cache:${TENANT}/${NAMESPACE}/*`,
    `cache.write:cache:${TENANT}/${NAMESPACE}/*`,
  ]);
  const n = await api('POST', `/v1/tenants/${TENANT}/namespaces`, { namespace: NAMESPACE });
  if (n.status === 201) created.push(`namespace ${NAMESPACE}`);
  for (const [stream, settings] of STREAMS) {
    const s = await api('POST', `/v1/tenants/${TENANT}/namespaces/${NAMESPACE}/streams`, {
      stream,
      ...settings,
    });
    if (s.status === 201) created.push(`stream ${stream}`);
  }
  console.log(
    `quickstart: catalog via ${cpUrl}/v1: ${created.length > 0 ? `created ${created.join(', ')}` : 'already there from an earlier run'}`,
  );
} catch (err) {
  fail(`creating the demo streams failed: ${err.message}`);
}
const shardCount = STREAMS.reduce((n, [, s]) => n + s.shards, 0);
await until('the broker to open its shards', async () => {
  const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  return Number(/felix_broker_cluster_shards_held (\d+)/.exec(text)?.[1] ?? 0) >= shardCount;
}).catch((err) => fail(err.message));
const assignments = (await api('GET', '/v1/shard-assignments')).body.items.filter(
  (a) => a.tenant_id === TENANT && a.namespace === NAMESPACE && a.kind === 'stream',
);
for (const [stream] of STREAMS) {
  const mine = assignments.filter((a) => a.stream === stream);
  const leaders = [...new Set(mine.map((a) => a.leader))].join(', ');
  console.log(
    `quickstart:   ${TENANT}/${NAMESPACE}/${stream}: ${mine.length} shard(s) led by ${leaders}`,
  );
}
// The demo's client token: broker audience, publish and subscribe in the demo namespace only.
const clientToken = await mint(
  TENANT,
  'quickstart-demo',
  [
    `stream.publish:stream:${TENANT}/${NAMESPACE}/*`,
    `stream.subscribe:stream:${TENANT}/${NAMESPACE}/*`,
  ],
  'felix-broker',
).catch((err) => fail(err.message));
console.log('quickstart: running demos/simple-pubsub with a client token\n');

const demo = spawn(process.execPath, [demoMain], {
  cwd: root,
  env: {
    ...process.env,
    FELIX_SERVERS: `${transport}://127.0.0.1:${port}`,
    FELIX_FINGERPRINT: listening.cert_fingerprint,
    FELIX_TENANT: TENANT,
    FELIX_STREAM: 'demo',
    FELIX_TOKEN: clientToken,
  },
  stdio: 'inherit',
});
const demoCode = await new Promise((done) => demo.once('exit', (code) => done(code ?? 1)));

const metrics = await fetch(`http://127.0.0.1:${httpPort}/metrics`)
  .then((r) => r.text())
  .catch(() => '');
const published = /felix_broker_published_records_total (\d+)/.exec(metrics)?.[1] ?? '?';
const delivered = /felix_broker_delivered_records_total (\d+)/.exec(metrics)?.[1] ?? '?';

broker.child.kill('SIGTERM');
const brokerCode = await broker.exited;
const after = await api('GET', `/v1/nodes/${NODE_ID}`).catch(() => null);
cp.child.kill('SIGTERM');
const cpCode = await cp.exited;
console.log(
  `\nquickstart: broker metrics said ${published} records published, ${delivered} delivered`,
);
console.log(
  `quickstart: broker stopped (exit ${brokerCode}; the control plane now lists it as ${after?.body?.node?.status?.lifecycle ?? '?'}), control plane stopped (exit ${cpCode})`,
);
console.log(`
What next (state stays in ./.felix; delete it to start over):
  - Keep a control plane and a broker running, mint tokens with scripts/dev-token.mjs, create a
    stream with felixctl and publish to it: the README's "What to type next" has the commands.
  - Permissions live (deny, grant, allow, revoke, no restart): node demos/rbac-live/main.mjs
  - Other demos (each starts its own standalone broker): node demos/orders/main.mjs,
    demos/cache, demos/queue-semantics, demos/notifications, demos/durable-restart, demos/latency,
    demos/slow-consumer, demos/state-divergence.
  - Use the client in your code: packages/client/README.md. Broker settings: docs/broker-config.md;
    control plane: docs/control-plane.md.
`);
process.exit(demoCode === 0 && brokerCode === 0 && cpCode === 0 ? 0 : 1);
