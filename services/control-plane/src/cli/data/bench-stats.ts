/**
 * What `felixctl bench` measures and prints: an HDR histogram of latencies in µs, a progress bar
 * on a terminal's standard error, and the summary (table or JSON).
 */
import { SingleBar } from 'cli-progress';
import * as hdr from 'hdr-histogram-js';
import { table } from '../api.js';
import type { DataEnv } from './connection.js';
import { BENCH_LATENCY_US_MAX, PROGRESS_REDRAW_MS } from './limits.js';

export type Histogram = hdr.Histogram;

export function latencyHistogram(): Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: BENCH_LATENCY_US_MAX,
    numberOfSignificantValueDigits: 3,
    autoResize: false,
  });
}

/** Wall-clock µs since the epoch, to stamp a record at publish and compare at delivery. */
export function wallMicros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

/** A progress bar on standard error when it is a terminal; a no-op otherwise. */
export function progressBar(env: DataEnv, total: number): { tick(n: number): void; stop(): void } {
  const stream = env.io.stderr as (NodeJS.WritableStream & { isTTY?: boolean }) | undefined;
  if (!stream?.isTTY) return { tick: () => undefined, stop: () => undefined };
  const bar = new SingleBar({
    stream,
    fps: 1000 / PROGRESS_REDRAW_MS,
    format: '{bar} {percentage}% {value}/{total} records {rate} rec/s',
  });
  const started = performance.now();
  bar.start(total, 0, { rate: 0 });
  let done = 0;
  return {
    tick(n) {
      done += n;
      const s = (performance.now() - started) / 1000;
      bar.update(done, { rate: s > 0 ? Math.round(done / s) : 0 });
    },
    stop: () => bar.stop(),
  };
}

export interface BenchSummary {
  bench: 'pub' | 'sub';
  records: number;
  bytes: number;
  seconds: number;
  records_per_second: number;
  bytes_per_second: number;
  /** What the latency is: ack (publish to ack), write (unacked: publish to written), e2e. */
  latency: string;
  latency_us: { p50: number; p90: number; p99: number; p999: number; max: number } | null;
}

export function summarize(
  bench: 'pub' | 'sub',
  records: number,
  bytes: number,
  ms: number,
  latency: string,
  h: Histogram,
): BenchSummary {
  const s = ms / 1000;
  // A percentile is its bucket's highest equivalent value: never report one above the max.
  const at = (p: number) => Math.min(h.getValueAtPercentile(p), h.maxValue);
  return {
    bench,
    records,
    bytes,
    seconds: Number(s.toFixed(3)),
    records_per_second: Math.round(records / s),
    bytes_per_second: Math.round(bytes / s),
    latency,
    latency_us:
      h.totalCount === 0
        ? null
        : { p50: at(50), p90: at(90), p99: at(99), p999: at(99.9), max: h.maxValue },
  };
}

export function printSummary(env: DataEnv, s: BenchSummary): void {
  if (env.flags().json) {
    env.io.out(JSON.stringify(s));
    return;
  }
  const mb = (b: number) => `${(b / 1_048_576).toFixed(2)} MiB`;
  const rows: Record<string, unknown>[] = [
    { metric: 'records', value: s.records },
    { metric: 'bytes', value: mb(s.bytes) },
    { metric: 'seconds', value: s.seconds },
    { metric: 'rate', value: `${s.records_per_second} rec/s` },
    { metric: 'throughput', value: `${mb(s.bytes_per_second)}/s` },
  ];
  const l = s.latency_us;
  if (l) {
    for (const p of ['p50', 'p90', 'p99', 'p999', 'max'] as const)
      rows.push({ metric: `${s.latency} latency ${p}`, value: `${l[p]} µs` });
  }
  for (const line of table(rows, ['metric', 'value'])) env.io.out(line);
}
