/**
 * The storage benchmark behind `felix-log-tool bench` and scripts/bench/storage: appends per
 * second, MB/s and append latency for 128 B and 4 KiB records under each fsync mode with 1,
 * 8 and 64 concurrent writers; in the same run the raw limit of the same disk (write +
 * fdatasync loops of the same sizes, large synced sequential writes); large batched appends;
 * and recovery scan speed over a large log. Timings are measured here, never in tests.
 */
import { type Io, writeFully } from '../io/io.js';
import { nodeIo } from '../io/node-io.js';
import { type FsyncMode, SegmentLog } from '../log/segment-log.js';
import { verifyShardDir } from './inspect.js';

export interface BenchOptions {
  /** Parent directory for scratch files (the disk being measured). */
  dir: string;
  /** Short cases and a smaller recovery log: a smoke run, not a measurement. */
  quick?: boolean;
  io?: Io;
  onProgress?: (done: number, total: number, label: string) => void;
}

export interface BenchRow {
  name: string;
  recordBytes: number;
  fsync: FsyncMode | 'raw';
  writers: number;
  opsPerSec: number;
  mbPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Appends covered by one group-commit flush (onCommit log cases), else undefined. */
  appendsPerFlush?: number;
}

export interface BenchReport {
  rows: BenchRow[];
  /** onCommit appends/s with 64 writers over 1 writer, per record size. */
  groupCommitGain: Record<string, number>;
  /** Large batched onCommit appends as a share of raw large synced writes. */
  batchedShareOfRaw: number;
  recovery: { bytes: number; verifyMbPerSec: number; openMs: number };
}

const SHARD = { tenant: 'bench', namespace: 'storage', stream: 'log', shard: 0 };
const MB = 1024 * 1024;
const BATCH_RECORDS = 256;
const BATCH_RECORD_BYTES = 4096;
/** Interleaved rounds per case in a full run; the median is reported. */
const BENCH_ROUNDS = 3;

function filled(size: number): Uint8Array {
  const p = new Uint8Array(size);
  for (let i = 0; i < size; i++) p[i] = (i * 131 + 7) & 0xff;
  return p;
}

class Latencies {
  private values = new Float64Array(1 << 16);
  count = 0;
  add(ms: number): void {
    if (this.count === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.count++] = ms;
  }
  percentile(p: number): number {
    if (this.count === 0) return 0;
    const sorted = this.values.subarray(0, this.count).sort();
    return sorted[Math.min(this.count - 1, Math.floor((p / 100) * this.count))]!;
  }
}

function row(
  name: string,
  recordBytes: number,
  fsync: BenchRow['fsync'],
  writers: number,
  ops: number,
  bytes: number,
  seconds: number,
  lat: Latencies,
): BenchRow {
  return {
    name,
    recordBytes,
    fsync,
    writers,
    opsPerSec: ops / seconds,
    mbPerSec: bytes / MB / seconds,
    p50Ms: lat.percentile(50),
    p99Ms: lat.percentile(99),
  };
}

/** A loop of positioned write + fdatasync, the disk's limit for one synced writer. */
async function rawSynced(io: Io, dir: string, size: number, seconds: number): Promise<BenchRow> {
  const path = `${dir}/raw-${size}.bin`;
  const file = await io.open(path, 'replace');
  const buf = filled(size);
  const lat = new Latencies();
  let pos = 0;
  let ops = 0;
  const start = performance.now();
  const until = start + seconds * 1000;
  try {
    while (performance.now() < until) {
      const t = performance.now();
      await writeFully(file, buf, 0, size, pos);
      await file.datasync();
      lat.add(performance.now() - t);
      pos += size;
      ops++;
    }
  } finally {
    await file.close();
    await io.unlink(path);
  }
  const elapsed = (performance.now() - start) / 1000;
  const label = size >= MB ? 'raw large write + fdatasync' : 'raw write + fdatasync';
  return row(label, size, 'raw', 1, ops, ops * size, elapsed, lat);
}

