/**
 * Replicated publishing side by side: three Felix brokers (replication factor 3, `quorum`
 * consistency, fsync before every ack) against a local three-server NATS JetStream cluster (an
 * R3 file-storage stream), in one run on this machine.
 *
 *   node --import tsx scripts/bench/replicated/main.ts [--only throughput,latency,latency-periodic,failover]
 *
 * | row        | Felix                                          | JetStream                     | goal   |
 * | throughput | `publish(s, data)`, 64 in flight               | `js.publish`, 64 in flight    | ≥ 2x   |
 * | latency    | `await publish(s, data)` one at a time, p50    | `await js.publish`, p50       | ≤ 1x   |
 * | failover   | SIGKILL of the shard leader → first ack after  | SIGKILL of the stream leader  | ≤ 3 s and ≤ JetStream |
 *
 * Both sides speak TLS, clients and servers alike (Felix: TLS clients and mutual TLS between
 * brokers; JetStream: a `tls {}` block on the client port and on the routes; FELIX_BENCH_NATS_TLS=0
 * runs JetStream on plain TCP, the comparison before session 21).
 * Both clients publish through a server that does not lead the stream (Felix forwards to the
 * owner; nats.js talks to any server of the cluster). JetStream acks once its stream's Raft
 * group holds the message in a majority's memory and syncs to disk every two minutes; Felix's
 * `quorum` + `onCommit` acks once a majority holds the record fsynced. The rows
 * `throughput-periodic` and `latency-periodic` run Felix with `quorum` + `periodic` against a
 * fresh JetStream cluster: JetStream's durability, since session 23 (a quorum of `periodic`
 * replicas counts what each has written, each syncing within its interval; before, followers
 * synced every batch and each ack waited for the leader's next timed fsync, about 250 ms a
 * publish awaited alone). `latency-periodic` runs by default; `throughput-periodic` only when
 * named in --only. The `onCommit` rows are the judged ones. The failover row keeps
 * one publisher awaiting each publish (a failed one is retried after FAILOVER_RETRY_MS), asks each
 * system which server leads the stream and SIGKILLs it FAILOVER_BEFORE_MS in, times from the
 * signal to the ack of the first publish sent after it, stops FAILOVER_AFTER_MS later, and checks
 * that another server leads the stream by then; it writes every publish's latency over time to
 * failover.svg. Felix's liveness
 * timings are the control plane's heartbeat every FELIX_BENCH_HEARTBEAT_MS (default 1000, the
 * Raft heartbeat of nats-server) and a lease of FELIX_BENCH_EXPIRY_MS (default 2000).
 *
 * FELIX_BENCH_FAILOVER_TRACE=1 prints each publish of the failover row from just before the kill
 * to the first ack after it (sent when, acked or refused, after how long), and the kill's
 * wall-clock time; it runs the control plane's log at info (each request, the sweep's marking,
 * placement) and keeps the run's scratch dir, printing where the Felix failover cluster's logs
 * are, to line the publishes up with them (docs/perf.md, "Failover time (session 22)").
 * FELIX_BENCH_TRANSPORT=quic runs Felix's clients and brokers over QUIC (default TLS).
 * FELIX_BENCH_FAILOVER_SIGNAL=SIGSTOP stops the leader instead of killing it (a hung process or
 * a dead host: nothing closes its connections, and its port stays bound), on both sides.
 * FELIX_BENCH_ROUTING=0 keeps the client on its non-leader seed (publishes forwarded; default: the
 * client routes to the leader). FELIX_BENCH_ROUNDS (default 3), FELIX_BENCH_N (throughput records per round, default 20,000),
 * FELIX_BENCH_LATENCY_N (default 2,000), FELIX_BENCH_WARMUP_N (untimed publishes per side on each
 * pair of clusters before its rows, default 20,000), FELIX_BENCH_LATENCY_WARMUP_N (untimed awaited
 * publishes per side before a latency row, default 6,000), FELIX_BENCH_SIZE (record bytes, default 1,024). Prints a
 * Markdown table and writes results.json beside this file.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { FelixClient } from '@felix/client';
import { loadOrCreateDevCertificate } from '@felix/transport';
import {
  argValue,
  markdownTable,
  median,
  pairedRatios,
  percentile,
  windowPercentiles,
} from '@felix/testing-bench-kit';
import { type Cluster, startCluster } from '@felix/testing-cluster';
import { tempDir, waitFor } from '@felix/testing-harness';
import type { JetStreamClient, NatsConnection } from 'nats';
import { type TimelinePoint, timelineSvg } from './chart.js';
import {
  NATS_CLUSTER_FORM_DEADLINE_MS,
  type NatsCluster,
  type NatsTls,
  startNatsCluster,
} from './nats-cluster.js';

const env = process.env;
const ROUNDS = Math.max(1, Number(env.FELIX_BENCH_ROUNDS ?? 3));
const N = Number(env.FELIX_BENCH_N ?? 20_000);
const LATENCY_N = Number(env.FELIX_BENCH_LATENCY_N ?? 2_000);
/**
 * Publishes (64 in flight) each side takes, untimed, on the clusters a row then measures: a
 * broker's JIT compiles its hot path only after some thousands of records, and a cluster in
 * service is past that. Before session 23 the throughput row warmed clusters it then threw
 * away and the latency row warmed none (its first round ran cold: p50 about 1.5 ms against
 * 1.0 ms warm, scripts/bench/replicated/latency-probe.ts).
 */
