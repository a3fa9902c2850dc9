/**
 * What the natural rows share: the shape of a row (a Felix loop and its peer's loop, each run once
 * per round), the brokers and peer connections a run opens at most once, and the two ways a row
 * times its loop (a burst settled at the end, or one awaited call at a time).
 */
import { type FelixClient, connect as felixConnect } from '@felix/client';
import { type BenchBroker, percentile, startBroker } from '@felix/testing-bench-kit';
import { Redis } from 'ioredis';
import { type NatsConnection, connect as natsConnect } from 'nats';
import { type TlsPeers, startTlsPeers } from './tls-peers.js';

/** One loop's result in one round. */
export interface Sample {
  /** Records or calls per second. */
  rate: number;
  /** For a burst read by a subscriber: how many records it had when all were in or it went quiet. */
  got?: number;
  sent?: number;
  /** For awaited loops: per-call latency percentiles, µs. */
  p50?: number;
  p99?: number;
}

/** A system's side of a row: what it is, and its loop (run once per round). */
export interface Side {
  system: string;
  /** The durability it answers under, when the row compares durable writes. */
  durability?: string;
  /** The process answering this side's calls, when the bench started it (its CPU per call). */
  serverPid?: number;
  /** One round of `n` records or calls. */
  run(n: number): Promise<Sample>;
}

/** A row of the table: Felix's loop (and any labelled variants) against one peer's loop. */
export interface Row {
  id: string;
  title: string;
  /** Records or calls per round. */
  n: number;
  /** The goal as a ratio of Felix's rate to the peer's (1.0: at or ahead). */
  goal: number;
  /** Felix's loop that the goal judges first; any further ones are labelled variants. */
  felix: Side[];
  /**
   * The judged peer: the same server and client loop with TLS on (tls-peers.ts), the channel
   * security every Felix connection has.
   */
  peer: Side;
  /** The same peer loop in plaintext (the shared servers): shown beside, not judged. */
  plainPeer?: Side;
  close(): Promise<void>;
}

/** A row's sides in the order they run and are reported: Felix's, the judged peer, the shown one. */
export function rowSides(row: Row): Side[] {
  return [...row.felix, row.peer, ...(row.plainPeer ? [row.plainPeer] : [])];
}

/** Everything a row may need, opened on first use and closed once at the end of the run. */
export interface Ctx {
  /** A broker with durable storage (periodic fsync by default) and every stream and cache. */
  durableBroker(): Promise<BenchBroker>;
  /** A broker without durable storage: in-memory streams, caches held in memory (as Redis here). */
  memoryBroker(): Promise<BenchBroker>;
  /** A new client over TLS; the caller closes it. */
  felix(broker: BenchBroker): Promise<FelixClient>;
  /** Plaintext connections to the shared servers (127.0.0.1:4222, :6379). */
  nats(): Promise<NatsConnection>;
  redis(): Promise<Redis>;
  /** This run's own redis-server and nats-server with TLS on, started on first use. */
  tlsPeers(): Promise<TlsPeers>;
  /** One shared TLS connection to each (as `nats()` and `redis()`). */
  natsTls(): Promise<NatsConnection>;
  redisTls(): Promise<Redis>;
  /** The pids of the brokers opened so far (for CPU per call). */
  brokerPids(): number[];
  close(): Promise<void>;
}

export const NATS_URL = '127.0.0.1:4222';
export const TENANT = 't1';
/** Every row's record or value: 1 KiB, as the loops. */
export const DATA = new Uint8Array(1024).fill(7);

/**
 * The catalog: the in-memory stream and the cache on both brokers; the durable streams only on
 * the durable one. `durable` takes the broker's default fsync mode (periodic, every
 * FELIX_DURABLE_FSYNC_INTERVAL_MS = 250 ms); `durable-always` fsyncs before every ack.
 */
function catalog(durable: boolean): string {
  return [
    'streams:',
    `  - { tenant: ${TENANT}, name: natural }`,
    ...(durable
      ? [
          `  - { tenant: ${TENANT}, name: durable, durable: true }`,
          `  - { tenant: ${TENANT}, name: durable-always, durable: true, fsync: onCommit }`,
        ]
      : []),
    'caches:',
    `  - { tenant: ${TENANT}, name: kv }`,
    '',
  ].join('\n');
}

export function makeCtx(): Ctx {
  const once = <T>(open: () => Promise<T>) => {
    let p: Promise<T> | null = null;
    return () => (p ??= open());
  };
  const opened: Array<() => Promise<void>> = [];
  const pids: number[] = [];
  const started = (b: BenchBroker) => {
    pids.push(b.pid);
    return track(b, (x) => x.stop());
  };
  const track = <T>(v: T, close: (v: T) => Promise<void>): T => {
    opened.push(() => close(v));
    return v;
  };
  const ctx: Ctx = {
    durableBroker: once(async () => started(await startBroker({ config: catalog(true) }))),
    memoryBroker: once(async () =>
      started(
        await startBroker({
          config: catalog(false),
          // The launcher always names a data dir; an undefined value leaves it out of the env.
          env: { FELIX_DURABLE_STORAGE_DIR: undefined as unknown as string },
        }),
      ),
    ),
    brokerPids: () => [...pids],
    felix: (b) =>
      felixConnect({
        servers: [b.url('tls')],
        tenant: TENANT,
        tls: { fingerprint: b.fingerprint },
      }),
    nats: once(async () => track(await natsConnect({ servers: NATS_URL }), (c) => c.close())),
    redis: once(async () => {
      const r = new Redis({ host: '127.0.0.1', port: 6379 });
      return track(r, async (x) => void x.disconnect());
    }),
    tlsPeers: once(async () => track(await startTlsPeers(), (p) => p.stop())),
    natsTls: once(async () => track(await (await ctx.tlsPeers()).nats(), (c) => c.close())),
    redisTls: once(async () => {
      const r = (await ctx.tlsPeers()).redis();
      return track(r, async (x) => void x.disconnect());
    }),
    close: async () => {
      // Clients before the brokers they talk to: close in reverse order of opening.
      for (const c of opened.reverse()) await c();
    },
  };
  return ctx;
}

/** Runs `op` `n` times, one awaited call at a time; rate and latency percentiles (µs). */
export async function awaitedLoop(n: number, op: (i: number) => Promise<unknown>): Promise<Sample> {
  const lat = new Float64Array(n);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await op(i);
    lat[i] = (performance.now() - t) * 1000;
  }
  const rate = n / ((performance.now() - t0) / 1000);
  lat.sort();
  return { rate, p50: percentile(lat, 50), p99: percentile(lat, 99) };
}

const QUIET_MS = 1_000;
const POLL_MS = 20;
export const pause = (ms = POLL_MS) => new Promise((r) => setTimeout(r, ms));

/** Counts a subscriber's arrivals; `settled` waits until `n` are in or none came for QUIET_MS. */
export function arrivals(n: number) {
  const c = {
    got: 0,
    last: Date.now(),
    hit() {
      c.got++;
      c.last = Date.now();
    },
    async settled(): Promise<number> {
      c.last = Date.now();
      while (c.got < n && Date.now() - c.last < QUIET_MS) await pause();
      return c.got;
    },
  };
  return c;
}
