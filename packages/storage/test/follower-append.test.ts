/**
 * Goal: a follower's append places records at the leader's offsets, answers a gap when a batch
 * starts past its tail, compares (never rewrites) what it already holds so resends are safe,
 * and answers a conflict at the first differing record without writing anything; with tail
 * truncation, a follower whose uncommitted suffix diverged converges on its leader's log.
 * Method: real segment logs with 4 KiB segments; a property test ships a random leader log as
 * random batches, resent, reordered into gaps and overlapping, and compares the logs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LogPoisonedError } from '../src/errors.js';
import { FaultyIo } from '../src/io/faulty-io.js';
import { nodeIo } from '../src/io/node-io.js';
import { FollowerAppender } from '../src/log/follower-append.js';
import { type LogOptions, SegmentLog } from '../src/log/segment-log.js';
import { truncateLogAbove } from '../src/log/tail-truncation.js';
import { SHARD, payload, scratchRoot } from './helpers.js';

const enc = new TextEncoder();

async function openFollower(io?: FaultyIo): Promise<{ log: SegmentLog; opts: LogOptions }> {
  const opts: LogOptions = {
    root: await scratchRoot(),
    shard: SHARD,
    fsync: 'onCommit',
    segmentBytes: 4096,
    preallocateBytes: 0,
    ...(io ? { io } : {}),
  };
  return { log: await SegmentLog.open(opts), opts };
}

async function contents(log: SegmentLog): Promise<string[]> {
  const out: string[] = [];
  let at = log.baseOffset;
  while (at < log.tailOffset) {
    const r = await log.read(at);
    if (r.kind !== 'records') throw new Error(`trimmed at ${at}`);
    for (const rec of r.records) out.push(Buffer.from(rec.payload).toString('hex'));
    at = r.next;
  }
  return out;
}

const batch = (...words: string[]) => words.map((w) => enc.encode(w));

/** An onCommit follower log over FaultyIo (syncs held or failed on demand), and its appender. */
async function faultyFollower() {
  const io = new FaultyIo(nodeIo);
  const { log } = await openFollower(io);
  return { io, log, f: new FollowerAppender(log) };
}

