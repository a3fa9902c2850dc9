/**
 * The compose cluster under test: runs deploy/compose/compose.yaml as its own project, with its
 * client files in a temporary directory, and wraps the docker and REST calls the tests make.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../../..');
const COMPOSE_FILE = join(ROOT, 'deploy/compose/compose.yaml');
export const DOCKER = '/usr/bin/docker';
export const PROJECT = 'felix-deploy-test';
export const CP_URL = 'http://127.0.0.1:8443';
export const TENANT = 't1';
export const NAMESPACE = 'default';
/** Host ports of each broker, as compose.yaml maps them. */
export const BROKERS = [
  { name: 'broker-1', client: 5001, http: 8081 },
  { name: 'broker-2', client: 5002, http: 8082 },
  { name: 'broker-3', client: 5003, http: 8083 },
] as const;
export const POLL_MS = 100;
const HTTP_TIMEOUT_MS = 3_000;

export interface ClientFiles {
  ca: string;
  operator: string;
  admin: string;
  client: string;
}

/** `docker compose` where the plugin exists, else Debian's docker-compose. */
function composeCommand(): string[] {
  try {
    execFileSync(DOCKER, ['compose', 'version'], { stdio: 'ignore' });
    return [DOCKER, 'compose'];
  } catch {
    return ['docker-compose'];
  }
}

export class ComposeCluster {
  readonly outDir = mkdtempSync(join(tmpdir(), 'felix-deploy-'));
  private readonly cmd = composeCommand();

  compose(...args: string[]): string {
    const [bin, ...pre] = this.cmd;
    return execFileSync(bin as string, [...pre, '-p', PROJECT, '-f', COMPOSE_FILE, ...args], {
      encoding: 'utf8',
      env: { ...process.env, FELIX_OUT_DIR: this.outDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }

  up(): void {
    this.compose('up', '-d');
  }

  /** Stops and removes every container and volume of the project, whatever state it is in. */
  down(): void {
    try {
      this.compose('down', '-v', '--remove-orphans', '-t', '25');
    } finally {
      rmSync(this.outDir, { recursive: true, force: true });
    }
  }

  containerId(service: string): string {
    const id = this.compose('ps', '-q', service).trim();
    if (!id) throw new Error(`no container for ${service}`);
    return id;
  }

  files(): ClientFiles {
    const read = (name: string) => readFileSync(join(this.outDir, name), 'utf8').trim();
    return {
      ca: read('ca.pem'),
      operator: read('operator.token'),
      admin: read('admin.token'),
      client: read('client.token'),
    };
  }
}

export function docker(...args: string[]): string {
  return execFileSync(DOCKER, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Polls `check` until it answers a value other than undefined, or fails after `deadlineMs`. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined>,
  deadlineMs: number,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`, { cause: last });
}

export async function brokerReady(httpPort: number): Promise<true | undefined> {
  const res = await fetch(`http://127.0.0.1:${httpPort}/ready`, {
    signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
  });
  return res.status === 200 ? true : undefined;
}

export async function api(
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${CP_URL}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json: unknown = await res.json().catch(() => null);
  if (res.status >= 400)
    throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return { status: res.status, body: json };
}

export interface Assignment {
  stream: string;
  shard: number;
  leader: string;
}

/** The stream's shard leaders once every one of its `shards` is assigned. */
export async function leadersOf(operator: string, stream: string, shards: number) {
  return until(
    `the shards of ${stream} to be assigned`,
    async () => {
      const page = (await api(operator, 'GET', '/v1/shard-assignments')).body as {
        items: (Assignment & { tenant_id: string; namespace: string })[];
      };
      const mine = page.items.filter(
        (a) => a.tenant_id === TENANT && a.namespace === NAMESPACE && a.stream === stream,
      );
      return mine.length === shards ? mine : undefined;
    },
    30_000,
  );
}