const WARMUP_N = Number(env.FELIX_BENCH_WARMUP_N ?? 20_000);
/**
 * Awaited publishes (one at a time) each side takes, untimed, before a latency row, after the
 * windowed ones: the awaited path runs code the 64-in-flight warm-up leaves cold (one-record
 * batches and frames), and Felix's p50 kept falling for the first 4,000 of them under
 * `periodic` (session 27: p50 of each successive thousand 1,045, 658, 531, 423, then 359–391 µs)
 * and for about 3,000 to 6,000 under `onCommit` (1,852, 1,217, 874, then 758–945); JetStream's
 * from 598 to about 500, its Node client warming too. Before session 27 the latency rows timed
 * that warm-up.
 */
const LATENCY_WARMUP_N = Number(env.FELIX_BENCH_LATENCY_WARMUP_N ?? 6_000);
const SIZE = Number(env.FELIX_BENCH_SIZE ?? 1024);
const HEARTBEAT_MS = Number(env.FELIX_BENCH_HEARTBEAT_MS ?? 1000);
const EXPIRY_MS = Number(env.FELIX_BENCH_EXPIRY_MS ?? 2000);
/** Publishes outstanding at once in the throughput row. */
const IN_FLIGHT = 64;
/** The failover row's fault: SIGKILL (default) or SIGSTOP of the leader. */
const FAILOVER_STOPS = env.FELIX_BENCH_FAILOVER_SIGNAL === 'SIGSTOP';
/** The failover row: publishing before the kill, after the first ack that follows it. */
const FAILOVER_BEFORE_MS = 3_000;
const FAILOVER_AFTER_MS = 2_000;
/** The longest a failover may take before the row gives up on that system. */
const FAILOVER_DEADLINE_MS = 60_000;
/** The pause before a failed publish is tried again. */
const FAILOVER_RETRY_MS = 20;
/**
 * How long one publish of the failover row waits for its ack, on both sides: a publish sent
 * into the election waits this long at most before it is sent again, so the row measures when
 * the system acks again to within this, not the client's default timeout (JetStream's 5 s).
 */
const FAILOVER_PUBLISH_TIMEOUT_MS = 1_000;
const STREAM = 'bench';
const TRACE = env.FELIX_BENCH_FAILOVER_TRACE === '1';
/** Felix's transport, clients and brokers alike (JetStream speaks TLS either way). */
const TRANSPORT = env.FELIX_BENCH_TRANSPORT === 'quic' ? 'quic' : 'tls';
const DATA = new Uint8Array(SIZE).fill(0x61);