describe('follower append', () => {
  it('a_follower_append_at_the_tail_is_written_at_the_leaders_offsets', async () => {
    const { log } = await openFollower();
    const f = new FollowerAppender(log);
    expect(await f.appendAt(0, batch('a', 'b'))).toEqual({ kind: 'appended', tail: 2 });
    expect(await f.appendAt(2, batch('c'))).toEqual({ kind: 'appended', tail: 3 });
    expect(await contents(log)).toEqual(['a', 'b', 'c'].map((w) => Buffer.from(w).toString('hex')));
    await log.close();
  });

  it('a_follower_append_past_the_tail_answers_a_gap_naming_the_expected_offset', async () => {
    const { log } = await openFollower();
    const f = new FollowerAppender(log);
    await f.appendAt(0, batch('a'));
    expect(await f.appendAt(5, batch('f'))).toEqual({ kind: 'gap', expected: 1 });
    expect(log.tailOffset).toBe(1);
    await log.close();
  });

  it('a_resent_batch_is_compared_and_only_its_records_past_the_tail_are_appended', async () => {
    const { log } = await openFollower();
    const f = new FollowerAppender(log);
    await f.appendAt(0, batch('a', 'b', 'c'));
    // Entirely held: nothing written; straddling: only 'd' and 'e' are new.
    expect(await f.appendAt(0, batch('a', 'b'))).toEqual({ kind: 'appended', tail: 3 });
    expect(await f.appendAt(1, batch('b', 'c', 'd', 'e'))).toEqual({ kind: 'appended', tail: 5 });
    expect(log.tailOffset).toBe(5);
    await log.close();
  });

  it('a_resent_batch_overlapping_records_still_being_synced_is_compared_not_asserted', async () => {
    // The replica server appends with `until: 'written'` and answers once the sync ends, so a
    // resend (or a new leader's overlapping first batch) can arrive while that sync runs.
    const { io, log, f } = await faultyFollower();
    await f.appendAt(0, batch('a'));
    const hold = io.holdDatasyncs();
    expect(await f.appendAt(1, batch('b', 'c'), { until: 'written' })).toEqual({
      kind: 'appended',
      tail: 3,
    });
    const synced = log.waitDurable(3);
    const resend = await f.appendAt(1, batch('b', 'c', 'd'), { until: 'written' }).then(
      (r) => r,
      (e: unknown) => e,
    );
    hold.release();
    await synced;
    await log.close();
    expect(resend).toEqual({ kind: 'appended', tail: 4 });
  });

  it('a_resend_to_a_poisoned_follower_log_fails_with_the_poison', async () => {
    const { io, log, f } = await faultyFollower();
    await f.appendAt(0, batch('a'));
    io.failDatasyncs('EIO');
    await expect(f.appendAt(1, batch('b'))).rejects.toBeInstanceOf(LogPoisonedError);
    // The leader got no answer and sends the batch again.
    const resend = await f.appendAt(1, batch('b')).then(
      (r) => r,
      (e: unknown) => e,
    );
    // The log is poisoned by the injected fault: its close fails the same way.
    await log.close().catch(() => undefined);
    expect(resend).toBeInstanceOf(LogPoisonedError);
  });

  it('a_batch_whose_bytes_differ_from_the_held_records_answers_a_conflict_and_writes_nothing', async () => {
    const { log } = await openFollower();
    const f = new FollowerAppender(log);
    await f.appendAt(0, batch('a', 'b', 'c'));
    expect(await f.appendAt(1, batch('b', 'X', 'd'))).toEqual({ kind: 'conflict', at: 2 });
    expect(log.tailOffset).toBe(3);
    await log.close();
  });

  it('a_diverged_follower_truncated_at_the_conflict_converges_on_its_leaders_log', async () => {
    const { log, opts } = await openFollower();
    const f = new FollowerAppender(log);
    // Records 0..39 are committed; 40..59 were written by an old leader and never committed.
    const committed = Array.from({ length: 40 }, (_, i) => payload(i, 200));
    await f.appendAt(0, committed);
    await f.appendAt(
      40,
      Array.from({ length: 20 }, (_, i) => payload(1000 + i, 300)),
    );
    const leader = [...committed, ...Array.from({ length: 30 }, (_, i) => payload(2000 + i, 250))];
    // The new leader's first batch overlaps one known-good record.
    const answer = await f.appendAt(39, leader.slice(39, 70));
    expect(answer).toEqual({ kind: 'conflict', at: 40 });
    await log.close();
    await truncateLogAbove(opts, 40, { commitOffset: 40 });
    const reopened = await SegmentLog.open(opts);
    const g = new FollowerAppender(reopened);
    expect(await g.appendAt(39, leader.slice(39, 70))).toEqual({ kind: 'appended', tail: 70 });
    expect(await contents(reopened)).toEqual(leader.map((p) => Buffer.from(p).toString('hex')));
    await reopened.close();
  });

  it('a_leader_log_shipped_with_resends_gaps_and_overlaps_arrives_whole', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 600 }), { minLength: 1, maxLength: 60 }),
        fc.array(fc.record({ start: fc.nat(), len: fc.integer({ min: 1, max: 8 }) }), {
          maxLength: 40,
        }),
        async (sizes, sends) => {
          const leader = sizes.map((s, i) => payload(i, s));
          const { log } = await openFollower();
          const f = new FollowerAppender(log);
          // Random batches (resends, gaps, overlaps), then the leader's cursor catches up by
          // following the follower's answers, as a shipping pass would.
          for (const s of sends) {
            const start = s.start % leader.length;
            const r = await f.appendAt(start, leader.slice(start, start + s.len));
            expect(r.kind).not.toBe('conflict');
          }
          let cursor = 0;
          while (log.tailOffset < leader.length) {
            const r = await f.appendAt(cursor, leader.slice(cursor, cursor + 8));
            cursor = r.kind === 'gap' ? r.expected : r.kind === 'appended' ? r.tail : -1;
            expect(cursor).toBeGreaterThanOrEqual(0);
          }
          expect(await contents(log)).toEqual(leader.map((p) => Buffer.from(p).toString('hex')));
          await log.close();
        },
      ),
      { numRuns: 40 },
    );
  });
});