async function logCase(
  io: Io,
  dir: string,
  recordBytes: number,
  recordsPerAppend: number,
  fsync: FsyncMode,
  writers: number,
  seconds: number,
): Promise<BenchRow> {
  const root = await io.makeTempDir(dir, 'log-');
  const log = await SegmentLog.open({ root, shard: SHARD, fsync, io });
  const batch = Array.from({ length: recordsPerAppend }, () => filled(recordBytes));
  const lat = new Latencies();
  let ops = 0;
  const start = performance.now();
  const until = start + seconds * 1000;
  const worker = async () => {
    while (performance.now() < until) {
      const t = performance.now();
      await log.append(batch);
      lat.add(performance.now() - t);
      ops++;
    }
  };
  let flushes = 0;
  try {
    await Promise.all(Array.from({ length: writers }, worker));
    flushes = log.flushCount;
  } finally {
    await log.close();
    await io.removeTree(root);
  }
  const elapsed = (performance.now() - start) / 1000;
  const name =
    recordsPerAppend > 1 ? `log batched ${recordsPerAppend} x ${recordBytes} B` : 'log append';
  const result = row(
    name,
    recordBytes * recordsPerAppend,
    fsync,
    writers,
    ops,
    ops * recordBytes * recordsPerAppend,
    elapsed,
    lat,
  );
  if (fsync === 'onCommit' && flushes > 0) result.appendsPerFlush = ops / flushes;
  return result;
}

/** The sample with the median rate. */
function median(rows: BenchRow[]): BenchRow | undefined {
  const sorted = [...rows].sort((a, b) => a.opsPerSec - b.opsPerSec);
  return sorted[Math.floor(sorted.length / 2)];
}

async function recoveryCase(
  io: Io,
  dir: string,
  bytes: number,
  rounds: number,
): Promise<BenchReport['recovery']> {
  const root = await io.makeTempDir(dir, 'recovery-');
  try {
    const log = await SegmentLog.open({ root, shard: SHARD, fsync: 'none', io });
    const batch = Array.from({ length: BATCH_RECORDS }, () => filled(BATCH_RECORD_BYTES));
    while (log.sizeBytes < bytes) {
      await Promise.all([
        log.append(batch),
        log.append(batch),
        log.append(batch),
        log.append(batch),
      ]);
    }
    const dirPath = log.dir;
    const size = log.sizeBytes;
    await log.close();
    const verifyRates: number[] = [];
    const openTimes: number[] = [];
    for (let r = 0; r < rounds; r++) {
      let t = performance.now();
      await verifyShardDir(io, dirPath);
      verifyRates.push(size / MB / ((performance.now() - t) / 1000));
      t = performance.now();
      const reopened = await SegmentLog.open({ root, shard: SHARD, fsync: 'none', io });
      openTimes.push(performance.now() - t);
      await reopened.close();
    }
    const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    return { bytes: size, verifyMbPerSec: mid(verifyRates), openMs: mid(openTimes) };
  } finally {
    await io.removeTree(root);
  }
}

