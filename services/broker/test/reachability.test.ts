/**
 * Goal: a control-plane outage is a few lines in the broker's log, whatever the number of calls
 * that failed during it: one warning when the first call fails, a reminder each minute while
 * calls keep failing, one line once every kind of call that failed answers again (how long,
 * how many calls failed); one endpoint failing while others answer does not flap; a call its
 * caller abandoned says nothing about the control plane. Method: the pure tracker, then the real client against a
 * closed port, its outcomes recorded.
 */
import { releasedTcpPort } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { ControlPlaneClient } from '../src/cluster/control-plane-client.js';
import { Reachability, callKind } from '../src/cluster/reachability.js';

describe('control-plane reachability', () => {
  it('a_control_plane_outage_is_two_log_lines_not_one_per_call', () => {
    const r = new Reachability(60_000, 30_000);
    expect(r.answered('heartbeat', 0)).toBeNull();
    expect(r.failed('heartbeat', 1_000)).toEqual({ kind: 'lost', call: 'heartbeat' });
    // Heartbeats, the feeds and the node book failing for twelve seconds: nothing more to say.
    for (let i = 0; i < 48; i++)
      expect(r.failed(i % 2 === 0 ? 'streams' : 'nodes', 1_100 + 250 * i)).toBeNull();
    // Back only once every kind that failed has answered; away from the first failure to the
    // first answer after the last one.
    expect(r.answered('heartbeat', 13_000)).toBeNull();
    expect(r.answered('streams', 13_050)).toBeNull();
    expect(r.answered('nodes', 13_100)).toEqual({
      kind: 'back',
      calls: ['heartbeat', 'streams', 'nodes'],
      awayMs: 12_000,
      failedCalls: 49,
    });
    expect(r.answered('heartbeat', 13_200)).toBeNull();
    // The next outage is a new one.
    expect(r.failed('heartbeat', 20_000)).toEqual({ kind: 'lost', call: 'heartbeat' });
    expect(r.answered('heartbeat', 20_500)).toMatchObject({ kind: 'back', failedCalls: 1 });
  });

  it('one_endpoint_that_keeps_failing_while_others_answer_is_one_outage_with_reminders', () => {
    // A proxy that cuts the feeds' long polls while heartbeats get through.
    const r = new Reachability(60_000, 30_000);
    const said: string[] = [];
    for (let t = 0; t <= 130_000; t += 2_000) {
      const a = r.failed('shard-assignments', t);
      const b = r.answered('heartbeat', t + 1);
      for (const n of [a, b]) if (n !== null) said.push(n.kind);
    }
    // Not a warning and an "answering again" every two seconds: one outage, reminded each minute.
    expect(said).toEqual(['lost', 'still', 'still']);
    expect(callKind('shard-assignments changes')).toBe('shard-assignments');
    expect(callKind('streams snapshot')).toBe('streams');
    expect(callKind('heartbeat')).toBe('heartbeat');
  });

  it('a_kind_of_call_that_stopped_failing_counts_as_answered_once_others_answer_for_a_while', () => {
    const r = new Reachability(60_000, 30_000);
    r.failed('heartbeat', 0);
    r.failed('streams', 1_000);
    // The control plane is back at 5 s: heartbeats answer, the feed's new long poll is in flight.
    expect(r.answered('heartbeat', 5_000)).toBeNull();
    expect(r.answered('heartbeat', 20_000)).toBeNull();
    // Thirty seconds after the feed last failed, the next answer ends the outage; the time
    // away ends at the first answer (5 s), not when the feed's silence cleared it (31 s).
    expect(r.answered('heartbeat', 31_000)).toMatchObject({
      kind: 'back',
      failedCalls: 2,
      awayMs: 5_000,
    });
  });

  it('the_time_away_ends_at_the_first_answer_after_the_last_failure', () => {
    const r = new Reachability(60_000, 30_000);
    r.failed('heartbeat', 0);
    r.failed('streams', 1_000);
    // Heartbeats answer at 2 s, but the feed fails once more at 8 s: the outage went on.
    expect(r.answered('heartbeat', 2_000)).toBeNull();
    r.failed('streams', 8_000);
    expect(r.answered('heartbeat', 9_000)).toBeNull();
    expect(r.answered('streams', 12_000)).toMatchObject({ kind: 'back', awayMs: 9_000 });
  });

  it('a_call_its_caller_abandoned_is_no_outcome_of_the_control_plane', async () => {
    const port = await releasedTcpPort();
    const outcomes: boolean[] = [];
    const client = new ControlPlaneClient(`http://127.0.0.1:${port}`, undefined, {
      onOutcome: (ok) => outcomes.push(ok),
    });
    await expect(client.nodes(AbortSignal.abort())).rejects.toThrow();
    expect(outcomes).toEqual([]);
    await expect(client.nodes()).rejects.toThrow(/ECONNREFUSED/);
    expect(outcomes).toEqual([false]);
  });
});
