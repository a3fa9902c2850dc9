/**
 * Test support for the suites of this package that need a client: the client every suite
 * connects with, the broker the projection suites (caches, counters, watches, groups) share,
 * waiting until the broker has started a watch, one broker restart between two clients, and
 * fresh consumer groups over the `jobs` stream. Starting brokers is `../src` (also used by the
 * broker's own tests); this file is what only the client's specification needs.
 */
import { type Socket, createServer, connect as tcpConnect } from 'node:net';
import { type FelixClient, connect } from '@felix/client';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll } from 'vitest';
import { type BrokerProcess, type BrokerSpec, brokerMetric, startBroker } from '../src/index.js';

export type Transport = 'tls' | 'quic';
export const TRANSPORTS = ['tls', 'quic'] as const;

export const text = (b: Uint8Array | undefined) =>
  b === undefined ? undefined : new TextDecoder().decode(b);

/** A client of `broker` that reconnects quickly and notices a SIGKILLed broker within 2 s. */
export function client(
  broker: BrokerProcess,
  transport: Transport = 'tls',
  extra: Record<string, unknown> = {},
): Promise<FelixClient> {
  return connect({
    servers: [broker.url(transport)],
    tenant: 't1',
    tls: { fingerprint: broker.fingerprint },
    reconnect: { baseMs: 20, maxDelayMs: 200 },
    // A SIGKILLed or stopped broker says nothing (over QUIC its host may refuse the client's
    // probe of its port): the silence bound or this short idle bound notices it.
    idleTimeoutMs: 2_000,
    ...extra,
  });
}

/** The catalog the projection suites share: durable and in-memory streams, three caches. */
export const PROJECTIONS_YAML = `
streams:
  - { tenant: t1, name: jobs, durable: true, fsync: onCommit }
  - { tenant: t1, name: memjobs }
caches:
  - { tenant: t1, name: users }
  - { tenant: t1, name: sharded, shards: 4 }
  - { tenant: t1, name: alerts }
  - { tenant: t1, name: history }
`;

/** Small bounds so that overflow and caps are reached by a test's few records. */
export const PROJECTIONS_ENV: NodeJS.ProcessEnv = {
  FELIX_BROKER_WATCH_QUEUE_CAPACITY: '8',
  FELIX_GROUP_MAX_IN_FLIGHT: '4',
  // No self-check inside a test's wait: a waiting poll answers early only when a
  // publish, a settle or a lapse wakes it, so the wake tests fail if a wake is lost.
  FELIX_GROUP_WAIT_RECHECK_MS: '600000',
};

/** A durable broker of the projections catalog and bounds, in a fresh temp dir. */
export async function startProjectionsBroker(): Promise<{
  broker: BrokerProcess;
  cleanup: () => Promise<void>;
}> {
  const dir = await tempDir();
  const broker = await startBroker({
    yaml: PROJECTIONS_YAML,
    dir: dir.path,
    durable: true,
    env: PROJECTIONS_ENV,
  });
  return { broker, cleanup: dir.cleanup };
}

export const WATCHES = /felix_broker_cache_watches (\d+)/;
const WATCHES_OPENED = /felix_broker_cache_watches_opened_total (\d+)/;

/**
 * Opens a watch with `open` (which must start reading it) and waits until the broker has started
 * it. The open gauge is no sign of that: a watch of an earlier test that is still counted (one
 * over QUIC is released only when its connection closes) made a bare `>= 1` pass before this
 * watch was registered, so its first writes went unseen and the test hung. The opened counter
 * only grows.
 */
export async function openWatch(broker: BrokerProcess, open: () => void): Promise<void> {
  const before = await brokerMetric(broker, WATCHES_OPENED);
  open();
  await waitFor(async () => (await brokerMetric(broker, WATCHES_OPENED)) > before, 'the watch');
}

/** Stops `broker` with SIGTERM (it drains) and starts it again on the same data dir and ports,
 *  for clients that ride through the restart. */
export async function restartedWithSigterm(
  broker: BrokerProcess,
  spec: BrokerSpec,
): Promise<BrokerProcess> {
  await broker.stop();
  return startBroker({ ...spec, port: broker.port, httpPort: broker.httpPort });
}

/** Runs `before` against a durable broker, restarts it on the same data and ports, runs `after`. */
export async function acrossRestart(
  extra: Partial<BrokerSpec>,
  before: (felix: FelixClient) => Promise<void>,
  after: (felix: FelixClient) => Promise<void>,
  how: 'stop' | 'kill' = 'stop',
): Promise<void> {
  const dir = await tempDir();
  try {
    const spec: BrokerSpec = { yaml: PROJECTIONS_YAML, dir: dir.path, durable: true, ...extra };
    const first = await startBroker(spec);
    const a = await client(first);
    await before(a);
    await a.close();
    if (how === 'kill') await first.kill();
    else await first.stop();
    const second = await startBroker({ ...spec, port: first.port, httpPort: first.httpPort });
    const b = await client(second);
    try {
      await after(b);
    } finally {
      await b.close();
      await second.stop();
    }
  } finally {
    await dir.cleanup();
  }
}

/** Groups on shard 0 of `jobs` that start after everything published so far, and new jobs. */
export function jobs(felix: () => FelixClient) {
  return {
    async freshGroup(name: string, opts = {}) {
      const g = felix().group('jobs', name, { shard: 0, ...opts });
      await g.seek('latest');
      return g;
    },
    async publishJobs(n: number, tag: string): Promise<number[]> {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await felix().publish('jobs', `${tag}-${i}`)).offset!);
      return out;
    },
  };
}

/** A TCP relay to `port` on loopback: `cut()` drops its connections on both sides at once,
 *  `block(true)` turns new ones away until `block(false)`. */
export async function tcpRelay(port: number) {
  const open = new Set<Socket>();
  let blocked = false;
  const server = createServer((down) => {
    // Blocked: a dialer is turned away at once, as by a broker that is not there.
    if (blocked) {
      down.on('error', () => undefined);
      down.destroy();
      return;
    }
    const up = tcpConnect(port, '127.0.0.1');
    for (const s of [down, up]) {
      open.add(s);
      s.on('error', () => undefined); // a cut socket errors on the other side's write
      s.on('close', () => open.delete(s));
    }
    down.pipe(up).pipe(down);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    port: (server.address() as { port: number }).port,
    cut: () => {
      for (const s of open) s.destroy();
    },
    /** While blocked, new connections are closed on arrival; open ones are left alone. */
    block: (on: boolean) => {
      blocked = on;
    },
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}

/**
 * One durable broker of `yaml` for a suite, and a client of it over TLS: started before the
 * suite's tests, stopped (its dir removed) after them.
 */
export function suiteBroker(yaml: string): {
  readonly broker: BrokerProcess;
  readonly felix: FelixClient;
} {
  const s: { broker?: BrokerProcess; felix?: FelixClient; cleanup?: () => Promise<void> } = {};
  beforeAll(async () => {
    const dir = await tempDir();
    s.cleanup = dir.cleanup;
    s.broker = await startBroker({ yaml, dir: dir.path, durable: true });
    s.felix = await client(s.broker);
  });
  afterAll(async () => {
    await s.felix?.close();
    await s.broker?.stop();
    await s.cleanup?.();
  });
  return {
    get broker() {
      return s.broker!;
    },
    get felix() {
      return s.felix!;
    },
  };
}
