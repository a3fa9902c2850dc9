/**
 * Goal: truncating a closed log above an offset keeps exactly the records below it, appends
 * continue from the target, a target below the commit offset or the log's base is refused with
 * nothing changed, and a power loss at any step of a truncation leaves a prefix of the old log
 * no shorter than the target, which a second truncation finishes.
 * Method: multi-segment logs (4 KiB segments) on the real disk for each kind of target (inside
 * a segment, at a segment's base, at the log's base, at and past the tail); PowerLossIo cut after
 * every operation count of a truncation, over random logs and targets (fast-check).
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BelowCommitError, TruncateBelowBaseError } from '../src/errors.js';
import { type LogOptions, SegmentLog } from '../src/log/segment-log.js';
import { truncateLogAbove } from '../src/log/tail-truncation.js';
import { decodeSegmentHeader, isHeaderVerdict } from '../src/segment/format.js';
import { payload, prng, scratchRoot, SHARD, shardDir } from './helpers.js';
import { PowerLossIo } from './support/power-loss-io.js';

const SMALL: Partial<LogOptions> = { segmentBytes: 4096, preallocateBytes: 0 };

async function writeLog(opts: LogOptions, sizes: number[]): Promise<SegmentLog> {
  const log = await SegmentLog.open(opts);
  for (let i = 0; i < sizes.length; i++) await log.append([payload(i, sizes[i])]);
  return log;
}

/** Every readable record as [offset, payload] pairs. */
async function records(log: SegmentLog): Promise<Array<[number, Uint8Array]>> {
  const out: Array<[number, Uint8Array]> = [];
  let at = log.baseOffset;
  while (at < log.tailOffset) {
    const r = await log.read(at, { maxRecords: 1000 });
    if (r.kind !== 'records' || r.records.length === 0) break;
    for (const rec of r.records) out.push([rec.offset, rec.payload.slice()]);
    at = r.records[r.records.length - 1]!.offset + 1;
  }
  return out;
}

describe('tail truncation', () => {
  it('truncating_a_log_above_an_offset_keeps_every_record_below_it_and_appends_continue_there', async () => {
    const sizes = Array.from({ length: 60 }, (_, i) => 100 + ((i * 37) % 400));
    const root = await scratchRoot();
    const opts: LogOptions = { root, shard: SHARD, fsync: 'onCommit', ...SMALL };
    const log = await writeLog(opts, sizes);
    const all = await records(log);
    expect(log.segmentCount).toBeGreaterThan(4);
    await log.close();
    // A target inside a segment, then one at a segment's base, then the log's base: each
    // truncation works on what the previous one left.
    const segmentBase = await firstOffsetOfSegment(opts, 2);
    for (const target of [47, segmentBase, 0]) {
      const result = await truncateLogAbove(opts, target, { commitOffset: 0 });
      expect(result.tail).toBe(target);
      const reopened = await SegmentLog.open(opts);
      expect(reopened.tailOffset).toBe(target);
      expect(await records(reopened)).toEqual(all.slice(0, target));
      await reopened.close();
    }
    const again = await SegmentLog.open(opts);
    const next = await again.append([payload(999, 50)]);
    expect(next.first).toBe(0);
    await again.close();
  });

  it('truncating_at_or_past_the_tail_changes_nothing', async () => {
    const opts: LogOptions = {
      root: await scratchRoot(),
      shard: SHARD,
      fsync: 'onCommit',
      ...SMALL,
    };
    const log = await writeLog(opts, [10, 20, 30]);
    await log.close();
    for (const target of [3, 10]) {
      expect(await truncateLogAbove(opts, target, { commitOffset: 0 })).toEqual({
        tail: 3,
        removed: 0,
        segmentsDeleted: 0,
      });
    }
  });

  it('truncating_below_the_commit_offset_or_the_log_base_is_refused_and_changes_nothing', async () => {
    const opts: LogOptions = {
      root: await scratchRoot(),
      shard: SHARD,
      fsync: 'onCommit',
      ...SMALL,
    };
    const log = await writeLog(
      opts,
      Array.from({ length: 40 }, () => 300),
    );
    await log.seal();
    expect(await log.trimBelow(20)).toBeGreaterThan(0);
    const base = log.baseOffset;
    await log.close();
    const below = await truncateLogAbove(opts, 30, { commitOffset: 31 }).catch((e: unknown) => e);
    expect(below).toBeInstanceOf(BelowCommitError);
    expect((below as BelowCommitError).code).toBe('FELIX_STORAGE_BELOW_COMMIT');
    const underBase = await truncateLogAbove(opts, base - 1, { commitOffset: 0 }).catch(
      (e: unknown) => e,
    );
    expect(underBase).toBeInstanceOf(TruncateBelowBaseError);
    const reopened = await SegmentLog.open(opts);
    expect([reopened.baseOffset, reopened.tailOffset]).toEqual([base, 40]);
    await reopened.close();
  });

  it('a_power_loss_during_truncation_leaves_a_prefix_no_shorter_than_the_target', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 100, max: 900 }), { minLength: 8, maxLength: 40 }),
        fc.nat(),
        fc.nat(),
        fc.boolean(),
        fc.integer(),
        async (sizes, targetSeed, cutAt, late, seed) => {
          const io = new PowerLossIo();
          await io.mkdir('/data');
          const opts: LogOptions = { root: '/data', shard: SHARD, fsync: 'onCommit', io, ...SMALL };
          const log = await writeLog(opts, sizes);
          const all = await records(log);
          await log.close();
          const target = targetSeed % sizes.length;
          // A dry run on an identical disk counts the truncation's operations; the real one
          // loses power after a fraction of them.
          const dry = io.crash(prng(seed));
          const before = dry.operations;
          await truncateLogAbove({ ...opts, io: dry }, target, { commitOffset: 0 });
          // Half the cuts land among the last dozen operations, where the files change.
          const total = dry.operations - before;
          io.failAfter(
            late ? total - 1 - (cutAt % Math.min(12, total)) : cutAt % total,
            prng(seed),
          );
          const finished = await truncateLogAbove(opts, target, { commitOffset: 0 }).then(
            () => true,
            () => false,
          );
          const disk = io.lost ?? io.crash(prng(seed + 1));
          const after: LogOptions = { ...opts, io: disk };
          const reopened = await SegmentLog.open(after);
          const kept = await records(reopened);
          await reopened.close();
          // A prefix of the old log, never shorter than the target (exactly it once finished).
          expect(kept).toEqual(all.slice(0, kept.length));
          expect(kept.length).toBeGreaterThanOrEqual(target);
          if (finished) expect(kept.length).toBe(target);
          await truncateLogAbove(after, target, { commitOffset: 0 });
          const done = await SegmentLog.open(after);
          expect(done.tailOffset).toBe(target);
          await done.close();
        },
      ),
      { numRuns: 100 },
    );
  });
});

/** The base offset of the `n`th segment file (counting from 0), from its header. */
async function firstOffsetOfSegment(opts: LogOptions, n: number): Promise<number> {
  const dir = shardDir(opts.root);
  const logs = (await readdir(dir)).filter((f) => f.endsWith('.log')).sort();
  const header = decodeSegmentHeader(await readFile(join(dir, logs[n]!)));
  if (isHeaderVerdict(header)) throw new Error(`segment ${logs[n]} has a bad header`);
  return header.baseOffset;
}