interface Side {
  system: string;
  publish(): Promise<unknown>;
  /** The name of the server or broker leading the stream now, as the system itself says
   *  (Felix's control plane; JetStream's `streams.info(...).cluster.leader`). */
  leader(): Promise<string>;
  /** SIGKILLs `name`: the signal is sent synchronously within this call (before its first
   *  await), so a time taken just before the call is the kill's. Resolves once it exited. */
  kill(name: string): Promise<void>;
  close(): Promise<void>;
  /** The server processes (Felix's brokers, the nats-servers), for CPU per record. */
  pids(): (number | undefined)[];
}

type FsyncMode = 'onCommit' | 'periodic';

async function felixSide(
  dir: string,
  publishTimeoutMs?: number,
  fsync: FsyncMode = 'onCommit',
  trace = false,
): Promise<Side & { cluster: Cluster }> {
  const cluster = await startCluster({
    brokers: 3,
    replication: true,
    transport: TRANSPORT,
    dir,
    streams: [{ name: STREAM, shards: 1, replicationFactor: 3, consistency: 'quorum' }],
    // The harness's fault seams (files re-read every 50 ms, a wrapper on every fsync) are off,
    // as in production: the bench kills brokers but injects no partition or storage fault.
    env: {
      FELIX_DURABLE_FSYNC_MODE: fsync,
      FELIX_TEST_PARTITION_FILE: undefined,
      FELIX_TEST_STORAGE_FAULT_FILE: undefined,
    },
    controlPlaneEnv: {
      FELIX_CONTROLPLANE_HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_MS),
      FELIX_CONTROLPLANE_EXPIRY_TIMEOUT_MS: String(EXPIRY_MS),
      FELIX_CONTROLPLANE_REGRANT_MARGIN_MS: String(Math.ceil(EXPIRY_MS / 4)),
      ...(trace ? { FELIX_CONTROLPLANE_LOG_LEVEL: 'info' } : {}),
    },
  });
  await cluster.waitServed();
  const leader = await cluster.leaderOf(STREAM);
  const seed = cluster.nodes.find((n) => n.id !== leader?.id)!;
  // FELIX_BENCH_ROUTING=0: the client stays on the seed, so each publish is forwarded.
  const routing = env.FELIX_BENCH_ROUTING === '0' ? { routing: false } : {};
  const timeout = publishTimeoutMs === undefined ? {} : { requestTimeoutMs: publishTimeoutMs };
  const felix: FelixClient = await cluster.connect({
    servers: [seed.url(TRANSPORT)],
    ...routing,
    ...timeout,
  });
  return {
    cluster,
    system: `Felix 3 brokers, RF 3 quorum, ${fsync}${TRANSPORT === 'quic' ? ', QUIC' : ''}`,
    publish: () => felix.publish(STREAM, DATA),
    leader: async () => (await cluster.leaderOf(STREAM))?.id ?? '',
    kill: (name) => (FAILOVER_STOPS ? cluster.pause(name) : cluster.kill(name)),
    pids: () => cluster.nodes.map((n) => n.pid),
    async close() {
      await felix.close();
      await cluster.shutdown({ keep: trace });
    },
  };
}

/**
 * The certificate JetStream's clients and routes speak TLS with (the broker's development one,
 * naming 127.0.0.1), as Felix's clients and brokers speak TLS; FELIX_BENCH_NATS_TLS=0 runs
 * JetStream on plain TCP, as this bench did before session 21.
 */
async function natsTls(dir: string): Promise<NatsTls | undefined> {
  if (env.FELIX_BENCH_NATS_TLS === '0') return undefined;
  const { certPem, keyPem } = await loadOrCreateDevCertificate(join(dir, 'nats-tls'));
  return { certPem, keyPem };
}

