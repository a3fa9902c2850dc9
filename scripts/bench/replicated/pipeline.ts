/**
 * The replication path alone, in one process (docs/perf.md, "Replicated publish (session
 * 17)"): a leader SegmentLog (`onCommit`) shipped by a ShardShipper to two followers
 * (ReplicaServers over their own `onCommit` logs, called directly: no TLS, no forwarding, no
 * broker), the quorum mark kept as the broker's Replicator keeps it (the majority of the leader's
 * durable offset and each follower's confirmed offset, never past the leader's durable offset).
 * What it times is what the brokers add to a quorum publish: the leader's fsync, shipping,
 * the followers' append, fsync and `replica` save, and the answer; with less CPU in the way than
 * the three-broker bench, so a loaded machine moves it less.
 *
 *   node --import tsx scripts/bench/replicated/pipeline.ts [--n 1000] [--window 3000]
 *
 * Awaited: `--n` records one at a time (append, then wait until the mark covers it), p50/p99 in
 * µs; window: `--window` records 64 in flight, rec/s. 1 KiB records. Prints one line with the
 * load average.
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { ReplicaServer, ShardShipper, majorityHeld } from '@felix/replication';
import { type Io, type IoFile, SegmentLog, nodeIo } from '@felix/storage';
import { argValue, percentile } from '@felix/testing-bench-kit';
import { tempDir } from '@felix/testing-harness';
import type { ShardRef } from '@felix/wire';

const N = Number(argValue('--n', '1000'));
const WINDOW = Number(argValue('--window', '3000'));
const IN_FLIGHT = 64;
const DATA = new Uint8Array(1024).fill(0x61);
const SHARD = { tenant: 't', namespace: 'default', stream: 'bench', shard: 0 };
const REF: ShardRef = {
  tenantId: 't',
  namespace: 'default',
  stream: 'bench',
  shard: 0,
  generation: 1,
};

const scratch = await tempDir('felix-bench-pipeline-');
const at = (name: string) => join(scratch.path, name);
/** Reads and fdatasyncs of one log's segment files. */
interface IoCounts {
  reads: number;
  syncs: number;
}
function countingIo(counts: IoCounts): Io {
  const io: Io = Object.create(nodeIo) as Io;
  io.open = async (path, mode): Promise<IoFile> => {
    const file = await nodeIo.open(path, mode);
    if (!path.endsWith('.log')) return file;
    const counted = Object.create(file) as IoFile;
    counted.read = (buffer, offset, length, position) => {
      counts.reads++;
      return file.read(buffer, offset, length, position);
    };
    counted.datasync = () => {
      counts.syncs++;
      return file.datasync();
    };
    return counted;
  };
  return io;
}
/** The leader's: its reads are what shipping reads back of what it just wrote. */
const leaderIo: IoCounts = { reads: 0, syncs: 0 };
const followerIo: IoCounts = { reads: 0, syncs: 0 };
const log = await SegmentLog.open({
  root: at('leader'),
  shard: SHARD,
  fsync: 'onCommit',
  io: countingIo(leaderIo),
});
/** Follower confirmations that went past the leader's durable offset (shipped before its
 *  fsync ended), of all confirmations. */
let ahead = 0;
let confirmations = 0;
/** Requests sent while the leader had written records not yet durable, of all requests. */
let early = 0;
let requests = 0;
const servers = ['f1', 'f2'].map(
  (name) =>
    new ReplicaServer({
      logOptions: () => ({
        root: at(name),
        shard: SHARD,
        fsync: 'onCommit',
        io: countingIo(followerIo),
      }),
      assignment: () => ({ generation: REF.generation }),
    }),
);
let mark = 0;
const waiters: Array<{ offset: number; resolve: () => void }> = [];
const recompute = () => {
  const own = log.durableOffset;
  const held = [own, shipper.confirmed('f1'), shipper.confirmed('f2')];
  const m = Math.min(own, majorityHeld(held, 3));
  if (m <= mark) return;
  mark = m;
  shipper.wake();
  for (let i = waiters.length - 1; i >= 0; i--) {
    if (waiters[i]!.offset <= mark) {
      waiters[i]!.resolve();
      waiters.splice(i, 1);
    }
  }
};
const shipper: ShardShipper = new ShardShipper({
  log,
  shard: REF,
  followers: servers.map((s, i) => ({
    nodeId: `f${i + 1}`,
    link: {
      request: (frame: Uint8Array) => {
        requests++;
        if (log.writtenOffset > log.durableOffset) early++;
        return s.handle(frame);
      },
    },
    start: 0,
  })),
  commitOffset: () => mark,
  onConfirmed: (_node, offset) => {
    confirmations++;
    if (offset > log.durableOffset) ahead++;
    recompute();
  },
});
const unlisten = log.onDurable(recompute);
const committed = (offset: number) =>
  offset <= mark
    ? Promise.resolve()
    : new Promise<void>((resolve) => waiters.push({ offset, resolve }));

/** One record appended and committed; resolves with µs taken. */
async function one(): Promise<number> {
  const t = performance.now();
  const { next } = await log.append([DATA]);
  await committed(next);
  return (performance.now() - t) * 1000;
}

for (let i = 0; i < 100; i++) await one(); // warm-up
const readsBefore = leaderIo.reads;
const lat: number[] = [];
for (let i = 0; i < N; i++) lat.push(await one());
lat.sort((a, b) => a - b);
const started = performance.now();
const before = { requests, leaderSyncs: leaderIo.syncs, followerSyncs: followerIo.syncs };
let sent = 0;
await Promise.all(
  Array.from({ length: IN_FLIGHT }, async () => {
    while (sent < WINDOW) {
      sent++;
      await one();
    }
  }),
);
const rate = WINDOW / ((performance.now() - started) / 1000);
const reads = (leaderIo.reads - readsBefore) / (N + WINDOW);
// With 64 in flight: how many records one follower request, one leader fsync and one follower
// fsync carry (group commit on each side).
const per = (n: number) => (n === 0 ? 0 : WINDOW / n).toFixed(1);
const windowed =
  `records per follower request ${per((requests - before.requests) / 2)}, ` +
  `per leader fsync ${per(leaderIo.syncs - before.leaderSyncs)}, ` +
  `per follower fsync ${per((followerIo.syncs - before.followerSyncs) / 2)}`;
console.log(
  `pipeline: awaited p50 ${Math.round(percentile(lat, 50))} µs, p99 ${Math.round(percentile(lat, 99))} µs; ` +
    `64 in flight ${Math.round(rate)} rec/s (${windowed}); leader file reads/record ${reads.toFixed(2)}; ` +
    `confirmations ahead of the leader's fsync ${ahead}/${confirmations}; ` +
    `requests sent during a leader fsync ${early}/${requests}; load ${loadavg()[0]!.toFixed(2)}`,
);
unlisten();
await shipper.stop();
for (const s of servers) await s.close();
await log.close();
await scratch.cleanup();
