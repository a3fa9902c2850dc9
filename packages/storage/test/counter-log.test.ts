// Goal: counters are a fold over a log of signed 64-bit deltas: adds answer the sum including
// them, the fold is rebuilt on open, overflow is refused before anything is written, and
// compaction restates the fold as checkpoints without moving sums or offsets.
// Method: CounterLog over an in-memory log (a disk log where a retention floor holds its trims);
// restarts reopen the same store.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import type { ProjectionLog } from '../src/cache/log-port.js';
import { SegmentLogPort } from '../src/compaction/segment-log-port.js';
import { CounterOverflowError, WriteFailedError } from '../src/errors.js';
import { CounterLog } from '../src/counter/counter-log.js';
import { FaultyIo } from '../src/io/faulty-io.js';
import { nodeIo } from '../src/io/node-io.js';
import { I64_MAX, I64_MIN, decodeCounterRecord } from '../src/counter/record.js';
import { SHARD, openDiskCounters, openPort, tempDir } from './projection-support/disk.js';
import { MemoryLog, MemoryLogStore } from './projection-support/memory-log.js';

const open = (store: MemoryLogStore) =>
  CounterLog.open({ log: new MemoryLog(store), compaction: { auto: false, bytesPerSec: 0 } });

/** A disk counter log whose next segment write fails once `release` is called (held until
 *  then), and a count of the claims made on its log. */
