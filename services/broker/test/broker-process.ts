/**
 * Test support: runs a real felix-broker process (the source through tsx, or the built
 * dist/main.js when FELIX_TEST_BROKER_DIST=1), waits for its `listening` log line, and hands
 * back its addresses. Tests stop or SIGKILL it through the returned handle.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Child, freePort, spawnNode, tempDir } from '@felix/testing-harness';
import { afterAll, beforeAll } from 'vitest';

const PKG = resolve(import.meta.dirname, '..');
const REPO = resolve(PKG, '..', '..');
const DIST_MAIN = join(PKG, 'dist', 'main.js');
const SRC_MAIN = join(PKG, 'src', 'main.ts');

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
}

export async function startBroker(spec: BrokerSpec): Promise<BrokerProcess> {
  const port = spec.port ?? (await freePort());
  const httpPort = spec.httpPort ?? (await freePort());
  const configPath = join(spec.dir, 'broker.yaml');
  await writeFile(configPath, spec.yaml);
  const child = spawnNode(brokerArgs(), {
    cwd: REPO,
    env: {
      FELIX_BROKER_CONFIG: configPath,
      FELIX_BROKER_PORT: String(port),
      FELIX_BROKER_HTTP_PORT: String(httpPort),
      FELIX_BROKER_LOG_LEVEL: 'info',
      ...(spec.durable ? { FELIX_DURABLE_STORAGE_DIR: join(spec.dir, 'data') } : {}),
      ...spec.env,
    },
  });
  await child.waitForOutput('"msg":"listening"', 'the broker to listen', 30_000);
  const line = child
    .jsonLines()
    .find(
      (l): l is { msg: string; cert_fingerprint: string } =>
        (l as { msg?: string }).msg === 'listening',
    );
  if (!line) throw new Error('no listening line');
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
export function durableBrokerForSuite(yaml: string): { readonly broker: BrokerProcess } {
  let broker: BrokerProcess | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml, dir: dir.path, durable: true });
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });
  return {
    get broker() {
      if (broker === undefined) throw new Error('the suite broker has not started');
      return broker;
    },
  };
}
