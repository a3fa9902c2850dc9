/**
 * `felixctl bench pub|sub <stream>`: publish N records of a size with a window in flight, or read
 * N records, and print the rate, the bytes per second and the latency percentiles. A benched
 * record starts with its publish time (8 bytes, µs), so `bench sub` running beside `bench pub`
 * measures publish-to-delivery latency. `--no-ack` ends with one acked record as a fence (counted).
 */
import type { FelixClient } from '@felix/client';
import type { Command } from 'commander';
import { type DataEnv, withClient } from './connection.js';
import {
  latencyHistogram,
  printSummary,
  progressBar,
  summarize,
  wallMicros,
} from './bench-stats.js';
import { BENCH_IN_FLIGHT_MAX, BENCH_LATENCY_US_MAX, BENCH_RECORD_BYTES_MAX } from './limits.js';
import { UsageError } from './report.js';
import { intArg, parseFrom } from './values.js';

interface PubBench {
  size: string;
  count: string;
  inFlight: string;
  ack: boolean;
  key?: string;
}

export function benchCommands(program: Command, env: DataEnv): void {
  const bench = program.command('bench').description('measure publish and subscribe rates');
  bench
    .command('pub <stream>')
    .description('publish --count records of --size bytes, --in-flight at a time')
    .option('--size <bytes>', 'record size', '128')
    .option('--count <n>', 'records to publish', '100000')
    .option('--in-flight <n>', 'publishes waiting for their ack at once', '64')
    .option('--key <key>', 'publish every record with this key')
    .option('--no-ack', 'do not wait for acks (latency is then the time to write)')
    .action((stream: string, o: PubBench) => withClient(env, (c) => benchPub(env, c, stream, o)));
  bench
    .command('sub <stream>')
    .description('read --count records and time it')
    .option('--count <n>', 'records to read', '100000')
    .option('--from <pos>', 'earliest | latest | <offset> | <ISO time> | <age>', 'earliest')
    .option('--shard <n>', 'read one shard')
    .action((stream: string, o: { count: string; from: string; shard?: string }) =>
      withClient(env, (c) => benchSub(env, c, stream, o)),
    );
}

/** A record of `size` bytes whose first 8 hold its publish time (when it has room). */
function stamped(size: number): Uint8Array {
  const b = new Uint8Array(size);
  if (size >= 8) new DataView(b.buffer).setFloat64(0, wallMicros());
  return b;
}

async function benchPub(env: DataEnv, c: FelixClient, stream: string, o: PubBench) {
  const size = intArg('--size', o.size, 1);
  const count = intArg('--count', o.count, 1);
  const window = intArg('--in-flight', o.inFlight, 1);
  if (size > BENCH_RECORD_BYTES_MAX)
    throw new UsageError(`--size is at most ${BENCH_RECORD_BYTES_MAX}`);
  if (window > BENCH_IN_FLIGHT_MAX)
    throw new UsageError(`--in-flight is at most ${BENCH_IN_FLIGHT_MAX}`);
  const opts = { ack: o.ack, ...(o.key === undefined ? {} : { key: o.key }) };
  const h = latencyHistogram();
  const bar = progressBar(env, count);
  let next = 0;
  const worker = async () => {
    while (next < count && !env.io.signal?.aborted) {
      next++;
      const t0 = performance.now();
      await c.publish(stream, stamped(size), opts);
      h.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
      bar.tick(1);
    }
  };
  const started = performance.now();
  try {
    await Promise.all(Array.from({ length: Math.min(window, count) }, worker));
    // Unacked records are only written: one acked record after them (same stream and key, so
    // in call order) is answered once the broker appended them all; its time is counted.
    if (!o.ack) await c.publish(stream, stamped(size), { ...opts, ack: true });
  } finally {
    bar.stop();
  }
  const n = h.totalCount + (o.ack ? 0 : 1);
  printSummary(
    env,
    summarize('pub', n, n * size, performance.now() - started, o.ack ? 'ack' : 'write', h),
  );
}

async function benchSub(
  env: DataEnv,
  c: FelixClient,
  stream: string,
  o: { count: string; from: string; shard?: string },
) {
  const count = intArg('--count', o.count, 1);
  const ac = new AbortController();
  const stop = () => ac.abort();
  env.io.signal?.addEventListener('abort', stop, { once: true });
  const h = latencyHistogram();
  const bar = progressBar(env, count);
  let n = 0;
  let bytes = 0;
  const started = performance.now();
  try {
    const sub = c.subscribe(stream, {
      from: parseFrom(o.from),
      signal: ac.signal,
      ...(o.shard === undefined ? {} : { shard: intArg('--shard', o.shard) }),
    });
    for await (const ev of sub) {
      bytes += ev.data.byteLength;
      recordE2e(h, ev.data);
      bar.tick(1);
      if (++n >= count) break;
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    bar.stop();
    env.io.signal?.removeEventListener('abort', stop);
  }
  printSummary(env, summarize('sub', n, bytes, performance.now() - started, 'e2e', h));
}

/** Publish-to-delivery latency of a record `bench pub` stamped (others are skipped). */
function recordE2e(h: ReturnType<typeof latencyHistogram>, data: Uint8Array): void {
  if (data.byteLength < 8) return;
  const sent = new DataView(data.buffer, data.byteOffset, 8).getFloat64(0);
  const us = wallMicros() - sent;
  if (Number.isFinite(us) && us >= 0 && us < BENCH_LATENCY_US_MAX)
    h.recordValue(Math.max(1, Math.round(us)));
}
