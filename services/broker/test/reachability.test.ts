/**
 * Goal: a control-plane outage is two lines in the broker's log, whatever the number of calls
 * that failed during it: one warning when the first call fails, one line when an answer comes
 * again with how long it was away and how many calls failed; a call its caller abandoned says
 * nothing about the control plane. Method: the pure tracker, then the real client against a
 * closed port, its outcomes recorded.
 */
import { type AddressInfo, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ControlPlaneClient } from '../src/cluster/control-plane-client.js';
import { Reachability } from '../src/cluster/reachability.js';

describe('control-plane reachability', () => {
  it('a_control_plane_outage_is_two_log_lines_not_one_per_call', () => {
    const r = new Reachability();
    expect(r.answered(0)).toBeNull();
    expect(r.failed(1_000)).toEqual({ kind: 'lost' });
    // Heartbeats, two feeds and a report failing for twelve seconds: nothing more to say.
    for (let t = 1_100; t < 13_000; t += 250) expect(r.failed(t)).toBeNull();
    expect(r.lost).toBe(true);
    expect(r.answered(13_000)).toEqual({ kind: 'back', awayMs: 12_000, failedCalls: 49 });
    expect(r.answered(13_100)).toBeNull();
    // The next outage is a new one.
    expect(r.failed(20_000)).toEqual({ kind: 'lost' });
    expect(r.answered(20_500)).toEqual({ kind: 'back', awayMs: 500, failedCalls: 1 });
  });

  it('a_call_its_caller_abandoned_is_no_outcome_of_the_control_plane', async () => {
    const gone = createServer();
    await new Promise<void>((ok) => gone.listen(0, '127.0.0.1', ok));
    const port = (gone.address() as AddressInfo).port;
    await new Promise<void>((ok) => gone.close(() => ok()));
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