async function failingDisk(root: string, compaction: { beforeBatch?: () => Promise<void> } = {}) {
  const io = new FaultyIo(nodeIo, { noInlineWrites: true });
  const port = await SegmentLogPort.open({ root, shard: SHARD, fsync: 'onCommit', io });
  const seen = { claims: 0 };
  const log = new Proxy(port, {
    get(target, key) {
      if (key === 'claim')
        return (payloads: Uint8Array[]) => {
          seen.claims++;
          return target.claim(payloads);
        };
      const v = Reflect.get(target, key, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as ProjectionLog;
  const counters = await CounterLog.open({
    log,
    compaction: { auto: false, bytesPerSec: 0, ...compaction },
  });
  let release: () => void = () => undefined;
  const arm = () =>
    io.failWrites('ENOSPC', {
      until: new Promise<void>((r) => {
        release = r;
      }),
    });
  return { io, counters, seen, arm, release: () => release() };
}

const reopen = async (root: string) =>
  CounterLog.open({
    log: await SegmentLogPort.open({ root, shard: SHARD, fsync: 'onCommit' }),
    compaction: { auto: false },
  });

describe('CounterLog', () => {
  it('a_counter_add_answers_the_sum_including_it', async () => {
    const c = await open(new MemoryLogStore());
    expect(await c.add('hits', 5n)).toBe(5n);
    expect(await c.add('hits', -2n)).toBe(3n);
    const sums = await Promise.all([c.add('hits', 1n), c.add('hits', 1n), c.add('hits', 1n)]);
    expect(sums).toEqual([4n, 5n, 6n]);
    expect(await c.get('hits')).toBe(6n);
  });

  it('a_counter_never_written_is_absent_not_zero', async () => {
    const c = await open(new MemoryLogStore());
    expect(await c.get('nope')).toBeUndefined();
    await c.add('zero', 0n);
    expect(await c.get('zero')).toBe(0n);
  });

  it('the_sum_survives_a_restart', async () => {
    const dir = await tempDir('felix-counter-');
    try {
      const { counters } = await openDiskCounters(dir.path, { fsync: 'onCommit' });
      await Promise.all(
        [...Array(100).keys()].map((i) => counters.add(`k${i % 7}`, BigInt(i) * 1_000_000_007n)),
      );
      const want = await Promise.all([...Array(7).keys()].map((k) => counters.get(`k${k}`)));
      await counters.close();
      const { counters: again } = await openDiskCounters(dir.path);
      expect(await Promise.all([...Array(7).keys()].map((k) => again.get(`k${k}`)))).toEqual(want);
      expect(await again.get('k0')).toBe(
        [0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84, 91, 98].reduce(
          (a, i) => a + BigInt(i) * 1_000_000_007n,
          0n,
        ),
      );
      await again.close();
    } finally {
      await dir.cleanup();
    }
  });

  it('an_add_past_the_signed_64_bit_range_is_refused_and_writes_nothing', async () => {
    const log = new MemoryLog();
    const c = await CounterLog.open({ log, compaction: { auto: false } });
    await c.add('big', I64_MAX - 1n);
    const tail = log.tailOffset;
    await expect(c.add('big', 2n)).rejects.toBeInstanceOf(CounterOverflowError);
    expect(log.tailOffset).toBe(tail);
    expect(await c.add('big', 1n)).toBe(I64_MAX);
    await c.add('small', I64_MIN);
    await expect(c.add('small', -1n)).rejects.toBeInstanceOf(CounterOverflowError);
    // Concurrent staged deltas count towards the check: they will all apply.
    await c.add('race', I64_MAX - 10n);
    const results = await Promise.allSettled([c.add('race', 6n), c.add('race', 6n)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect(await c.get('race')).toBe(I64_MAX - 4n);
  });

  it('compaction_moves_neither_the_sum_nor_the_offsets', async () => {
    const dir = await tempDir('felix-counter-');
    try {
      const { counters: c, port: log } = await openDiskCounters(dir.path);
      for (let i = 0; i < 400; i++) await c.add(`k${i % 5}`, BigInt(i - 50));
      const before = await Promise.all([...Array(5).keys()].map((k) => c.get(`k${k}`)));
      const tailBefore = log.tailOffset;
      const result = await c.compact();
      expect(result.trimmed).toBe(true);
      expect(result.cut).toBe(tailBefore);
      expect(log.baseOffset).toBe(tailBefore);
      expect(log.tailOffset).toBe(tailBefore + 5);
      const res = await log.read(log.baseOffset);
      if (res.kind !== 'records') throw new Error('trimmed');
      expect(res.records.map((r) => decodeCounterRecord(r.payload).op)).toEqual(
        Array(5).fill('checkpoint'),
      );
      expect(await Promise.all([...Array(5).keys()].map((k) => c.get(`k${k}`)))).toEqual(before);
      expect(await c.add('k0', 1n)).toBe((before[0] ?? 0n) + 1n);
      expect(log.tailOffset).toBe(tailBefore + 6);
      await c.close();
      const { counters: again } = await openDiskCounters(dir.path);
      expect(await again.get('k1')).toBe(before[1]);
      expect(await again.get('k0')).toBe((before[0] ?? 0n) + 1n);
      await again.close();
    } finally {
      await dir.cleanup();
    }
  });

  it('a_counter_log_does_not_compact_again_while_its_last_cut_waits_on_the_floor', async () => {
    const dir = await tempDir('felix-counters-');
    try {
      let passes = 0;
      const port = await openPort(dir.path, 'counters');
      const c = await CounterLog.open({
        log: port,
        compaction: { floorBytes: 4_000, bytesPerSec: 0, beforeTrim: async () => void passes++ },
      });
      port.segmentLog.setRetentionFloor(0);
      let i = 0;
      while (passes === 0) await c.add(`k${i++ % 4}`, 1n);
      await c.compacting;
      expect(port.trimWaiting).toBe(true);
      for (let n = 0; n < 10 * i; n++) await c.add(`k${n % 4}`, 1n);
      await c.compacting;
      expect(passes).toBe(1);
      port.segmentLog.setRetentionFloor(undefined);
      await waitFor(() => !port.trimWaiting, 'the held cut trimmed', 5_000);
      expect(port.baseOffset).toBeGreaterThan(0);
      expect(await c.get('k0')).toBe(BigInt(Math.ceil(i / 4) + Math.ceil((10 * i) / 4)));
      await c.close();
    } finally {
      await dir.cleanup();
    }
  });

  it('a_counter_under_constant_adds_is_still_checkpointed_and_its_log_trimmed', async () => {
    // Before, a key with a delta staged was skipped by every pass: a counter that always had
    // an add in flight was never checkpointed, and no cut below it could be trimmed.
    const store = new MemoryLogStore();
    const log = new MemoryLog(store);
    const c = await CounterLog.open({ log, compaction: { auto: false, bytesPerSec: 0 } });
    for (let i = 0; i < 100; i++) await c.add('hot', 1n);
    log.shutGate();
    const inFlight = [c.add('hot', 10n), c.add('hot', 100n)];
    await waitFor(() => log.stagedCount === 2, 'two adds staged');
    log.passNewClaims();
    const pass = c.compact();
    // The pass's checkpoint is claimed behind the two staged adds, before either applies.
    await waitFor(() => log.tailOffset === 103, 'the checkpoint claimed behind the staged adds');
    log.openGate();
    const [a, b] = await Promise.all(inFlight);
    expect([a, b]).toEqual([110n, 210n]);
    const result = await pass;
    expect(result.trimmed).toBe(true);
    expect(log.baseOffset).toBeGreaterThanOrEqual(100);
    expect(await c.get('hot')).toBe(210n);
    await c.close();
    const again = await open(store);
    expect(await again.get('hot')).toBe(210n);
    expect(await again.add('hot', 1n)).toBe(211n);
    await again.close();
  });

  it('adds_do_not_wait_on_a_slow_compaction', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    let batches = 0;
    const c = await CounterLog.open({
      log: new MemoryLog(),
      compaction: {
        auto: false,
        bytesPerSec: 0,
        beforeBatch: async () => {
          batches++;
          await held;
        },
      },
    });
    for (let i = 0; i < 10; i++) await c.add(`k${i}`, 1n);
    const pass = c.compact();
    await waitFor(() => batches > 0, 'the pass to reach its first batch');
    for (let i = 0; i < 10; i++) expect(await c.add(`k${i}`, 1n)).toBe(2n);
    release();
    await pass;
    for (let i = 0; i < 10; i++) expect(await c.get(`k${i}`)).toBe(2n);
  });

  it('a_failed_delta_write_never_lets_a_later_delta_overflow_the_log', async () => {
    const dir = await tempDir('felix-counter-');
    try {
      const d = await failingDisk(dir.path);
      d.arm();
      const failed = d.counters.add('k', -5n);
      await waitFor(() => d.io.heldWrites === 1 || undefined, 'the failing write is in flight');
      // Both passed the overflow check counting the -5: neither may land once it failed.
      const max = d.counters.add('k', I64_MAX);
      const five = d.counters.add('k', 5n);
      d.release();
      for (const add of [failed, max, five])
        await expect(add).rejects.toBeInstanceOf(WriteFailedError);
      expect(await d.counters.get('k')).toBeUndefined();
      // From the next turn of the event loop the log takes writes again.
      await new Promise<void>((r) => setImmediate(r));
      expect(await d.counters.add('k', 5n)).toBe(5n);
      await d.counters.close();
      const again = await reopen(dir.path);
      expect(await again.get('k')).toBe(5n);
      await again.close();
    } finally {
      await dir.cleanup();
    }
  });

  it('a_checkpoint_never_includes_a_delta_whose_write_failed', async () => {
    const dir = await tempDir('felix-counter-');
    try {
      let failed: Promise<bigint> | undefined;
      const d = await failingDisk(dir.path, {
        beforeBatch: async () => {
          if (failed !== undefined) return;
          // A delta staged, its write held, when the checkpoint of its key is staged.
          d.arm();
          failed = d.counters.add('k', 100n);
          failed.catch(() => undefined); // asserted below, once the pass is over
          await waitFor(() => d.io.heldWrites === 1 || undefined, 'the delta write is held');
          const claimsBefore = d.seen.claims;
          void waitFor(
            () => d.seen.claims > claimsBefore || undefined,
            'the checkpoint is claimed',
          ).then(() => d.release());
        },
      });
      expect(await d.counters.add('k', 1n)).toBe(1n);
      // The pass fails with the write behind it: what matters is what the counter says after.
      await d.counters.compact().catch(() => undefined);
      await expect(failed).rejects.toBeInstanceOf(WriteFailedError);
      expect(await d.counters.get('k')).toBe(1n);
      await d.counters.close();
      const again = await reopen(dir.path);
      expect(await again.get('k')).toBe(1n);
      await again.close();
    } finally {
      await dir.cleanup();
    }
  });
});