async function jetStreamSide(
  dir: string,
  publishTimeoutMs?: number,
): Promise<Side & { nats: NatsCluster }> {
  const nats = await startNatsCluster(dir, await natsTls(dir));
  try {
    return await jetStreamStream(nats, publishTimeoutMs);
  } catch (err) {
    // The servers this side started must not outlive a failed setup (they did, twice).
    await nats.stop();
    throw err;
  }
}

async function jetStreamStream(
  nats: NatsCluster,
  publishTimeoutMs: number | undefined,
): Promise<Side & { nats: NatsCluster }> {
  const admin = await nats.connect();
  const jsm = await admin.jetstreamManager();
  // A meta leader can answer before the R3 placement sees all three peers: asked again.
  await waitFor(
    () =>
      jsm.streams
        .add({ name: STREAM, subjects: [`${STREAM}.>`], num_replicas: 3 })
        .then(() => true)
        .catch((err: unknown) => {
          console.error(`adding the JetStream stream: ${String(err)}; trying again`);
          return false;
        }),
    'the R3 stream to be added',
    NATS_CLUSTER_FORM_DEADLINE_MS,
  );
  const leaderName = async () => (await jsm.streams.info(STREAM)).cluster?.leader ?? '';
  // The stream's own Raft group elects its leader after the add answers.
  const leader = await waitFor(
    leaderName,
    'the stream to elect its leader',
    NATS_CLUSTER_FORM_DEADLINE_MS,
  );
  // Start on a server that does not lead the stream, as Felix's client starts on a non-owner.
  const ordered = [...nats.servers].sort(
    (a, b) => Number(a.name === leader) - Number(b.name === leader),
  );
  const { connect } = await import('nats');
  const nc: NatsConnection = await connect({
    servers: ordered.map((s) => s.url),
    noRandomize: true,
    ...(nats.ca === undefined ? {} : { tls: { ca: nats.ca } }),
  });
  const js: JetStreamClient = nc.jetstream();
  // Answers 503 (no responders) until the stream's group is reachable from this server.
  await waitFor(
    () => js.publish(`${STREAM}.warm`, DATA).then(() => true),
    'a first publish to the stream',
    NATS_CLUSTER_FORM_DEADLINE_MS,
  );
  return {
    nats,
    system: `JetStream 3 servers, R3 file storage${nats.tls ? ', TLS' : ', plain TCP'}`,
    publish: () =>
      js.publish(
        `${STREAM}.x`,
        DATA,
        publishTimeoutMs === undefined ? undefined : { timeout: publishTimeoutMs },
      ),
    // Asked over the admin connection kept open (it reconnects elsewhere once its server dies);
    // during an election the stream has no leader and the answer is ''.
    leader: () => leaderName().catch(() => ''),
    kill: (name) => (FAILOVER_STOPS ? nats.pause(name) : nats.kill(name)),
    pids: () => nats.servers.map((x) => x.proc?.pid),
    async close() {
      await admin.close();
      await nc.close();
      await nats.stop();
    },
  };
}

/** `n` publishes with `IN_FLIGHT` outstanding; answers records per second. */
async function windowed(side: Side, n: number): Promise<number> {
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      await side.publish();
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return n / ((performance.now() - started) / 1000);
}

/** CPU time (user + system) of a process so far in µs, from /proc (10 ms ticks); 0 if gone. */
function processCpuUs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    // The process is gone (or this is not Linux): it adds nothing.
    return 0;
  }
}

interface WindowedRun {
  rate: number;
  /** CPU µs per record of the side's server processes together, and of this (client) process. */
  serverCpuUs: number;
  clientCpuUs: number;
}

