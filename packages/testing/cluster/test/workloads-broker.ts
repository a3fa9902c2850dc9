/**
 * A standalone durable felix-broker process for the workload tests, until a whole cluster is
 * what they need: the campaign's streams (two shards each) and cache, dev authentication, a
 * restart on the same ports and data dir, and `connect()` as a Cluster gives it.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type ConnectOptions, type FelixClient, connect } from '@felix/client';
import { type Child, freePort, spawnNode } from '@felix/testing-harness';
import { GROUP_ATTEMPTS_MAX } from '../src/limits.js';
import { CAMPAIGN_NAMES } from '../src/campaign/run.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..', '..');
const DIST_MAIN = join(ROOT, 'services', 'broker', 'dist', 'main.js');
const SRC_MAIN = join(ROOT, 'services', 'broker', 'src', 'main.ts');

function yaml(): string {
  const streams = CAMPAIGN_NAMES.streams.map(
    (s) => `  - { tenant: t1, name: ${s.name}, shards: ${s.shards}, durable: true }`,
  );
  return [
    'streams:',
    ...streams,
    'caches:',
    `  - { tenant: t1, name: ${CAMPAIGN_NAMES.cache} }`,
    '',
  ].join('\n');
}

export interface Standalone {
  connect(extra?: Partial<ConnectOptions>): Promise<FelixClient>;
  readonly child: Child;
  kill(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startStandalone(dir: string): Promise<Standalone> {
  const port = await freePort();
  const httpPort = await freePort();
  const config = join(dir, 'broker.yaml');
  await writeFile(config, yaml());
  const args = existsSync(DIST_MAIN) ? [DIST_MAIN] : ['--import', 'tsx', SRC_MAIN];
  let child: Child | undefined;
  let fingerprint = '';
  const start = async () => {
    child = spawnNode(args, {
      cwd: ROOT,
      env: {
        FELIX_AUTH_MODE: 'dev',
        FELIX_BROKER_CONFIG: config,
        FELIX_BROKER_PORT: String(port),
        FELIX_BROKER_HTTP_PORT: String(httpPort),
        FELIX_DURABLE_STORAGE_DIR: join(dir, 'data'),
        FELIX_GROUP_MAX_ATTEMPTS: String(GROUP_ATTEMPTS_MAX),
      },
    });
    await child.waitForOutput('"msg":"listening"', 'the broker to listen', 30_000);
    const line = child.jsonLines().find((l) => (l as { msg?: string }).msg === 'listening') as {
      cert_fingerprint: string;
    };
    fingerprint = line.cert_fingerprint;
  };
  await start();
  const live = () => {
    if (child === undefined) throw new Error('the standalone broker never started');
    return child;
  };
  return {
    connect: (extra = {}) =>
      connect({
        servers: [`tls://127.0.0.1:${port}`],
        tenant: 't1',
        tls: { fingerprint },
        ...extra,
      }),
    get child() {
      return live();
    },
    kill: () => live().kill(),
    start,
    stop: async () => {
      await live().stop();
    },
  };
}
