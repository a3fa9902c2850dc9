/**
 * Goal: an empty follower log can be made to start at its leader's oldest retained offset, a
 * log already starting there is left as it is, a log holding other records is refused with
 * nothing changed, and a power loss during a bootstrap leaves an empty log.
 * Method: real segment logs, and PowerLossIo cut after every operation count of a bootstrap.
 */
import { describe, expect, it } from 'vitest';
import { bootstrapLogAt } from '../src/log/bootstrap.js';
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
