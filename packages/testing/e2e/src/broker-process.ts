/**
 * Runs a real felix-broker process by path (the source through tsx, or the built dist/main.js
 * when FELIX_TEST_BROKER_DIST=1), waits for its `listening` log line, and hands back its
 * addresses. Nothing here imports the broker: tests meet it only over the wire and its HTTP port.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Child, ChildExitedError, freePort, spawnNode, tempDir } from '@felix/testing-harness';
import { afterAll, beforeAll } from 'vitest';
import { BrokerStartError } from './errors.js';
import { BROKER_START_DEADLINE_MS } from './limits.js';
import type { TestTenants } from './tokens.js';

/** The repository root, the same from src/ (tests) and from dist/ (a build). */
export const REPO_ROOT = resolve(import.meta.dirname, '..', '..', '..', '..');
const BROKER_DIR = join(REPO_ROOT, 'services', 'broker');
const DIST_MAIN = join(BROKER_DIR, 'dist', 'main.js');
const SRC_MAIN = join(BROKER_DIR, 'src', 'main.ts');

/** Node arguments that run felix-broker, followed by `extra`. */
export function brokerArgs(extra: string[] = []): string[] {
  if (process.env.FELIX_TEST_BROKER_DIST === '1' && existsSync(DIST_MAIN))
    return [DIST_MAIN, ...extra];
  return ['--import', 'tsx', SRC_MAIN, ...extra];
}

export interface BrokerProcess {
  child: Child;
  port: number;
  httpPort: number;
  fingerprint: string;
  url(transport: 'quic' | 'tls'): string;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
}

export interface BrokerSpec {
  /** The YAML config file body (streams etc.). */
  yaml: string;
  /** Directory for the config file (and the data dir when `durable`). */
  dir: string;
  durable?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Reuse these ports (a restart). */
  port?: number;
  httpPort?: number;
  /**
   * Real tenant keys: the broker verifies tokens minted by `auth.mint` (auth.mode tokens).
   * Without it (and without FELIX_AUTH_MODE in `env`) the broker runs in explicit dev mode,
   * accepting every token as given, as the suites written before issue 21 expect.
   */
  auth?: TestTenants;
}

export async function startBroker(spec: BrokerSpec): Promise<BrokerProcess> {
  const port = spec.port ?? (await freePort());
  const httpPort = spec.httpPort ?? (await freePort());
  const configPath = join(spec.dir, 'broker.yaml');
  await writeFile(configPath, spec.yaml);
  const authEnv = spec.auth ? await spec.auth.brokerEnv(spec.dir) : { FELIX_AUTH_MODE: 'dev' };
  const child = spawnNode(brokerArgs(), {
    cwd: REPO_ROOT,
    env: {
      ...authEnv,
      FELIX_BROKER_CONFIG: configPath,
      FELIX_BROKER_PORT: String(port),
      FELIX_BROKER_HTTP_PORT: String(httpPort),
      FELIX_BROKER_LOG_LEVEL: 'info',
      ...(spec.durable ? { FELIX_DURABLE_STORAGE_DIR: join(spec.dir, 'data') } : {}),
      ...spec.env,
    },
  });
  await child
    .waitForOutput('"msg":"listening"', 'the broker to listen', BROKER_START_DEADLINE_MS)
    .catch((err: unknown) => {
      // A broker that refused to start (it exited) is named as such, at once.
      throw err instanceof ChildExitedError
        ? new BrokerStartError(err.message, { cause: err })
        : err;
    });
  const line = child
    .jsonLines()
    .find(
      (l): l is { msg: string; cert_fingerprint: string } =>
        (l as { msg?: string }).msg === 'listening',
    );
  if (!line) throw new BrokerStartError('the broker logged no parseable listening line');
  return {
    child,
    port,
    httpPort,
    fingerprint: line.cert_fingerprint,
    url: (t) => `${t}://127.0.0.1:${port}`,
    stop: async () => {
      await child.stop();
    },
    kill: () => child.kill(),
  };
}

/**
 * One durable broker of `yaml` in a temp dir for the enclosing describe block: started before
 * its tests, stopped and its directory removed after them. Tests read `suite.broker`.
 */
export function durableBrokerForSuite(
  yaml: string,
  env?: NodeJS.ProcessEnv,
): { readonly broker: BrokerProcess } {
  let broker: BrokerProcess | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml, dir: dir.path, durable: true, ...(env ? { env } : {}) });
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });
  return {
    get broker() {
      if (broker === undefined) throw new BrokerStartError('the suite broker has not started');
      return broker;
    },
  };
}

/** The first capture group of `pattern` in the broker's /metrics page as a number, else 0. */
export async function brokerMetric(broker: BrokerProcess, pattern: RegExp): Promise<number> {
  const body = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
  const m = pattern.exec(body);
  return m ? Number(m[1]) : 0;
}
