/**
 * Goal: an empty follower log can be made to start at its leader's oldest retained offset, a
 * log already starting there is left as it is, a log holding other records is refused with
 * nothing changed, and a power loss during a bootstrap leaves an empty log. A rebuild empties
 * a log whose records all lie below the offered base (and only such a log), crash-safely.
 * Method: real segment logs, and PowerLossIo cut after every operation count of a bootstrap.
 */
import { describe, expect, it } from 'vitest';
import { bootstrapLogAt, rebuildLogAt } from '../src/log/bootstrap.js';
import { FollowerAppender } from '../src/log/follower-append.js';
import { type LogOptions, SegmentLog } from '../src/log/segment-log.js';
import { payload, prng, scratchRoot, SHARD } from './helpers.js';
import { PowerLossIo } from './support/power-loss-io.js';

async function options(): Promise<LogOptions> {
  return { root: await scratchRoot(), shard: SHARD, fsync: 'onCommit', segmentBytes: 4096 };
}

describe('follower bootstrap', () => {
  it('an_empty_follower_log_bootstraps_at_its_leaders_oldest_offset', async () => {
    const opts = await options();
    // A follower that never opened its log, and one whose log exists but is empty.
    expect(await bootstrapLogAt(opts, 500)).toEqual({ kind: 'ready', tail: 500 });
    const log = await SegmentLog.open(opts);
    expect([log.baseOffset, log.tailOffset]).toEqual([500, 500]);
    const f = new FollowerAppender(log);
    expect(await f.appendAt(500, [payload(500), payload(501)])).toEqual({
      kind: 'appended',
      tail: 502,
    });
    await log.close();
    const reopened = await SegmentLog.open(opts);
    const r = await reopened.read(500);
    expect(r.kind === 'records' && r.records.map((x) => x.offset)).toEqual([500, 501]);
    await reopened.close();
    // Starting there already: ready, records kept, shipping resumes at the tail.
    expect(await bootstrapLogAt(opts, 500)).toEqual({ kind: 'ready', tail: 502 });
  });

  it('a_follower_log_holding_other_records_refuses_a_bootstrap_and_keeps_them', async () => {
    const opts = await options();
    const log = await SegmentLog.open(opts);
    await log.append([payload(0), payload(1)]);
    await log.close();
    expect(await bootstrapLogAt(opts, 300)).toEqual({ kind: 'conflict', base: 0, tail: 2 });
    const reopened = await SegmentLog.open(opts);
    expect([reopened.baseOffset, reopened.tailOffset]).toEqual([0, 2]);
    await reopened.close();
  });

  it('a_power_loss_during_a_bootstrap_leaves_an_empty_log_that_bootstraps_again', async () => {
    const outcomes = new Set<number>();
    for (let cut = 0; cut < 40; cut++) {
      const io = new PowerLossIo();
      await io.mkdir('/data');
      const opts: LogOptions = { root: '/data', shard: SHARD, fsync: 'onCommit', io };
      await (await SegmentLog.open(opts)).close();
      io.failAfter(cut, prng(cut + 1));
      // The power loss fails the bootstrap; the disk it left is what is judged.
      await bootstrapLogAt(opts, 1000).catch(() => undefined);
      const disk = io.lost ?? io.crash(prng(cut + 7));
      const after: LogOptions = { ...opts, io: disk };
      const log = await SegmentLog.open(after);
      // Empty, at the old base or the new one, never anything else.
      expect(log.tailOffset).toBe(log.baseOffset);
      expect([0, 1000]).toContain(log.baseOffset);
      outcomes.add(log.baseOffset);
      await log.close();
      expect(await bootstrapLogAt(after, 1000)).toEqual({ kind: 'ready', tail: 1000 });
    }
    expect([...outcomes].sort((a, b) => a - b)).toEqual([0, 1000]);
  });
});

/** A log of `n` records from 0, in segments small enough that it spans several. */
async function logOf(opts: LogOptions, n: number): Promise<void> {
  const log = await SegmentLog.open(opts);
  for (let i = 0; i < n; i += 10)
    await log.append(Array.from({ length: Math.min(10, n - i) }, (_, j) => payload(i + j)));
  await log.close();
}

describe('follower rebuild', () => {
  it('a_rebuild_empties_a_follower_log_left_below_its_leaders_base_and_starts_it_there', async () => {
    const opts = await options();
    await logOf(opts, 120);
    expect(await rebuildLogAt(opts, 300)).toEqual({ kind: 'ready', tail: 300 });
    const log = await SegmentLog.open(opts);
    expect([log.baseOffset, log.tailOffset]).toEqual([300, 300]);
    expect(await new FollowerAppender(log).appendAt(300, [payload(300)])).toEqual({
      kind: 'appended',
      tail: 301,
    });
    await log.close();
    // Asked again once it holds records from the base on: nothing below it is left to discard,
    // and what it holds from there is not this call's to drop.
    expect(await rebuildLogAt(opts, 300)).toEqual({ kind: 'conflict', base: 300, tail: 301 });
    // A log ending exactly at the base has nothing the leader still holds: emptied too.
    const other = await options();
    await logOf(other, 40);
    expect(await rebuildLogAt(other, 40)).toEqual({ kind: 'ready', tail: 40 });
    expect(await rebuildLogAt(other, 40)).toEqual({ kind: 'ready', tail: 40 });
  });

  it('a_rebuild_keeps_a_log_holding_records_at_or_above_the_base', async () => {
    const opts = await options();
    await logOf(opts, 50);
    expect(await rebuildLogAt(opts, 30)).toEqual({ kind: 'conflict', base: 0, tail: 50 });
    const log = await SegmentLog.open(opts);
    expect([log.baseOffset, log.tailOffset]).toEqual([0, 50]);
    const r = await log.read(0, { maxRecords: 50 });
    expect(r.kind === 'records' && r.records.length).toBe(50);
    await log.close();
  });

  it('a_power_loss_during_a_rebuild_leaves_records_below_the_base_or_the_empty_log_at_it', async () => {
    const outcomes = new Set<string>();
    for (let cut = 0; cut < 60; cut++) {
      const io = new PowerLossIo();
      await io.mkdir('/data');
      const opts: LogOptions = { root: '/data', shard: SHARD, fsync: 'onCommit', io };
      await logOf({ ...opts, segmentBytes: 4096 }, 60);
      io.failAfter(cut, prng(cut + 1));
      // The power loss fails the rebuild; the disk it left is what is judged.
      await rebuildLogAt(opts, 1000).catch(() => undefined);
      const disk = io.lost ?? io.crash(prng(cut + 7));
      const after: LogOptions = { ...opts, io: disk };
      const log = await SegmentLog.open(after);
      // Either still a prefix of the old records (all below the base), or empty at the base.
      if (log.baseOffset === 1000) expect(log.tailOffset).toBe(1000);
      else {
        expect(log.baseOffset).toBe(0);
        expect(log.tailOffset).toBeLessThanOrEqual(60);
      }
      outcomes.add(log.baseOffset === 1000 ? 'rebuilt' : log.tailOffset > 0 ? 'records' : 'empty');
      await log.close();
      expect(await rebuildLogAt(after, 1000)).toEqual({ kind: 'ready', tail: 1000 });
    }
    expect(outcomes.has('rebuilt') && outcomes.has('records')).toBe(true);
  });
});
