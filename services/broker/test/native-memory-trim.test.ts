// Goal: memory the broker freed goes back to the system. After slow subscribers left, the soak
// saw broker RSS stay ~200 MiB above its baseline while the JS heap and external memory came
// back: glibc's main heap kept 243 MiB with 25 MiB in use, freed in the middle of the heap where
// free() never returns pages; malloc_trim(0) brought RSS back (docs/perf.md, the soak).
// Method: the collector with stand-ins (order and count of collection and trim); the addon in a
// child process on a heap fragmented on purpose (RSS before and after the trim); and a real
// broker process with a subscriber that stops reading (RSS from /metrics before the subscriber,
// at its peak, and after it disconnects, when the transport's quiet-time collection ran).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type FelixClient, connect } from '@felix/client';
import { type BrokerProcess, brokerMetric as metric, startBroker } from '@felix/testing-e2e';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadMallocTrim, nativeMemoryCollector } from '../src/util/reclaim.js';

const MIB = 1024 * 1024;
const ADDON = fileURLToPath(new URL('../dist/malloc-trim.node', import.meta.url));
const report = process.report.getReport() as { header?: { glibcVersionRuntime?: string } };
/** malloc_trim is glibc's: elsewhere the addon answers false and these tests do not apply. */
const glibc = process.platform === 'linux' && report.header?.glibcVersionRuntime !== undefined;
const RSS = /felix_broker_process_process_resident_memory_bytes (\d+)/;
const SUBSCRIPTIONS = /felix_broker_subscriptions (\d+)/;
/** RSS a broker may keep once the stalled subscriber left. Measured: a peak of +124 to +141 MiB;
 *  after it left +138 MiB without the addon (freed, kept by glibc), +19 MiB with malloc_trim
 *  alone, -15 MiB with the young generation shrunk as well. */
const SETTLED_GROWTH_MAX = 40 * MIB;

describe('the native-memory collector', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A collector with stand-ins, on fake timers: what ran, in order. */
  function standIns(deferMsMax = 60_000) {
    vi.useFakeTimers();
    const calls: string[] = [];
    const collector = nativeMemoryCollector({
      collect: () => calls.push('collect'),
      trim: async () => {
        calls.push('trim');
        return true;
      },
      quietMs: 3_000,
      deferMsMax,
    });
    return { calls, collector };
  }

  it('the_native_memory_collector_trims_once_collections_go_quiet', async () => {
    const { calls, collector } = standIns();
    collector();
    await vi.advanceTimersByTimeAsync(2_000);
    collector(); // a collection while the trim waits postpones it
    await vi.advanceTimersByTimeAsync(2_999);
    expect(calls).toEqual(['collect', 'collect']);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toEqual(['collect', 'collect', 'trim']);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toEqual(['collect', 'collect', 'trim']); // nothing new to trim
    collector();
    await vi.advanceTimersByTimeAsync(3_000);
    expect(calls).toEqual(['collect', 'collect', 'trim', 'collect', 'trim']);
  });

  it('a_steady_stream_of_collections_still_trims_within_its_deferral_bound', async () => {
    const { calls, collector } = standIns(10_000);
    for (let t = 0; t <= 10_000; t += 2_000) {
      collector();
      await vi.advanceTimersByTimeAsync(2_000);
    }
    expect(calls.filter((c) => c === 'trim')).toHaveLength(1);
    expect(calls.indexOf('trim')).toBe(5); // at 10 s, the bound after the first collection
  });

  it('the_native_memory_collector_only_collects_without_a_trim', () => {
    let collections = 0;
    const collector = nativeMemoryCollector({ collect: () => collections++, trim: null });
    collector();
    expect(collections).toBe(1);
  });
});

describe.runIf(glibc)('malloc_trim through the broker addon (glibc)', () => {
  it('the_broker_build_leaves_a_loadable_malloc_trim_addon', () => {
    expect(existsSync(ADDON)).toBe(true);
    expect(loadMallocTrim()).toBeTypeOf('function');
  });

  it('free_memory_in_the_middle_of_the_heap_goes_back_to_the_system_after_a_trim', () => {
    // 80 MiB of 4 KiB buffers (below glibc's mmap threshold: on the main heap), one in 32 kept
    // so free() can return nothing from the top; then the addon's trim.
    const script = `
      const trim = require(${JSON.stringify(ADDON)}).trim;
      const rss = () => process.memoryUsage().rss;
      const fill = () => Array.from({ length: 20480 }, () => Buffer.allocUnsafeSlow(4096).fill(1));
      const kept = fill().filter((_, i) => i % 32 === 0);
      globalThis.gc(); globalThis.gc();
      setTimeout(async () => {
        const before = rss();
        const released = await trim();
        console.log(JSON.stringify({ before, after: rss(), released, kept: kept.length }));
      }, 500);`;
    const out = execFileSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
    const r = JSON.parse(out) as { before: number; after: number; released: boolean };
    console.log(`trim: rss ${(r.before / MIB).toFixed(1)} -> ${(r.after / MIB).toFixed(1)} MiB`);
    expect(r.released).toBe(true);
    expect(r.before - r.after).toBeGreaterThan(40 * MIB);
  });
});

function client(broker: BrokerProcess): Promise<FelixClient> {
  return connect({
    servers: [broker.url('tls')],
    tenant: 't1',
    tls: { fingerprint: broker.fingerprint },
  });
}

describe.runIf(glibc)('a broker after a stalled subscriber', () => {
  it('a_stalled_subscribers_memory_goes_back_to_the_system_after_it_disconnects', async () => {
    const dir = await tempDir();
    const broker = await startBroker({
      yaml: 'streams:\n  - { tenant: t1, name: slow }\n',
      dir: dir.path,
      env: {
        FELIX_BROKER_SUBSCRIBER_QUEUE_BYTES: String(96 * MIB),
        FELIX_MEMORY_RING_BYTES: String(4 * MIB),
      },
    });
    try {
      const reader = await client(broker);
      const writer = await client(broker);
      const before = await metric(broker, RSS);
      // One next() and never another: the subscription starts and then nothing reads it.
      const head = reader
        .subscribe('slow', { from: 'latest', shard: 0 })
        [Symbol.asyncIterator]()
        .next();
      await waitFor(async () => (await metric(broker, SUBSCRIPTIONS)) > 0, 'the subscription');
      const pub = writer.publisher('slow', { maxBatchRecords: 64 });
      const record = new Uint8Array(1024).fill(5);
      for (let sent = 0; sent < 128 * 1024; ) {
        if (pub.send(record)) sent++;
        else await pub.ready();
      }
      await pub.flush();
      await head;
      const peak = await metric(broker, RSS);
      await reader.close();
      await writer.close();
      // The transport collects once closes went quiet (5 s); the return follows 10 s later.
      const settled = await waitFor(
        async () => {
          const rss = await metric(broker, RSS);
          return rss <= before + SETTLED_GROWTH_MAX ? rss : null;
        },
        'RSS back near where it was before the subscriber',
        45_000,
      ).catch(async () => metric(broker, RSS));
      const mib = (n: number) => `${(n / MIB).toFixed(1)} MiB`;
      console.log(
        `stalled subscriber: rss ${mib(before)}, peak ${mib(peak)}, after ${mib(settled)}`,
      );
      expect(peak - before).toBeGreaterThan(64 * MIB); // the subscriber did hold memory
      expect(settled).toBeLessThanOrEqual(before + SETTLED_GROWTH_MAX);
    } finally {
      await broker.stop();
      await dir.cleanup();
    }
  }, 120_000);
});
