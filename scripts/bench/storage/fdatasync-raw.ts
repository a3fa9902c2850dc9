// Raw group-commit costs of this disk, without the segment log: one write of a group (64
// records of 128 B by default, the durable pub/sub bench's shape) then fdatasync, repeated.
// Cases: appending (every write grows the file) vs overwriting a region already written with
// zeros and synced (preallocated: the size does not change, so fdatasync has no size to commit);
// two thread-pool hops (write, then fdatasync) vs one (O_DSYNC write); and the same through
// synchronous calls, to separate the syscall cost from the thread-pool round trip.
// Device counters per group (write requests, KiB, cache flushes) come from /sys/dev/block
// and count every writer on the disk, so they are exact only on an otherwise idle disk.
// Run: npx pnpm@10.34.9 exec tsx scripts/bench/storage/fdatasync-raw.ts [--dir <parent>]
//   [--group-bytes 8192] [--ops 2000] [--rounds 3]
import {
  closeSync,
  constants,
  fdatasyncSync,
  openSync,
  readFileSync,
  statSync,
  writeSync,
} from 'node:fs';
import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const arg = (name: string, dflt: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1]! : dflt;
};
const parent = arg('--dir', tmpdir());
const groupBytes = Number(arg('--group-bytes', String(64 * 128)));
const ops = Number(arg('--ops', '2000'));
const rounds = Number(arg('--rounds', '3'));
const PREALLOC_CHUNK = 1024 * 1024;

const buf = new Uint8Array(groupBytes).fill(97);

/**
 * Device counters of the disk under `parent` (Linux /sys/dev/block): write requests, sectors
 * written and cache flushes. Device-wide, so other writers on the machine add to them.
 */
interface DeviceStats {
  writes: number;
  sectors: number;
  flushes: number;
}
const devStatPath = (() => {
  const dev = statSync(parent).dev;
  return `/sys/dev/block/${Math.floor(dev / 256) & 0xfff}:${(dev & 0xff) | ((dev >> 12) & 0xfff00)}/stat`;
})();
function deviceStats(): DeviceStats | undefined {
  try {
    const f = readFileSync(devStatPath, 'utf8').trim().split(/\s+/).map(Number);
    return { writes: f[4]!, sectors: f[6]!, flushes: f[15] ?? Number.NaN };
  } catch {
    return undefined;
  }
}
interface IoPerOp {
  writes: number;
  kib: number;
  flushes: number;
}
function ioSince(before: DeviceStats | undefined, n: number): IoPerOp | undefined {
  const after = deviceStats();
  if (before === undefined || after === undefined) return undefined;
  return {
    writes: (after.writes - before.writes) / n,
    kib: ((after.sectors - before.sectors) * 512) / 1024 / n,
    flushes: (after.flushes - before.flushes) / n,
  };
}

async function prefill(h: FileHandle, bytes: number): Promise<void> {
  const zeros = new Uint8Array(PREALLOC_CHUNK);
  for (let at = 0; at < bytes; at += PREALLOC_CHUNK) await h.write(zeros, 0, PREALLOC_CHUNK, at);
  await h.datasync();
}

interface Case {
  name: string;
  run(dir: string): Promise<{ lat: number[]; io: IoPerOp | undefined }>;
}

function asyncCase(name: string, prealloc: boolean, dsync: boolean): Case {
  return {
    name,
    async run(dir) {
      const path = join(dir, `${name.replace(/\W+/g, '-')}.seg`);
      const flags = constants.O_RDWR | constants.O_CREAT | (dsync ? constants.O_DSYNC : 0);
      const prep = await open(path, constants.O_RDWR | constants.O_CREAT);
      await prep.write(new Uint8Array(32), 0, 32, 0);
      if (prealloc) await prefill(prep, 32 + groupBytes * ops + PREALLOC_CHUNK);
      await prep.datasync();
      await prep.close();
      const h = await open(path, flags);
      const io0 = deviceStats();
      const lat: number[] = [];
      let pos = 32;
      for (let i = 0; i < ops; i++) {
        const t0 = process.hrtime.bigint();
        await h.write(buf, 0, groupBytes, pos);
        if (!dsync) await h.datasync();
        lat.push(Number(process.hrtime.bigint() - t0) / 1000);
        pos += groupBytes;
      }
      await h.close();
      return { lat, io: ioSince(io0, ops) };
    },
  };
}

function syncCase(name: string, prealloc: boolean, dsync: boolean): Case {
  return {
    name,
    async run(dir) {
      const path = join(dir, `${name.replace(/\W+/g, '-')}.seg`);
      const prep = await open(path, constants.O_RDWR | constants.O_CREAT);
      await prep.write(new Uint8Array(32), 0, 32, 0);
      if (prealloc) await prefill(prep, 32 + groupBytes * ops + PREALLOC_CHUNK);
      await prep.datasync();
      await prep.close();
      const fd = openSync(
        path,
        constants.O_RDWR | constants.O_CREAT | (dsync ? constants.O_DSYNC : 0),
      );
      const io0 = deviceStats();
      const lat: number[] = [];
      let pos = 32;
      for (let i = 0; i < ops; i++) {
        const t0 = process.hrtime.bigint();
        writeSync(fd, buf, 0, groupBytes, pos);
        if (!dsync) fdatasyncSync(fd);
        lat.push(Number(process.hrtime.bigint() - t0) / 1000);
        pos += groupBytes;
      }
      closeSync(fd);
      return { lat, io: ioSince(io0, ops) };
    },
  };
}

