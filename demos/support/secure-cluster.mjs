// Starts a control plane and one broker joined to it, the secure way (docs/security.md, Day 0):
// the control plane's bootstrap listener on loopback with a random token initializes an operator
// tenant, mints the broker's node credential from it, and the broker (auth.mode tokens, the
// default) verifies every client token against its tenant's JWKS from the control plane.
// Used by demos/rbac-live and demos/cross-tenant-isolation; the other demos run standalone.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort } from './broker.mjs';
import { allHeld, check } from './checks.mjs';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CP_MAIN = join(ROOT, 'services', 'control-plane', 'dist', 'main.js');
const BROKER_MAIN = join(ROOT, 'services', 'broker', 'dist', 'main.js');
const BROKER_NODE_FLAGS = JSON.parse(
  readFileSync(join(ROOT, 'services', 'broker', 'node-flags.json'), 'utf8'),
).flags;
const START_DEADLINE_MS = 30_000;
const POLL_MS = 100;
const OPERATOR_TENANT = 'operator';
const NODE_ID = 'demo-broker';

/** Waits until `cond()` answers true (errors count as false), failing after the deadline. */
export async function until(what, cond, deadlineMs = START_DEADLINE_MS) {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    if (await Promise.resolve(cond()).catch(() => false)) return;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function startChild(name, args, env) {
  const merged = { ...process.env, ...env };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  const child = spawn(process.execPath, args, {
    env: merged,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c) => {
    out = (out + c).slice(-65_536);
  });
  child.stderr.setEncoding('utf8').on('data', (c) => {
    err = (err + c).slice(-65_536);
  });
  const exited = new Promise((done) => child.once('exit', (code) => done(code)));
  const line = (marker) =>
    until(`${name} to log ${marker}`, () => {
      if (child.exitCode !== null) throw new Error(`${name} exited: ${err.trim()}`);
      return out.split('\n').some((l) => l.includes(marker));
    }).then(() => JSON.parse(out.split('\n').find((l) => l.includes(marker))));
  const stop = () => {
    process.off('exit', killOnExit);
    child.kill('SIGTERM');
    return exited;
  };
  return { line, stop };
}

/** A JSON call; answers { status, body } whatever the status. */
async function call(url, method, headers, body) {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

/**
 * Starts the pair under `.felix/<name>/` (wiped first). `postgres: {url, schema}` puts the control
 * plane on Postgres instead of SQLite; `cpEnv` adds control-plane settings. Answers helpers for
 * the bootstrap listener, the REST API and the broker's address; `stop()` ends both.
 */
export async function startSecureCluster({ name, postgres, cpEnv = {} }) {
  const dir = resolve(process.cwd(), '.felix', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => process.exit(130));
  const [cpPort, bootPort, brokerPort, httpPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  // Random per run: it guards the bootstrap listener, which lives only as long as the demo.
  const bootstrapToken = randomBytes(24).toString('hex');
  const cpUrl = `http://127.0.0.1:${cpPort}`;
  const cp = startChild('the control plane', [CP_MAIN], {
    FELIX_CONTROLPLANE_BIND: `127.0.0.1:${cpPort}`,
    FELIX_CONTROLPLANE_DATA_DIR: join(dir, 'controlplane'),
    FELIX_CONTROLPLANE_POSTGRES_URL: postgres?.url ?? '',
    FELIX_CONTROLPLANE_POSTGRES_SCHEMA: postgres?.schema ?? '',
    FELIX_CONTROLPLANE_LOG_LEVEL: 'warn',
    FELIX_BOOTSTRAP_ENABLED: 'true',
    FELIX_BOOTSTRAP_BIND_ADDR: `127.0.0.1:${bootPort}`,
    FELIX_BOOTSTRAP_TOKEN: bootstrapToken,
    FELIX_BOOTSTRAP_DEV_TOKENS: 'true',
    ...cpEnv,
  });
  await cp.line('"event":"listening"');

  const bootstrap = (tenant, path, body) =>
    call(
      `http://127.0.0.1:${bootPort}/internal/bootstrap/tenants/${tenant}/${path}`,
      'POST',
      { 'x-felix-bootstrap-token': bootstrapToken },
      body,
    );
  const devToken = async (tenant, principal, permissions, audience = 'felix-broker') => {
    const res = await bootstrap(tenant, 'dev-token', { principal, permissions, audience });
    if (res.status !== 200) throw new Error(`dev-token: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.token;
  };
  const api = (token, method, path, body) =>
    call(`${cpUrl}${path}`, method, { authorization: `Bearer ${token}` }, body);

  // Day 0: an operator tenant, and the broker's node credential minted from it.
  const op = await bootstrap(OPERATOR_TENANT, 'initialize', {
    initial_admin_principals: ['demo-operator'],
    operator: true,
  });
  if (op.status !== 200) throw new Error(`operator bootstrap: ${op.status}`);
  const nodeToken = await devToken(
    OPERATOR_TENANT,
    `node-${NODE_ID}`,
    [`node.manage:node:${NODE_ID}`, 'node.view:cluster:*'],
    'felix-controlplane',
  );
  // No FELIX_AUTH_MODE: a broker with a control-plane URL verifies tokens (the default).
  const broker = startChild('the broker', [...BROKER_NODE_FLAGS, BROKER_MAIN], {
    FELIX_CONTROLPLANE_URL: cpUrl,
    FELIX_NODE_TOKEN: nodeToken,
    FELIX_NODE_ID: NODE_ID,
    FELIX_DURABLE_STORAGE_DIR: join(dir, 'data'),
    FELIX_BROKER_PORT: String(brokerPort),
    FELIX_BROKER_HTTP_PORT: String(httpPort),
    FELIX_BROKER_CONFIG: '',
    FELIX_AUTH_MODE: undefined,
  });
  const listening = await broker.line('"msg":"listening"');

  /** Resolves once the broker leads at least `count` stream shards (after catalog changes). */
  const shardsHeld = (count) =>
    until(`the broker to hold ${count} shards`, async () => {
      const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
      return Number(/felix_broker_cluster_shards_held (\d+)/.exec(text)?.[1] ?? 0) >= count;
    });

  return {
    cpUrl,
    bootstrap,
    devToken,
    api,
    shardsHeld,
    servers: [`quic://127.0.0.1:${brokerPort}`],
    tls: { fingerprint: listening.cert_fingerprint },
    async stop() {
      await broker.stop();
      await cp.stop();
    },
  };
}

/**
 * Runs demo steps: each is a check (PASS or FAIL with its detail, checks.mjs), and a failed step
 * does not stop the ones after it. `exitCode()` is 1 when any check failed.
 */
export function steps() {
  return {
    async step(name, fn) {
      try {
        const detail = await fn();
        check(true, name, detail || undefined);
      } catch (err) {
        check(false, name, err?.message ?? err);
      }
    },
    exitCode: () => (allHeld() ? 0 : 1),
  };
}

/** Resolves with "action on object" when `op` fails with the client's ForbiddenError for them. */
export async function expectForbidden(op, action, object) {
  try {
    await op();
  } catch (err) {
    if (err?.code !== 'FELIX_CLIENT_FORBIDDEN') throw new Error(`expected forbidden, got ${err}`);
    if (err.action !== action || err.object !== object)
      throw new Error(
        `forbidden for ${err.action} on ${err.object}, expected ${action} on ${object}`,
      );
    return `forbidden: ${err.action} on ${err.object}`;
  }
  throw new Error(`${action} on ${object} was allowed`);
}

/** The first record of a one-shard subscription from `from`; a refusal rejects. */
export async function firstRecord(felix, stream, from) {
  const ac = new AbortController();
  try {
    for await (const record of felix.subscribe(stream, { from, shard: 0, signal: ac.signal })) {
      return record;
    }
    throw new Error('the subscription ended without a record');
  } finally {
    ac.abort();
  }
}

/** Waits until the broker serves `cache` (its shards are assigned and opened after a create). */
export function cacheServed(felix, cache) {
  return until(`cache ${cache} to be served`, () =>
    felix
      .cache(cache)
      .get('-')
      .then(() => true),
  );
}
