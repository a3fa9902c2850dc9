/**
 * Goal: a follower node that fails for many shard logs at once (a broker down) is warned of once
 * and then at the period of its oldest failing log, not once per shard log; it is said to be
 * back once, when its last failing log answers, with every log that failed in the series; a
 * log whose shipping stops (the whole shipper, or to one halted follower) leaves the tally
 * silently. Method: the pure tracker the replicator logs from, driven by backoff sequences.
 */
import { describe, expect, it } from 'vitest';
import { FailingFollowers } from '../src/cluster/failing-followers.js';

const AFTER = 3;
const EVERY = 5;

describe('failing followers', () => {
  it('a_follower_failing_for_many_shard_logs_is_warned_of_once_and_said_to_be_back_once', () => {
    const t = new FailingFollowers(AFTER, EVERY);
    const said: string[] = [];
    const note = (n: ReturnType<FailingFollowers['backoff']>) => {
      if (n !== null) said.push(`${n.kind} ${n.node} ${n.logs}`);
    };
    // Four shard logs back off from n2 in step, 3 + 2 * EVERY times each.
    const logs = ['a/stream', 'a/cache', 'b/stream', 'b/cache'];
    for (let b = 1; b <= AFTER + 2 * EVERY; b++) for (const l of logs) note(t.backoff('n2', l, b));
    expect(t.failingLogs('n2')).toBe(4);
    // One warning when the first crossed, then one per period of the oldest: not 4 of each.
    expect(said).toEqual(['warn n2 1', 'warn n2 4', 'warn n2 4']);
    // Another node keeps its own tally.
    note(t.backoff('n3', 'a/stream', AFTER));
    expect(said.at(-1)).toBe('warn n3 1');
    // n2 is back only when its last failing log answers, with how many had failed.
    for (const l of logs.slice(0, 3)) note(t.resumed('n2', l, AFTER + 2 * EVERY));
    expect(said.filter((s) => s.startsWith('back'))).toEqual([]);
    note(t.resumed('n2', 'b/cache', AFTER + 2 * EVERY));
    expect(said.at(-1)).toBe('back n2 4');
    // A log that answered before crossing the bound was never warned of: nothing to say.
    note(t.resumed('n3', 'b/stream', AFTER - 1));
    expect(said.at(-1)).toBe('back n2 4');
  });

  it('a_shard_log_whose_shipper_stops_leaves_the_tally_without_a_word', () => {
    const t = new FailingFollowers(AFTER, EVERY);
    expect(t.backoff('n2', 'a/stream', AFTER)).toEqual({ kind: 'warn', node: 'n2', logs: 1 });
    expect(t.backoff('n2', 'b/stream', AFTER)).toBeNull();
    t.forget('a/stream');
    expect(t.failingLogs('n2')).toBe(1);
    // The next oldest, b, now sets the period.
    expect(t.backoff('n2', 'b/stream', AFTER + EVERY)).toEqual({
      kind: 'warn',
      node: 'n2',
      logs: 1,
    });
    t.forget('b/stream');
    expect(t.failingLogs('n2')).toBe(0);
    // Failing again later is a fresh first warning, and its answer a fresh "back".
    expect(t.backoff('n2', 'c/stream', AFTER)).toEqual({ kind: 'warn', node: 'n2', logs: 1 });
    expect(t.resumed('n2', 'c/stream', AFTER)).toEqual({ kind: 'back', node: 'n2', logs: 1 });
  });

  it('a_follower_is_said_to_be_back_with_every_log_that_failed_in_the_series_not_the_most_at_once', () => {
    const t = new FailingFollowers(AFTER, EVERY);
    t.backoff('n2', 'a', AFTER);
    t.backoff('n2', 'b', AFTER);
    expect(t.resumed('n2', 'a', AFTER)).toBeNull();
    t.backoff('n2', 'c', AFTER);
    expect(t.resumed('n2', 'b', AFTER)).toBeNull();
    // a, b and c failed, never more than two at once.
    expect(t.resumed('n2', 'c', AFTER)).toEqual({ kind: 'back', node: 'n2', logs: 3 });
  });

  it('a_log_that_stops_shipping_to_one_follower_leaves_only_that_followers_tally', () => {
    const t = new FailingFollowers(AFTER, EVERY);
    t.backoff('n2', 'a', AFTER);
    t.backoff('n3', 'a', AFTER);
    t.backoff('n2', 'b', AFTER);
    // The shipper of a halted n2 (diverged, fenced): no backoff or answer will follow for it.
    t.forget('a', 'n2');
    expect(t.failingLogs('n2')).toBe(1);
    expect(t.failingLogs('n3')).toBe(1);
    // b answering is the end of n2's series, which counts only the logs still shipping.
    expect(t.resumed('n2', 'b', AFTER)).toEqual({ kind: 'back', node: 'n2', logs: 1 });
    // A stopped log that was n2's only failing one leaves room for a fresh first warning.
    t.backoff('n2', 'c', AFTER);
    t.forget('c', 'n2');
    expect(t.backoff('n2', 'd', AFTER)).toEqual({ kind: 'warn', node: 'n2', logs: 1 });
  });
});