/** `windowed`, with the CPU each side's servers and its client spent per record. */
async function windowedWithCpu(side: Side, n: number): Promise<WindowedRun> {
  const pids = side.pids();
  const servers = () => pids.reduce<number>((sum, pid) => sum + processCpuUs(pid), 0);
  const server0 = servers();
  const client0 = process.cpuUsage();
  const rate = await windowed(side, n);
  const client = process.cpuUsage(client0);
  return {
    rate,
    serverCpuUs: (servers() - server0) / n,
    clientCpuUs: (client.user + client.system) / n,
  };
}

/** `n` awaited publishes; answers the p50 and p99 in µs, and the p50 of each successive
 *  thousand in order (flat once the side is warm). */
async function awaited(
  side: Side,
  n: number,
): Promise<{ p50: number; p99: number; p50ByThousand: number[] }> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await side.publish();
    out.push((performance.now() - t) * 1000);
  }
  const p50ByThousand = windowPercentiles(out, 1000, 50).map(Math.round);
  out.sort((a, b) => a - b);
  return { p50: percentile(out, 50), p99: percentile(out, 99), p50ByThousand };
}

interface FailoverResult {
  system: string;
  /** The stream's leader when it was killed, and the one that took over (each as the system
   *  named it: asked just before the kill, and again after the first ack that followed). */
  killed: string;
  newLeader: string;
  /** From the SIGKILL to the ack of the first publish sent after it, ms. */
  failoverMs: number;
  failedPublishes: number;
  points: TimelinePoint[];
}

/**
 * Publishes one at a time, kills the stream's leader, and times the gap from the signal to the
 * ack of the first publish *sent after it*. The leader is asked first and the clock starts at
 * the signal, not when the kill was decided: a publish sent while the leader was still being
 * looked up would be acked by the live leader and time nothing (the 3 ms JetStream "failover"
 * of earlier runs). Both sides are measured the same way, and the row checks that leadership
 * moved.
 */
async function failover(side: Side): Promise<FailoverResult> {
  const points: TimelinePoint[] = [];
  /** Traced: why each refused publish (by its index in `points`) failed. */
  const why = new Map<number, string>();
  let killAt = Number.POSITIVE_INFINITY;
  let firstAckAfter: number | undefined;
  let failed = 0;
  let killed = '';
  const origin = performance.now();
  let stop = false;
  const publishing = (async () => {
    while (!stop) {
      const now = performance.now();
      if (firstAckAfter !== undefined && now > firstAckAfter + FAILOVER_AFTER_MS) break;
      if (now - origin > FAILOVER_BEFORE_MS + FAILOVER_DEADLINE_MS) break;
      try {
        await side.publish();
        const done = performance.now();
        points.push({ atMs: now - origin, latencyMs: done - now, ok: true });
        if (now >= killAt && firstAckAfter === undefined) firstAckAfter = done;
      } catch (err) {
        // The failover's refusals are what this row counts; the loop tries again.
        failed++;
        const latencyMs = performance.now() - now;
        points.push({ atMs: now - origin, latencyMs, ok: false });
        if (TRACE) why.set(points.length - 1, (err as Error).message);
        await new Promise((r) => setTimeout(r, FAILOVER_RETRY_MS));
      }
    }
  })();
  try {
    await new Promise((r) => setTimeout(r, FAILOVER_BEFORE_MS));
    killed = await side.leader();
    if (killed === '') throw new Error(`${side.system}: no stream leader to kill`);
    killAt = performance.now();
    await side.kill(killed);
    await publishing;
  } finally {
    stop = true;
    await publishing;
  }
  const newLeader = await waitFor(
    async () => {
      const now = await side.leader();
      return now !== '' && now !== killed ? now : undefined;
    },
    `${side.system}: a stream leader other than ${killed}`,
    FAILOVER_DEADLINE_MS,
  );
  if (TRACE) {
    console.log(
      `  ${side.system}: ${FAILOVER_STOPS ? 'SIGSTOP' : 'SIGKILL'} of ${killed} at ${new Date(performance.timeOrigin + killAt).toISOString()}`,
    );
    // Every publish from just before the kill to the first ack after it: when it was sent (ms
    // from the kill), how long it took and whether it was acked.
    const t = killAt - origin;
    for (const [i, p] of points.entries()) {
      if (p.atMs < t - 50 || p.atMs > (firstAckAfter ?? 0) - origin) continue;
      const reason = why.has(i) ? `: ${why.get(i)}` : '';
      console.log(
        `  ${side.system}: sent at ${(p.atMs - t).toFixed(0)} ms, ${p.ok ? 'acked' : 'refused'} after ${p.latencyMs.toFixed(0)} ms${reason}`,
      );
    }
  }
  return {
    system: side.system,
    killed,
    newLeader,
    failoverMs: firstAckAfter === undefined ? Number.NaN : firstAckAfter - killAt,
    failedPublishes: failed,
    points: points.map((p) => ({ ...p, atMs: p.atMs - (killAt - origin) })),
  };
}