/**
 * Preallocation as a log would do it: zeros are written ahead of the data in chunks while the
 * group commits run; `ownSync` syncs each chunk on its own (concurrently), otherwise the next
 * group commit's fdatasync carries it.
 */
function rollingCase(name: string, chunk: number, ownSync: boolean): Case {
  return {
    name,
    async run(dir) {
      const path = join(dir, `${name.replace(/\W+/g, '-')}.seg`);
      const h = await open(path, constants.O_RDWR | constants.O_CREAT);
      await h.write(new Uint8Array(32), 0, 32, 0);
      await h.datasync();
      const zeros = new Uint8Array(PREALLOC_CHUNK);
      let allocated = 32;
      let filling: Promise<void> | undefined;
      const fill = async () => {
        const from = allocated;
        for (let at = 0; at < chunk; at += PREALLOC_CHUNK) {
          await h.write(zeros, 0, Math.min(PREALLOC_CHUNK, chunk - at), from + at);
        }
        if (ownSync) await h.datasync();
        allocated = from + chunk;
        filling = undefined;
      };
      filling = fill();
      await filling;
      const io0 = deviceStats();
      const lat: number[] = [];
      let pos = 32;
      for (let i = 0; i < ops; i++) {
        const t0 = process.hrtime.bigint();
        if (pos + groupBytes > allocated && filling !== undefined) await filling;
        await h.write(buf, 0, groupBytes, pos);
        await h.datasync();
        lat.push(Number(process.hrtime.bigint() - t0) / 1000);
        pos += groupBytes;
        if (filling === undefined && allocated - pos < chunk / 2) filling = fill();
      }
      await filling;
      await h.close();
      return { lat, io: ioSince(io0, ops) };
    },
  };
}

const cases: Case[] = [
  rollingCase('rolling 4 MiB, unsynced fill', 4 * 1024 * 1024, false),
  rollingCase('rolling 1 MiB, fill synced apart', 1024 * 1024, true),
  rollingCase('rolling 2 MiB, fill synced apart', 2 * 1024 * 1024, true),
  rollingCase('rolling 4 MiB, fill synced apart', 4 * 1024 * 1024, true),
  rollingCase('rolling 16 MiB, fill synced apart', 16 * 1024 * 1024, true),
  asyncCase('append, write+fdatasync', false, false),
  asyncCase('prealloc, write+fdatasync', true, false),
  asyncCase('append, O_DSYNC write', false, true),
  asyncCase('prealloc, O_DSYNC write', true, true),
  syncCase('append, writeSync+fdatasyncSync', false, false),
  syncCase('prealloc, writeSync+fdatasyncSync', true, false),
];

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

const results = new Map<string, { mean: number[]; p50: number[]; p99: number[]; io: IoPerOp[] }>();
const load0 = loadavg()[0]!.toFixed(2);
for (let r = 0; r < rounds; r++) {
  for (const c of cases) {
    const dir = await mkdtemp(join(parent, 'felix-fdatasync-'));
    try {
      const { lat, io } = await c.run(dir);
      const sorted = [...lat].sort((a, b) => a - b);
      const mean = lat.reduce((a, b) => a + b, 0) / lat.length;
      const e = results.get(c.name) ?? { mean: [], p50: [], p99: [], io: [] };
      if (io !== undefined) e.io.push(io);
      e.mean.push(mean);
      e.p50.push(pct(sorted, 50));
      e.p99.push(pct(sorted, 99));
      results.set(c.name, e);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `| case (${groupBytes} B per group, ${ops} ops x ${rounds} rounds, median) | mean µs | p50 µs | p99 µs | groups/s | device writes/group | KiB/group | flushes/group |`,
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
const io = (e: { io: IoPerOp[] }, k: keyof IoPerOp, digits: number) =>
  e.io.length === 0 ? '' : med(e.io.map((x) => x[k])).toFixed(digits);
for (const [name, e] of results) {
  const m = med(e.mean);
  console.log(
    `| ${name} | ${m.toFixed(0)} | ${med(e.p50).toFixed(0)} | ${med(e.p99).toFixed(0)} | ${(1e6 / m).toFixed(0)} | ${io(e, 'writes', 2)} | ${io(e, 'kib', 1)} | ${io(e, 'flushes', 2)} |`,
  );
}
console.log(
  `\n(scratch under ${parent}, node ${process.version}, load ${load0} before, ${loadavg()[0]!.toFixed(2)} after)`,
);
