/**
 * Control plane and broker processes for the broker's cluster tests (cluster-control-plane,
 * fault-seams-cluster): both run their built dist/, the control plane on SQLite in a temp dir
 * with its bootstrap listener, so a test can mint an operator token and node credentials.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Child, freePort, spawnNode, tempDir, waitFor } from '@felix/testing-harness';

export const REPO = resolve(import.meta.dirname, '..', '..', '..', '..');
export const BROKER_MAIN = join(REPO, 'services', 'broker', 'dist', 'main.js');
export const CP_MAIN = join(REPO, 'services', 'control-plane', 'dist', 'main.js');
/** Deadline of each wait: generous, because the machine running the suite may be loaded. */
export const SETTLE_MS = 30_000;

export interface Running {
  child: Child;
  port: number;
  httpPort: number;
  fingerprint: string;
}

/** The control plane's bootstrap listener token: random per run, at least 32 characters. */
export const BOOTSTRAP_TOKEN = randomBytes(24).toString('hex');
export const OPERATOR_PERMISSIONS = [
  'tenant.manage:cluster:*',
  'node.view:cluster:*',
  'node.manage:cluster:*',
];

export async function startControlPlane(
  dir: string,
  port: number,
  bootPort: number,
): Promise<Child> {
  const child = spawnNode([CP_MAIN], {
    cwd: REPO,
    env: {
      FELIX_CONTROLPLANE_BIND: `127.0.0.1:${port}`,
      FELIX_CONTROLPLANE_DATA_DIR: dir,
      FELIX_CONTROLPLANE_POSTGRES_URL: '',
      FELIX_CONTROLPLANE_LOG_LEVEL: 'warn',
      FELIX_BOOTSTRAP_ENABLED: 'true',
      FELIX_BOOTSTRAP_BIND_ADDR: `127.0.0.1:${bootPort}`,
      FELIX_BOOTSTRAP_TOKEN: BOOTSTRAP_TOKEN,
      FELIX_BOOTSTRAP_DEV_TOKENS: 'true',
    },
  });
  await child.waitForOutput('"event":"listening"', 'the control plane to listen', 20_000);
  return child;
}

/**
 * Initializes `tenant` through the bootstrap listener (a 409 means it already was) and mints a
 * token of it: the operator tenant's for node credentials and cluster routes, a tenant's admin
 * for its catalog.
 */
export async function bootstrapToken(
  bootPort: number,
  tenant: string,
  permissions: readonly string[],
  opts: { operator?: boolean; principal?: string } = {},
): Promise<string> {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(
      `http://127.0.0.1:${bootPort}/internal/bootstrap/tenants/${tenant}/${path}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-felix-bootstrap-token': BOOTSTRAP_TOKEN },
        body: JSON.stringify(body),
      },
    );
    if (res.status >= 400 && res.status !== 409)
      throw new Error(`bootstrap ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<{ token?: string }>;
  };
  await post('initialize', {
    initial_admin_principals: ['admin'],
    operator: opts.operator ?? false,
  });
  const minted = await post('dev-token', {
    principal: opts.principal ?? 'admin',
    permissions,
    audience: 'felix-controlplane',
  });
  return minted.token!;
}

/** A broker's node credential: manage its own node, view the cluster (what brokers poll). */
export const nodeToken = (bootPort: number, nodeId: string) =>
  bootstrapToken(bootPort, 'operator', [`node.manage:node:${nodeId}`, 'node.view:cluster:*'], {
    operator: true,
    principal: `node-${nodeId}`,
  });

export async function startClusterBroker(
  dir: string,
  env: NodeJS.ProcessEnv,
  yaml = '',
): Promise<Running> {
  const port = await freePort();
  const httpPort = await freePort();
  const configPath = join(dir, `broker-${port}.yaml`);
  await writeFile(configPath, yaml);
  const child = spawnNode([BROKER_MAIN], {
    cwd: REPO,
    env: {
      FELIX_BROKER_CONFIG: configPath,
      FELIX_BROKER_PORT: String(port),
      FELIX_BROKER_HTTP_PORT: String(httpPort),
      FELIX_DURABLE_STORAGE_DIR: join(dir, `data-${port}`),
      FELIX_BROKER_LOG_LEVEL: 'info',
      // Placement and ownership are under test here, not tokens: explicit dev mode.
      FELIX_AUTH_MODE: 'dev',
      FELIX_AUTH_DEV_WITH_CONTROLPLANE: 'true',
      ...env,
    },
  });
  await child.waitForOutput('"msg":"listening"', 'the broker to listen', 20_000);
  const line = child.jsonLines().find((l): l is { msg: string; cert_fingerprint: string } => {
    return (l as { msg?: string }).msg === 'listening';
  });
  if (!line) throw new Error('no listening line');
  return { child, port, httpPort, fingerprint: line.cert_fingerprint };
}

export async function readyStatus(b: Running): Promise<number> {
  return (await fetch(`http://127.0.0.1:${b.httpPort}/ready`)).status;
}

export async function heldShards(b: Running): Promise<number> {
  const body = await (await fetch(`http://127.0.0.1:${b.httpPort}/metrics`)).text();
  return Number(/felix_broker_cluster_shards_held (\d+)/.exec(body)?.[1] ?? -1);
}

/** A control plane on SQLite, one broker registered with it, and tenant `acme` with namespace
 *  `prod`; `api` calls the control plane as the operator, or as acme's admin under its path. */
export interface AcmeCluster {
  cpUrl: string;
  cp: Child;
  broker: Running;
  api(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: ReturnType<typeof JSON.parse> }>;
  close(): Promise<void>;
}

export async function startAcmeCluster(
  prefix: string,
  env: NodeJS.ProcessEnv = {},
): Promise<AcmeCluster> {
  const dir = await tempDir(prefix);
  const cpPort = await freePort();
  const bootPort = await freePort();
  const cpUrl = `http://127.0.0.1:${cpPort}`;
  const cp = await startControlPlane(join(dir.path, 'cp'), cpPort, bootPort);
  const operatorToken = await bootstrapToken(bootPort, 'operator', OPERATOR_PERMISSIONS, {
    operator: true,
  });
  let acmeToken = '';
  const api = async (method: string, path: string, body?: unknown) => {
    const token = path.startsWith('/v1/tenants/acme/') ? acmeToken : operatorToken;
    const res = await fetch(`${cpUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? null : JSON.parse(text) };
  };
  const broker = await startClusterBroker(dir.path, {
    FELIX_CONTROLPLANE_URL: cpUrl,
    FELIX_NODE_TOKEN: await nodeToken(bootPort, 'broker-a'),
    FELIX_NODE_ID: 'broker-a',
    ...env,
  });
  await waitFor(async () => (await readyStatus(broker)) === 200, 'the broker ready', SETTLE_MS);
  const tenant = await api('POST', '/v1/tenants', { tenant_id: 'acme' });
  if (tenant.status !== 201) throw new Error(`tenant acme: ${tenant.status}`);
  acmeToken = await bootstrapToken(bootPort, 'acme', ['tenant.manage:tenant:acme']);
  const ns = await api('POST', '/v1/tenants/acme/namespaces', { namespace: 'prod' });
  if (ns.status !== 201) throw new Error(`namespace prod: ${ns.status}`);
  return {
    cpUrl,
    cp,
    broker,
    api,
    async close() {
      await broker.child.kill();
      await cp.kill();
      await dir.cleanup();
    },
  };
}