const ROWS = ['throughput', 'latency', 'failover', 'throughput-periodic', 'latency-periodic'];
const DEFAULT_ROWS = ['throughput', 'latency', 'latency-periodic', 'failover'];
const only = argValue('--only', env.FELIX_BENCH_ONLY ?? DEFAULT_ROWS.join(','))
  .split(',')
  .filter((s) => s !== '');
for (const id of only)
  if (!ROWS.includes(id)) {
    console.error(`unknown row ${id}; rows: ${ROWS.join(', ')}`);
    process.exit(2);
  }

const scratch = await tempDir('felix-bench-replicated-');
const root = scratch.path;
const load = [loadavg()[0]!];
const results: Record<string, unknown> = { started: new Date().toISOString(), size: SIZE };
const table: string[][] = [];

let runs = 0;
async function both<T>(
  run: (side: Side) => Promise<T>,
  fsync: FsyncMode = 'onCommit',
  awaitedWarmup = 0,
): Promise<[T[], T[]]> {
  // Each pair of clusters in fresh directories: a run never starts over another's log.
  runs++;
  const felix = await felixSide(join(root, `felix-${runs}`), undefined, fsync);
  const js = await jetStreamSide(join(root, `nats-${runs}`)).catch(async (err: unknown) => {
    await felix.close();
    throw err;
  });
  const out: [T[], T[]] = [[], []];
  try {
    // Untimed, on these very clusters: brokers and servers as warm as a running cluster's.
    for (const side of [felix, js]) await windowed(side, WARMUP_N);
    for (const side of [felix, js]) await awaited(side, awaitedWarmup);
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate who goes first.
      const order = r % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) out[i as 0 | 1].push(await run(i === 0 ? felix : js));
    }
  } finally {
    await felix.close();
    await js.close();
  }
  return out;
}

