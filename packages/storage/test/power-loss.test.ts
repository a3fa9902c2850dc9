/**
 * Goal: a power loss never takes a record the log acknowledged under `onCommit`, nor any
 * record below the durable offset in any mode, and the log always reopens after one, even
 * when the power fails again part-way through its recovery.
 * Method: the log runs on PowerLossIo (an in-memory disk that keeps only what was synced,
 * plus any subset of unsynced sector writes and directory changes). fast-check picks the
 * fsync mode, the batches, the moment of the crash, whether the process dies first (page
 * cache kept), when a second power loss interrupts the next open and the preallocation step
 * (zeros written and synced ahead of the data, or none); the final disk is
 * reopened and every record checked against what was acknowledged.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LogPoisonedError } from '../src/errors.js';
import { SegmentLog } from '../src/log/segment-log.js';
import { payload, prng, SHARD } from './helpers.js';
import { PowerLossIo } from './support/power-loss-io.js';

type Mode = 'onCommit' | 'periodic' | 'none';
const open = (io: PowerLossIo, fsync: Mode, preallocateBytes: number) =>
  SegmentLog.open({
    root: '/data',
    shard: SHARD,
    fsync,
    io,
    segmentBytes: 4096,
    preallocateBytes,
    flushIntervalMs: 1,
  });

describe('power loss', () => {
  it('a_power_loss_keeps_every_record_below_the_durable_offset', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Mode>('onCommit', 'periodic', 'none'),
        fc.array(fc.record({ count: fc.integer({ min: 1, max: 4 }), size: fc.nat({ max: 700 }) }), {
          minLength: 1,
          maxLength: 30,
        }),
        fc.nat({ max: 30 }),
        fc.integer(),
        fc.boolean(),
        fc.option(fc.nat({ max: 60 }), { nil: undefined }),
        // Preallocation off, in steps smaller than a segment, or a whole segment at once.
        fc.constantFrom(0, 512, 1536, 4096),
        async (
          fsync,
          batches,
          crashAfterAcks,
          seed,
          processDiesFirst,
          lossDuringOpenAfterOps,
          preallocateBytes,
        ) => {
          const io = new PowerLossIo();
          await io.mkdir('/data');
          const log = await open(io, fsync, preallocateBytes);
          const acked: Array<{ first: number; payloads: Uint8Array[] }> = [];
          let crash: { disk: PowerLossIo; durable: number; acked: number } | undefined;
          const crashNow = () => {
            crash ??= {
              disk: processDiesFirst ? io.afterProcessCrash() : io.crash(prng(seed)),
              durable: log.durableOffset,
              acked: acked.length,
            };
          };
          const target = Math.min(crashAfterAcks, batches.length);
          if (target === 0) crashNow();
          const appends = batches.map((b, i) => {
            const payloads = Array.from({ length: b.count }, (_, k) => payload(i * 10 + k, b.size));
            return log.append(payloads).then(({ first }) => {
              acked.push({ first, payloads });
              if (acked.length >= target) crashNow();
            });
          });
          await Promise.allSettled(appends);
          crashNow();
          // The disk is already "lost": closing may fail, and only the reopen below is judged.
          await log.close().catch(() => undefined);

          const { durable } = crash!;
          let disk = crash!.disk;
          // After a process crash an open syncs what it found; a completed one therefore
          // protects every acknowledged record against the power loss that follows.
          let reopenedBeforeLoss = false;
          if (lossDuringOpenAfterOps !== undefined) {
            disk.failAfter(lossDuringOpenAfterOps, prng(seed + 1));
            // An open cut by the power loss may fail; either outcome is a valid history.
            const interrupted = await open(disk, fsync, preallocateBytes).catch(() => undefined);
            reopenedBeforeLoss = interrupted !== undefined;
            // Same disk, same loss: its close may fail too.
            await interrupted?.close().catch(() => undefined);
            disk = disk.lost ?? disk.crash(prng(seed + 2));
          } else if (processDiesFirst) {
            disk = disk.crash(prng(seed + 2));
          }

          const reopened = await open(disk, fsync, preallocateBytes);
          try {
            for (const [n, a] of acked.entries()) {
              const acknowledgedBeforeCrash = n < crash!.acked;
              const mustSurvive =
                a.first + a.payloads.length <= durable ||
                (fsync === 'onCommit' && acknowledgedBeforeCrash) ||
                (processDiesFirst && reopenedBeforeLoss && acknowledgedBeforeCrash);
              const r = await reopened.read(a.first, { maxRecords: a.payloads.length });
              expect(r.kind).toBe('records');
              if (r.kind !== 'records') continue;
              if (mustSurvive) expect(r.records.length).toBe(a.payloads.length);
              r.records.forEach((rec, k) => {
                expect(rec.offset).toBe(a.first + k);
                expect(Buffer.compare(rec.payload, a.payloads[k]!)).toBe(0);
              });
            }
            expect(reopened.tailOffset).toBeGreaterThanOrEqual(durable);
          } finally {
            await reopened.close();
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a_record_whose_fsync_failed_is_not_taken_as_durable_when_the_log_reopens', async () => {
    // fsyncgate: after a failed fdatasync Linux keeps the unwritten pages in the page cache,
    // marked clean. A reopen in the same boot (a broker restart, or the replica server reopening
    // its follower log after the failure) reads them back, and the open's own sync has nothing
    // left to write. The reopened log must not count such a record as durable.
    for (const preallocateBytes of [1536, 0]) {
      const io = new PowerLossIo();
      await io.mkdir('/data');
      const log = await open(io, 'onCommit', preallocateBytes);
      await log.append([payload(0, 300)]);
      io.failDatasyncs(1);
      await expect(log.append([payload(1, 300)])).rejects.toBeInstanceOf(LogPoisonedError);
      // The log is poisoned by the injected fault: its close fails the same way.
      await log.close().catch(() => undefined);

      const restarted = io.afterProcessCrash();
      const reopened = await open(restarted, 'onCommit', preallocateBytes);
      const durable = reopened.durableOffset;
      await reopened.close();

      const afterLoss = await open(restarted.crash(prng(7)), 'onCommit', preallocateBytes).then(
        async (l) => {
          const tail = l.tailOffset;
          await l.close();
          return tail;
        },
        (e: unknown) => e,
      );
      expect(afterLoss, `preallocateBytes ${preallocateBytes}: durable offset ${durable}`).toBe(
        durable,
      );
    }
  });
});
