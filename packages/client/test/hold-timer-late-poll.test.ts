// Found by a review: the hold timer (48f7f11a) releases what the loop holds while a long job runs, but a
// poll ahead still out when the timer fires is never covered: when it answers later (during the
// same job) its records sit in the loop until the caller asks for more, past their claims.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { Group } from '../src/projections/group.js';
import { decodeAll, fakeHost, records } from './group-consume-rig.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('hold timer and a poll ahead answering after it fired', () => {
  it('records_a_poll_ahead_brings_after_the_hold_timer_fired_are_released_before_their_claims_lapse', async () => {
    const { host, streams } = fakeHost();
    const g = new Group(host, 'jobs', 'billing');
    const sent = () =>
      streams.flatMap((stream) => decodeAll(stream.writes).map((m) => ({ stream, m })));
    const polls = () => sent().filter((x) => x.m.type === 'group_poll');
    const nacked = () =>
      sent()
        .filter((x) => x.m.type === 'group_nack')
        .map((x) => (x.m as { offset: number }).offset)
        .sort((a, b) => a - b);
    const answerPoll = (i: number, from: number, n: number) => {
      const p = polls()[i]!;
      const id = (p.m as { request_id: number }).request_id;
      p.stream.push({ type: 'group_records', request_id: id, records: records(from, n) });
    };
    // 600 ms claim: a 200 ms hold bound.
    const it = g.consume({ max: 2, waitMs: 1_000, visibilityMs: 600 })[Symbol.asyncIterator]();
    const first = it.next();
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    answerPoll(0, 0, 2);
    expect((await first).value?.offset).toBe(0);
    await waitFor(() => polls().length === 2, 'the poll ahead', 5_000);
    // The caller works on offset 0 for a long time (a long job, its own claim extended).
    await sleep(300);
    // The timer (at 200 ms) released the rest of the batch: the fix works for that.
    expect(nacked()).toEqual([1]);
    // The poll ahead, still out when the timer fired, now answers: its claims run 600 ms.
    answerPoll(1, 2, 2);
    // What the loop holds for later while the job runs goes back (as offset 1 did) before those
    // claims lapse (600 ms): within the hold bound and a margin.
    await waitFor(() => nacked().length === 3 || undefined, 'offsets 2 and 3 released', 550);
    expect(nacked()).toEqual([1, 2, 3]);
    await it.return?.();
  });
});
