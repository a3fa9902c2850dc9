/**
 * The cluster's control plane: a real `services/control-plane/dist/main.js` process on SQLite (a
 * file in the cluster's dir) or on a fresh schema of Postgres `test`, its bootstrap listener on
 * loopback guarded by a random token (tokens minted there), and JSON calls to its REST API.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { freePort } from '@felix/testing-harness';
import { ControlPlaneCallError, ProcessStartError } from '../errors.js';
import {
  BROKER_START_ATTEMPTS_MAX,
  CP_EXPIRY_SWEEP_INTERVAL_MS,
  CP_EXPIRY_TIMEOUT_MS,
  CP_HEARTBEAT_INTERVAL_MS,
  CP_RECONCILE_INTERVAL_MS,
  HTTP_CALL_DEADLINE_MS,
  POSTGRES_DROP_DEADLINE_MS,
  PROCESS_LISTEN_DEADLINE_MS,
  TOKEN_TTL_S,
  scaled,
} from '../limits.js';
import { ManagedProcess } from './process.js';

import { CP_DIR, CP_MAIN, REPO } from './repo.js';

export const POSTGRES_URL =
  process.env.FELIX_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type Audience = 'felix-broker' | 'felix-controlplane';

export interface ControlPlaneOptions {
  dir: string;
  backend: 'sqlite' | 'postgres';
  /** Added to the control plane's environment. */
  env?: NodeJS.ProcessEnv;
}

/** A JSON call; answers the status and the parsed body (null when empty or not JSON). */
async function call(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(scaled(HTTP_CALL_DEADLINE_MS)),
  });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = text; // not JSON (a proxy's or a crash's page): kept as text for the error
  }
  return { status: res.status, body: parsed };
}

export class ControlPlane {
  readonly proc: ManagedProcess;
  readonly schema: string | undefined;
  port = 0;
  bootPort = 0;
  private readonly bootstrapToken = randomBytes(24).toString('hex');

  constructor(private readonly opts: ControlPlaneOptions) {
    this.proc = new ManagedProcess('controlplane', join(opts.dir, 'controlplane.log'));
    this.schema =
      opts.backend === 'postgres' ? `felix_cluster_${randomBytes(6).toString('hex')}` : undefined;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** First start: fresh ports, retried on fresh ones when the process fails to listen. */
  async start(): Promise<void> {
    let last: unknown;
    for (let attempt = 0; attempt < BROKER_START_ATTEMPTS_MAX; attempt++) {
      this.port = await freePort();
      this.bootPort = await freePort();
      try {
        await this.spawn();
        return;
      } catch (err) {
        if (!(err instanceof ProcessStartError)) throw err;
        last = err;
      }
    }
    throw last;
  }

  /** SIGTERM then a start on the same ports and the same store (SQLite file or schema). */
  async restart(): Promise<void> {
    await this.proc.stop();
    await this.spawn();
  }

  private async spawn(): Promise<void> {
    await this.proc.start({
      args: [CP_MAIN],
      cwd: REPO,
      readyMarker: '"event":"listening"',
      deadlineMs: scaled(PROCESS_LISTEN_DEADLINE_MS),
      env: {
        FELIX_CONTROLPLANE_BIND: `127.0.0.1:${this.port}`,
        FELIX_CONTROLPLANE_DATA_DIR: join(this.opts.dir, 'controlplane'),
        FELIX_CONTROLPLANE_POSTGRES_URL: this.schema === undefined ? '' : POSTGRES_URL,
        FELIX_CONTROLPLANE_POSTGRES_SCHEMA: this.schema ?? '',
        FELIX_CONTROLPLANE_STORAGE_BACKEND: undefined,
        // warn: at info every heartbeat and feed poll is two lines, drowning the log tails.
        FELIX_CONTROLPLANE_LOG_LEVEL: 'warn',
        FELIX_CONTROLPLANE_HEARTBEAT_INTERVAL_MS: String(CP_HEARTBEAT_INTERVAL_MS),
        FELIX_CONTROLPLANE_EXPIRY_TIMEOUT_MS: String(CP_EXPIRY_TIMEOUT_MS),
        FELIX_CONTROLPLANE_EXPIRY_SWEEP_INTERVAL_MS: String(CP_EXPIRY_SWEEP_INTERVAL_MS),
        FELIX_CONTROLPLANE_RECONCILE_INTERVAL_MS: String(CP_RECONCILE_INTERVAL_MS),
        FELIX_BOOTSTRAP_ENABLED: 'true',
        FELIX_BOOTSTRAP_BIND_ADDR: `127.0.0.1:${this.bootPort}`,
        FELIX_BOOTSTRAP_TOKEN: this.bootstrapToken,
        FELIX_BOOTSTRAP_DEV_TOKENS: 'true',
        ...this.opts.env,
      },
    });
  }

  /** A bootstrap-listener call for `tenant`; `initialize` of an initialized tenant is fine. */
  async bootstrap(tenant: string, path: 'initialize' | 'dev-token', body: unknown) {
    const res = await call(
      `http://127.0.0.1:${this.bootPort}/internal/bootstrap/tenants/${tenant}/${path}`,
      'POST',
      { 'x-felix-bootstrap-token': this.bootstrapToken },
      body,
    );
    if (res.status >= 400 && !(path === 'initialize' && res.status === 409)) {
      throw new ControlPlaneCallError(
        `bootstrap ${path} of ${tenant}: ${res.status} ${JSON.stringify(res.body)}`,
      );
    }
    return res.body as { token?: string };
  }

  /** A token of `tenant` for `principal` with exactly `permissions`, valid TOKEN_TTL_S. */
  async devToken(
    tenant: string,
    principal: string,
    permissions: readonly string[],
    audience: Audience,
  ): Promise<string> {
    const body = { principal, permissions, audience, ttl_seconds: TOKEN_TTL_S };
    const minted = await this.bootstrap(tenant, 'dev-token', body);
    if (typeof minted.token !== 'string') {
      throw new ControlPlaneCallError(`bootstrap dev-token of ${tenant} answered no token`);
    }
    return minted.token;
  }

  /** A REST call with `token`; a status of 400 or more is a ControlPlaneCallError. */
  async api(token: string, method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await call(
      `${this.url}${path}`,
      method,
      { authorization: `Bearer ${token}` },
      body,
    );
    if (res.status >= 400) {
      throw new ControlPlaneCallError(
        `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`,
      );
    }
    return res.body;
  }

  /** Stops the process and drops the Postgres schema (through the control plane's own `pg`). */
  async shutdown(): Promise<void> {
    await this.proc.stop();
    if (this.schema !== undefined) await dropSchema(this.schema);
  }
}

/** Drops `schema` with a child node running the control plane's `pg` (no service import). */
function dropSchema(schema: string): Promise<void> {
  const script = `
    const pg = require(require.resolve('pg', { paths: [process.cwd()] }));
    const c = new pg.Client({ connectionString: process.env.URL });
    c.connect()
      .then(() => c.query('DROP SCHEMA IF EXISTS "' + process.env.SCHEMA + '" CASCADE'))
      .then(() => c.end(), (e) => { console.error(e.message); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['-e', script],
      {
        cwd: CP_DIR,
        env: { ...process.env, URL: POSTGRES_URL, SCHEMA: schema },
        timeout: scaled(POSTGRES_DROP_DEADLINE_MS),
      },
      (err, _out, stderr) =>
        err
          ? reject(
              new ControlPlaneCallError(`dropping schema ${schema}: ${stderr}`, { cause: err }),
            )
          : resolve(),
    );
  });
}
