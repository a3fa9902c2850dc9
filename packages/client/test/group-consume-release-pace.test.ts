// Goal: consume() sizes its next poll to the pace the worker showed (ef3410b6: "the next poll
// asks for what the worker gets through in half the hold bound at the pace it just showed"). A
// batch whose tail the loop released (held past a third of the claim) was not worked through:
// the released records must not count as done, or the pace reads many times quicker than the
// worker is and the next poll claims far more than it can get to in time.
// Method: a Group over the fake broker connection of group-consume-rig; real timers; a worker
// taking 150 ms a record under a 600 ms claim (a 200 ms hold bound, 100 ms of work a poll).
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { Group } from '../src/projections/group.js';
import { decodeAll, fakeHost, records } from './group-consume-rig.js';

describe('consume pace after a release', () => {
  it('records_released_past_the_hold_bound_do_not_count_toward_the_workers_pace', async () => {
    const { host, streams } = fakeHost();
    const g = new Group(host, 'jobs', 'billing');
    const sent = () =>
      streams.flatMap((stream) => decodeAll(stream.writes).map((m) => ({ stream, m })));
    const polls = () => sent().filter((x) => x.m.type === 'group_poll');
    const answerPoll = (i: number, from: number, n: number) => {
      const p = polls()[i]!;
      const id = (p.m as { request_id: number }).request_id;
      p.stream.push({ type: 'group_records', request_id: id, records: records(from, n) });
    };
    const it = g.consume({ max: 100, waitMs: 1_000, visibilityMs: 600 })[Symbol.asyncIterator]();
    const first = it.next();
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    answerPoll(0, 0, 100);
    expect((await first).value?.offset).toBe(0);
    await new Promise((r) => setTimeout(r, 150)); // the worker's job
    expect((await it.next()).value?.offset).toBe(1);
    await new Promise((r) => setTimeout(r, 150)); // past the 200 ms hold bound now
    const next = it.next();
    // The loop released offsets 2..99 (98 records): the worker worked 2 records in ~300 ms.
    const released = () =>
      sent().filter((x) => x.m.type === 'group_nack' || x.m.type === 'group_nack_batch');
    await waitFor(() => released().length > 0, 'the held records released', 5_000);
    await waitFor(() => polls().length >= 2, 'the poll ahead', 5_000);
    answerPoll(1, 2, 1);
    expect((await next).value?.offset).toBe(2);
    // The poll made now is sized to ~150 ms a record: 100 ms of work is 1 record, not ~33
    // (300 ms over 100 records, the released 98 counted as worked).
    await waitFor(() => polls().length >= 3, 'the next poll ahead', 5_000);
    const asked = (polls()[2]!.m as { max_records: number }).max_records;
    expect(asked).toBeLessThanOrEqual(2);
    await it.return?.();
  });
});