export async function runStorageBench(opts: BenchOptions): Promise<BenchReport> {
  const io = opts.io ?? nodeIo;
  const quick = opts.quick === true;
  const seconds = quick ? 0.3 : 1;
  const sizes = [128, 4096];
  const modes: FsyncMode[] = ['none', 'periodic', 'onCommit'];
  const writerCounts = [1, 8, 64];
  const steps: Array<{ label: string; run: (scratch: string) => Promise<BenchRow | undefined> }> =
    [];
  for (const size of sizes) {
    steps.push({ label: `raw ${size} B`, run: (d) => rawSynced(io, d, size, seconds) });
  }
  steps.push({ label: 'raw 1 MiB', run: (d) => rawSynced(io, d, MB, seconds) });
  for (const size of sizes) {
    for (const mode of modes) {
      for (const w of writerCounts) {
        steps.push({
          label: `${size} B ${mode} x${w}`,
          run: (d) => logCase(io, d, size, 1, mode, w, seconds),
        });
      }
    }
  }
  for (const w of [1, 4]) {
    steps.push({
      label: `batched onCommit x${w}`,
      run: (d) => logCase(io, d, BATCH_RECORD_BYTES, BATCH_RECORDS, 'onCommit', w, seconds),
    });
  }
  // Every case runs once per round, rounds interleaved, and the median round is reported:
  // a disk or CPU shared with other work then disturbs one sample of each case, not a case.
  const rounds = quick ? 1 : BENCH_ROUNDS;
  const samples: BenchRow[][] = steps.map(() => []);
  const total = steps.length * rounds + 1;
  const scratch = await io.makeTempDir(opts.dir, 'felix-storage-bench-');
  let recovery: BenchReport['recovery'];
  try {
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < steps.length; i++) {
        opts.onProgress?.(
          round * steps.length + i,
          total,
          `${steps[i]!.label} (round ${round + 1}/${rounds})`,
        );
        const r = await steps[i]!.run(scratch);
        if (r !== undefined) samples[i]!.push(r);
      }
    }
    opts.onProgress?.(total - 1, total, 'recovery scan');
    recovery = await recoveryCase(io, scratch, quick ? 128 * MB : 1024 * MB, rounds);
    opts.onProgress?.(total, total, 'done');
  } finally {
    await io.removeTree(scratch);
  }
  const rows = samples.map(median).filter((r): r is BenchRow => r !== undefined);
  const find = (size: number, w: number) =>
    rows.find(
      (r) =>
        r.name === 'log append' &&
        r.recordBytes === size &&
        r.fsync === 'onCommit' &&
        r.writers === w,
    );
  const groupCommitGain: Record<string, number> = {};
  for (const size of sizes) {
    const one = find(size, 1);
    const many = find(size, 64);
    if (one !== undefined && many !== undefined)
      groupCommitGain[`${size} B`] = many.opsPerSec / one.opsPerSec;
  }
  const rawLarge = rows.find((r) => r.fsync === 'raw' && r.recordBytes === MB);
  const batched = rows.filter((r) => r.name.startsWith('log batched'));
  const bestBatched = Math.max(...batched.map((r) => r.mbPerSec));
  return {
    rows,
    groupCommitGain,
    batchedShareOfRaw: rawLarge === undefined ? 0 : bestBatched / rawLarge.mbPerSec,
    recovery,
  };
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function sizeLabel(bytes: number): string {
  if (bytes >= MB) return `${bytes / MB} MiB`;
  if (bytes >= 1024) return `${bytes / 1024} KiB`;
  return `${bytes} B`;
}

/** The report as a markdown table plus the goal lines. */
export function formatBenchReport(report: BenchReport): string {
  const lines = [
    '| case | bytes per op | fsync | writers | ops/s | MB/s | p50 ms | p99 ms | appends per flush |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of report.rows) {
    lines.push(
      `| ${r.name} | ${sizeLabel(r.recordBytes)} | ${r.fsync} | ${r.writers} | ${fmt(r.opsPerSec)} | ${fmt(r.mbPerSec, 1)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${r.appendsPerFlush === undefined ? '' : fmt(r.appendsPerFlush, 1)} |`,
    );
  }
  lines.push('');
  for (const [size, gain] of Object.entries(report.groupCommitGain)) {
    lines.push(
      `- onCommit group-commit gain, ${size} records, 64 writers over 1: ${fmt(gain, 1)}x (goal >= 40x)`,
    );
  }
  lines.push(
    `- large batched onCommit appends vs raw large synced writes: ${fmt(report.batchedShareOfRaw * 100)} % (goal >= 80 %)`,
  );
  const rec = report.recovery;
  lines.push(
    `- recovery: full verify scan of a ${fmt(rec.bytes / MB)} MiB log at ${fmt(rec.verifyMbPerSec)} MB/s (goal >= 1 GB/s); open ${fmt(rec.openMs, 1)} ms`,
  );
  return lines.join('\n');
}