if (only.includes('throughput')) {
  const [fr, jr] = await both((s) => windowedWithCpu(s, N));
  const f = fr.map((x) => x.rate);
  const j = jr.map((x) => x.rate);
  const ratio = pairedRatios(f, j).median;
  results.throughput = { felix: f, jetstream: j, ratio, felixCpu: fr, jetstreamCpu: jr };
  table.push([
    'durable publish, 64 in flight (rec/s)',
    fmt(median(f)),
    fmt(median(j)),
    `${ratio.toFixed(2)}x`,
    '≥ 2x',
  ]);
  table.push([
    'CPU µs per record there: servers together / client',
    `${fmt(median(fr.map((x) => x.serverCpuUs)))} / ${fmt(median(fr.map((x) => x.clientCpuUs)))}`,
    `${fmt(median(jr.map((x) => x.serverCpuUs)))} / ${fmt(median(jr.map((x) => x.clientCpuUs)))}`,
    '',
    '',
  ]);
}
if (only.includes('latency')) {
  const [f, j] = await both((s) => awaited(s, LATENCY_N), 'onCommit', LATENCY_WARMUP_N);
  const fp50 = median(f.map((x) => x.p50));
  const jp50 = median(j.map((x) => x.p50));
  results.latency = { felix: f, jetstream: j };
  table.push([
    'acked publish p50 (µs)',
    fmt(fp50),
    fmt(jp50),
    `${(fp50 / jp50).toFixed(2)}x`,
    '≤ 1x',
  ]);
  table.push([
    'acked publish p99 (µs)',
    fmt(median(f.map((x) => x.p99))),
    fmt(median(j.map((x) => x.p99))),
    '',
    '',
  ]);
}
if (only.includes('throughput-periodic')) {
  const [f, j] = await both((s) => windowed(s, N), 'periodic');
  const ratio = pairedRatios(f, j).median;
  results.throughputPeriodic = { felix: f, jetstream: j, ratio };
  table.push([
    'Felix periodic (a majority written, as JetStream): 64 in flight (rec/s)',
    fmt(median(f)),
    fmt(median(j)),
    `${ratio.toFixed(2)}x`,
    '',
  ]);
}
if (only.includes('latency-periodic')) {
  const [f, j] = await both((s) => awaited(s, LATENCY_N), 'periodic', LATENCY_WARMUP_N);
  const fp50 = median(f.map((x) => x.p50));
  const jp50 = median(j.map((x) => x.p50));
  results.latencyPeriodic = { felix: f, jetstream: j };
  table.push([
    'Felix periodic (a majority written, as JetStream): acked publish p50 (µs)',
    fmt(fp50),
    fmt(jp50),
    `${(fp50 / jp50).toFixed(2)}x`,
    '',
  ]);
}
if (only.includes('failover')) {
  const felix = await felixSide(
    join(root, 'felix-failover'),
    FAILOVER_PUBLISH_TIMEOUT_MS,
    'onCommit',
    TRACE,
  );
  const f = await failover(felix).finally(() => felix.close());
  const js = await jetStreamSide(join(root, 'nats-failover'), FAILOVER_PUBLISH_TIMEOUT_MS);
  const j = await failover(js).finally(() => js.close());
  results.failover = { felix: { ...f, points: undefined }, jetstream: { ...j, points: undefined } };
  table.push([
    `failover: ${FAILOVER_STOPS ? 'SIGSTOP' : 'SIGKILL'} → first ack (ms)`,
    fmt(f.failoverMs),
    fmt(j.failoverMs),
    `${(f.failoverMs / j.failoverMs).toFixed(2)}x`,
    '≤ 3,000 ms and ≤ 1x',
  ]);
  table.push([
    'publishes refused during it',
    String(f.failedPublishes),
    String(j.failedPublishes),
    '',
    '',
  ]);
  table.push([
    'leader killed → new leader',
    `${f.killed} → ${f.newLeader}`,
    `${j.killed} → ${j.newLeader}`,
    '',
    '',
  ]);
  const svg = timelineSvg(
    [
      { label: f.system, points: f.points },
      { label: j.system, points: j.points },
    ],
    'Acked publish latency across a leader SIGKILL (t = 0)',
  );
  writeFileSync(new URL('./failover.svg', import.meta.url), svg);
}
// Traced: the failover cluster's logs stay for reading against the printed publishes.
if (TRACE && only.includes('failover'))
  console.log(`  the Felix failover cluster's logs stay under ${join(root, 'felix-failover')}`);
else await scratch.cleanup();
load.push(loadavg()[0]!);
results.loadavg = load;
writeFileSync(new URL('./results.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
console.log(
  `\nload average ${load.map((l) => l.toFixed(2)).join(' → ')}, ${ROUNDS} rounds, ${SIZE} B records\n`,
);
console.log(
  markdownTable(
    [
      { title: 'row' },
      { title: 'Felix', align: 'right' },
      { title: 'JetStream', align: 'right' },
      { title: 'ratio', align: 'right' },
      { title: 'goal' },
    ],
    table,
  ),
);

function fmt(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a';
}
