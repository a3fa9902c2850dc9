/**
 * Goal: a quorum shard's waiter list applies and acks batches only once the commit mark covers
 * them, in offset order; a publisher waiting past the timeout is answered `quorum_timeout` while
 * its batch still waits for the mark (readers never see a hole); a retired shard fails its
 * waiters without applying them; a shard that stops needing a majority releases everything.
 * And through a real Shard over a real log: nothing past the mark reaches a subscriber, the
 * `latest` offset, the group-poll wake-up or the publisher.
 * Method: the gate with plain batches and a test clock; a Shard over a SegmentLog in a scratch
 * directory whose mark the test moves by hand; waits are `waitFor`, never sleeps.
 */
import { SegmentLog } from '@felix/storage';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { QuorumAbandonedError, QuorumTimeoutError } from '../src/errors.js';
import { type QuorumOutcome, QuorumGate } from '../src/streams/quorum-gate.js';
import { Shard, type ShardStore } from '../src/streams/shard.js';

interface B {
  first: number;
  count: number;
}

function gate(timeoutMs = 60_000) {
  const applied: number[] = [];
  const outcomes: QuorumOutcome[] = [];
  const g = new QuorumGate<B>({
    timeoutMs,
    apply: (b) => applied.push(b.first),
    outcome: (o) => outcomes.push(o),
  });
  return { g, applied, outcomes };
}

function settledState(p: Promise<void>): { state: 'pending' | 'ok' | Error } {
  const s: { state: 'pending' | 'ok' | Error } = { state: 'pending' };
  p.then(
    () => {
      s.state = 'ok';
    },
    (err: Error) => {
      s.state = err;
    },
  );
  return s;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('quorum waiter list', () => {
  it('waiters_are_applied_and_acked_in_offset_order_only_once_the_mark_covers_them', async () => {
    const { g, applied, outcomes } = gate();
    const acks = [0, 2, 5].map((first, k) => settledState(g.hold({ first, count: [2, 3, 1][k]! })));
    expect(g.size).toBe(3);
    g.advance(4); // covers [0,2) only: [2,5) is not whole
    await Promise.resolve();
    expect(applied).toEqual([0]);
    expect(acks.map((a) => a.state)).toEqual(['ok', 'pending', 'pending']);
    g.advance(3); // the mark never moves back
    g.advance(6);
    await Promise.resolve();
    expect(applied).toEqual([0, 2, 5]);
    expect(acks.map((a) => a.state)).toEqual(['ok', 'ok', 'ok']);
    expect(outcomes).toEqual(['committed', 'committed', 'committed']);
    expect(g.size).toBe(0);
    // A batch the mark already covers passes straight through.
    await g.hold({ first: 6, count: 0 });
    expect(applied).toEqual([0, 2, 5, 6]);
  });

  it('a_waiter_past_the_timeout_is_answered_quorum_timeout_and_its_batch_still_waits_for_the_mark', async () => {
    const { g, applied, outcomes } = gate(20);
    const first = settledState(g.hold({ first: 0, count: 1 }));
    await waitFor(() => first.state !== 'pending', 'the first waiter to time out');
    expect(first.state).toBeInstanceOf(QuorumTimeoutError);
    expect(applied).toEqual([]);
    expect(g.size).toBe(1);
    const second = settledState(g.hold({ first: 1, count: 1 }));
    g.advance(2);
    await Promise.resolve();
    // Both batches are applied in order; only the second publisher is acked.
    expect(applied).toEqual([0, 1]);
    expect(second.state).toBe('ok');
    expect(outcomes).toEqual(['timeout', 'committed']);
  });

  it('an_abandoned_list_fails_its_publishers_and_applies_nothing', async () => {
    const { g, applied, outcomes } = gate();
    const a = settledState(g.hold({ first: 0, count: 1 }));
    g.abandon(new QuorumAbandonedError('s'));
    await Promise.resolve();
    expect(a.state).toBeInstanceOf(QuorumAbandonedError);
    expect(applied).toEqual([]);
    expect(outcomes).toEqual(['abandoned']);
  });

  it('an_opened_list_releases_every_waiter_at_once', async () => {
    const { g, applied } = gate();
    const acks = [0, 1].map((first) => settledState(g.hold({ first, count: 1 })));
    g.open();
    await Promise.resolve();
    expect(applied).toEqual([0, 1]);
    expect(acks.map((a) => a.state)).toEqual(['ok', 'ok']);
  });
});

describe('a quorum shard', () => {
  async function quorumShard() {
    const dir = await tempDir('felix-quorum-shard-');
    cleanups.push(dir.cleanup);
    const log = await SegmentLog.open({
      root: dir.path,
      shard: { tenant: 't', namespace: 'n', stream: 's', shard: 0 },
      fsync: 'onCommit',
    });
    const store: ShardStore = {
      log,
      get baseOffset() {
        return log.baseOffset;
      },
      get tailOffset() {
        return log.tailOffset;
      },
      get newestTimestampMicros() {
        return log.newestTimestampMicros;
      },
      append: (p, t) => log.append(p, { timestampMicros: t }),
      read: async (from, budget) => {
        const r = await log.read(from, budget);
        return r.kind === 'trimmed' ? { kind: 'trimmed', oldest: r.oldest } : r;
      },
      offsetForTime: (t) => log.offsetForTime(t),
      close: () => log.close(),
    };
    const woken: number[] = [];
    const shard = new Shard(
      't/n/s/0',
      store,
      { records: 1024, bytes: 1 << 20 },
      {
        onDrop: () => undefined,
        // Consumer groups are woken here and read up to `appliedNext`.
        onApply: (_s, batch) => woken.push(batch.first),
      },
    );
    cleanups.push(() => log.close());
    shard.holdToCommit(60_000);
    return { shard, woken };
  }

  it('a_quorum_shard_shows_nothing_past_the_commit_mark_to_subscribers_latest_or_publishers', async () => {
    const { shard, woken } = await quorumShard();
    const sub = shard.subscribe({ kind: 'earliest' }, 16, false);
    if (!sub.ok) throw new Error('subscribe failed');
    const data = (s: string) => [new TextEncoder().encode(s)];
    const acks = ['a', 'b', 'c'].map((v) => shard.publish(data(v), 1));
    const states = acks.map((p) => settledState(p.then(() => undefined)));
    await waitFor(() => shard.quorumWaiting === 3, 'three batches durable and held');
    expect(shard.appliedNext).toBe(0);
    expect(sub.sub.queue.depth).toBe(0);
    expect(shard.subscribe({ kind: 'latest' }, 16, false).ok && shard.appliedNext).toBe(0);
    expect(states.map((s) => s.state)).toEqual(['pending', 'pending', 'pending']);
    expect(woken).toEqual([]);
    shard.commitTo(2);
    await waitFor(() => states[1]!.state === 'ok', 'the two committed publishes to be acked');
    expect(states[2]!.state).toBe('pending');
    expect(shard.appliedNext).toBe(2);
    expect(sub.sub.queue.poll()?.map((b) => b.first)).toEqual([0, 1]);
    expect(woken).toEqual([0, 1]);
    expect(shard.pending).toBe(1);
    // Back to `leader`: what waits is applied and acked at once.
    shard.holdToCommit(null);
    await waitFor(() => states[2]!.state === 'ok', 'the held publish to be acked');
    expect(shard.appliedNext).toBe(3);
    expect(shard.pending).toBe(0);
  });
});
