// Goal: a consume loop keeps its pipeline full: acks made in one event-loop turn leave in one
// write on the request stream, and the next poll is in flight while the caller works on a batch.
// It runs for as long as the caller wants: a poll left unanswered or refused for now is made
// again after a backoff, with nothing yielded twice; a refusal that would recur ends it at once.
// Method: a Group over a fake broker connection whose streams record every write and answer
// requests from the test; waiting is by waitFor on what the fake saw, or, where a backoff is
// timed, by fake timers advanced by hand.
import { waitFor } from '@felix/testing-harness';
import { FEATURE_HI_GROUP_ACK_BATCH, FEATURE_HI_GROUP_NACK_BATCH, type Message } from '@felix/wire';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ForbiddenError,
  InvalidRequestError,
  NotFoundError,
  ProtocolError,
  UnauthenticatedError,
} from '../src/errors.js';
import {
  GROUP_CONSUME_BUSY_RETRY_DELAY_MS_MAX,
  GROUP_CONSUME_POLLS_AHEAD_MAX,
  GROUP_CONSUME_RETRY_BASE_MS,
  GROUP_CONSUME_QUICK_BATCH_MS,
  GROUP_NACK_BATCH_OFFSETS_MAX,
  NOT_FOUND_RETRY_MS,
} from '../src/limits.js';
import { Group, GroupMessage } from '../src/projections/group.js';
import type { RequestLane } from '../src/protocol/request-lane.js';
import {
  BACKOFF_TIMERS,
  consumeRig,
  decodeAll,
  fakeHost,
  pollsOn,
  records,
  settle,
  until,
} from './group-consume-rig.js';

/**
 * A consume loop over `n` records whose first ack is sent and whose second is gathered behind
 * it (the first is unanswered); then the loop is stopped. Returns every request it sent after
 * the poll, once the gathered ack and the hand-back are out.
 */
async function stopAfterTwoAcks(features: number, n: number) {
  const { host, streams } = fakeHost(features);
  const g = new Group(host, 'jobs', 'billing');
  const sent = () =>
    streams.flatMap((stream) => decodeAll(stream.writes).map((m) => ({ stream, m })));
  const settles = () => sent().filter((x) => x.m.type !== 'group_poll');
  const ctl = new AbortController();
  const it = g.consume({ max: n, waitMs: 1_000, signal: ctl.signal })[Symbol.asyncIterator]();
  const first = it.next();
  await waitFor(() => sent().length === 1, 'the first poll', 5_000);
  const poll = sent()[0]!;
  const id = (poll.m as { request_id: number }).request_id;
  poll.stream.push({ type: 'group_records', request_id: id, records: records(0, n) });
  const m0 = (await first).value!;
  // The ack's own outcome is not what this test checks; the batches it sends are.
  void m0.ack().catch(() => undefined);
  await waitFor(() => settles().length === 1, 'the first ack batch is sent', 5_000);
  // The first batch is unanswered, so the next ack gathers for later.
  const m1 = (await it.next()).value!;
  // As above: only the gathering of this ack is checked.
  void m1.ack().catch(() => undefined);
  await new Promise<void>((r) => setImmediate(r));
  expect(settles()).toHaveLength(1);
  ctl.abort();
  await it.return?.();
  await waitFor(() => settles().length === 3, 'the gathered ack and the hand-back', 5_000);
  return settles();
}

describe('group consume pipeline', () => {
  it('acks_made_in_one_turn_leave_in_one_write', async () => {
    const { host, streams } = fakeHost();
    const g = new Group(host, 'jobs', 'billing');
    const poll = g.poll({ max: 3, waitMs: 0 });
    await waitFor(() => streams[0]?.writes.length === 1, 'the poll is sent', 5_000);
    const req = decodeAll(streams[0]!.writes)[0] as Extract<Message, { type: 'group_poll' }>;
    streams[0]!.push({ type: 'group_records', request_id: req.request_id, records: records(0, 3) });
    const msgs = await poll;
    const acks = msgs.map((m) => m.ack());
    const channel = () => streams[1];
    await waitFor(() => (channel()?.writes.length ?? 0) > 0, 'the acks are sent', 5_000);
    const sent = decodeAll(channel()!.writes);
    expect(channel()!.writes.length).toBe(1);
    expect(sent.map((m) => [m.type, (m as { offset: number }).offset])).toEqual([
      ['group_ack', 0],
      ['group_ack', 1],
      ['group_ack', 2],
    ]);
    for (const m of sent)
      channel()!.push({ type: 'cache_ok', request_id: (m as { request_id: number }).request_id });
    await Promise.all(acks);
  });

  it('acks_of_one_turn_go_as_one_batch_when_the_broker_offers_it', async () => {
    const { host, streams } = fakeHost(FEATURE_HI_GROUP_ACK_BATCH);
    const g = new Group(host, 'jobs', 'billing');
    const poll = g.poll({ max: 3, waitMs: 0 });
    await waitFor(() => streams[0]?.writes.length === 1, 'the poll is sent', 5_000);
    const req = decodeAll(streams[0]!.writes)[0] as Extract<Message, { type: 'group_poll' }>;
    streams[0]!.push({ type: 'group_records', request_id: req.request_id, records: records(0, 3) });
    const msgs = await poll;
    const acks = msgs.map((m) =>
      m.ack().then(
        () => 'ok',
        (err: Error) => err.name,
      ),
    );
    await waitFor(() => (streams[1]?.writes.length ?? 0) > 0, 'the batch is sent', 5_000);
    const sent = decodeAll(streams[1]!.writes);
    expect(sent).toHaveLength(1);
    const batch = sent[0] as Extract<Message, { type: 'group_ack_batch' }>;
    expect(batch.type).toBe('group_ack_batch');
    expect(batch.offsets).toEqual([0, 1, 2]);
    // The broker says offset 1's claim no longer stood: only that ack fails.
    streams[1]!.push({ type: 'group_acked', stale: [1], request_id: batch.request_id });
    expect(await Promise.all(acks)).toEqual(['ok', 'StaleClaimError', 'ok']);
  });

  it('acks_made_while_a_batch_is_unanswered_go_together_once_it_is_answered', async () => {
    const { host, streams } = fakeHost(FEATURE_HI_GROUP_ACK_BATCH);
    const g = new Group(host, 'jobs', 'billing');
    const poll = g.poll({ max: 5, waitMs: 0 });
    await waitFor(() => streams[0]?.writes.length === 1, 'the poll is sent', 5_000);
    const req = decodeAll(streams[0]!.writes)[0] as Extract<Message, { type: 'group_poll' }>;
    streams[0]!.push({ type: 'group_records', request_id: req.request_id, records: records(0, 5) });
    const msgs = await poll;
    const sent = () =>
      decodeAll(streams[1]?.writes ?? []) as Extract<Message, { type: 'group_ack_batch' }>[];
    const first = msgs[0]!.ack();
    await waitFor(() => sent().length === 1, 'the first batch is sent', 5_000);
    // Three more turns of acks while the first batch is unanswered: none of them is sent yet.
    const later: Promise<void>[] = [];
    for (const m of msgs.slice(1, 4)) {
      later.push(m.ack());
      await new Promise<void>((r) => setImmediate(r));
    }
    expect(sent()).toHaveLength(1);
    streams[1]!.push({ type: 'group_acked', stale: [], request_id: sent()[0]!.request_id });
    await first;
    // Answered: what gathered meanwhile goes as one request.
    await waitFor(() => sent().length === 2, 'the gathered batch is sent', 5_000);
    expect(sent()[1]!.offsets).toEqual([1, 2, 3]);
    streams[1]!.push({ type: 'group_acked', stale: [3], request_id: sent()[1]!.request_id });
    const outcomes = await Promise.all(
      later.map((p) =>
        p.then(
          () => 'ok',
          (e: Error) => e.name,
        ),
      ),
    );
    expect(outcomes).toEqual(['ok', 'ok', 'StaleClaimError']);
    // Nothing is unanswered any more: the next ack goes at the end of its turn.
    const last = msgs[4]!.ack();
    await waitFor(() => sent().length === 3, 'the next ack goes at once', 5_000);
    streams[1]!.push({ type: 'group_acked', stale: [], request_id: sent()[2]!.request_id });
    await last;
  });

  it('consume_has_the_next_poll_in_flight_while_the_caller_holds_a_batch', async () => {
    const { host, streams } = fakeHost();
    const g = new Group(host, 'jobs', 'billing');
    const polls = () => pollsOn(streams);
    const ctl = new AbortController();
    const it = g.consume({ max: 2, waitMs: 1_000, signal: ctl.signal })[Symbol.asyncIterator]();
    const first = it.next();
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    const [p0] = polls();
    p0!.stream.push({ type: 'group_records', request_id: p0!.id, records: records(0, 2) });
    const m0 = await first;
    expect(m0.value?.offset).toBe(0);
    // The caller has not asked for the next message, yet the next poll is already out.
    await waitFor(() => polls().length === 2, 'a poll made ahead', 5_000);
    ctl.abort();
    await it.return?.();
  });

  it('next_calls_made_together_are_answered_in_order_and_once_each', async () => {
    const { host, streams } = fakeHost();
    const g = new Group(host, 'jobs', 'billing');
    const polls = () => pollsOn(streams);
    const ctl = new AbortController();
    const it = g.consume({ max: 3, waitMs: 1_000, signal: ctl.signal })[Symbol.asyncIterator]();
    // Three calls before any poll is answered: one poll goes, and they wait behind it.
    const asked = [it.next(), it.next(), it.next()];
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    const [p0] = polls();
    p0!.stream.push({ type: 'group_records', request_id: p0!.id, records: records(0, 3) });
    const got = await Promise.all(asked);
    expect(got.map((r) => r.value?.offset)).toEqual([0, 1, 2]);
    ctl.abort();
    await it.return?.();
  });

  it('records_a_poll_made_ahead_never_yielded_are_handed_back_when_the_loop_ends', async () => {
    const { it, polls, answerPoll, nacked } = consumeRig();
    const first = it.next();
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    answerPoll(0, 0);
    expect((await first).value?.offset).toBe(0);
    expect((await it.next()).value?.offset).toBe(1);
    // The first batch was worked through quickly: the next batch brings the full depth ahead.
    await waitFor(() => polls().length === 2, 'a poll made ahead', 5_000);
    const third = it.next();
    answerPoll(1, 2);
    expect((await third).value?.offset).toBe(2);
    const ahead = GROUP_CONSUME_POLLS_AHEAD_MAX;
    await waitFor(() => polls().length === 2 + ahead, 'the polls made ahead', 5_000);
    // Every poll made ahead is answered with two records before the loop ends.
    for (let i = 2; i < 2 + ahead; i++) answerPoll(i, 2 * i);
    await it.return?.();
    // The records of every poll made ahead go back, and so does offset 3, the unyielded rest
    // of the batch in hand.
    await waitFor(
      () => nacked().length === 2 * ahead + 1,
      'the records never yielded are handed back',
      5_000,
    );
    expect(nacked()).toEqual(Array.from({ length: 2 * ahead + 1 }, (_, i) => 3 + i));
  });

  it('a_poll_still_out_when_the_loop_breaks_is_answered_and_handed_back', async () => {
    const { it, polls, answerPoll, nacked } = consumeRig();
    const first = it.next();
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    answerPoll(0, 0);
    expect((await first).value?.offset).toBe(0);
    await waitFor(() => polls().length === 2, 'a poll made ahead', 5_000);
    expect((await it.next()).value?.offset).toBe(1);
    await it.return?.(); // the caller breaks while the poll made ahead is still out
    answerPoll(1, 2); // the broker had claimed offsets 2 and 3 for it
    await waitFor(() => nacked().length === 2, 'the late answer is handed back', 5_000);
    expect(nacked()).toEqual([2, 3]);
  });

  it('acks_a_loop_gathered_are_sent_before_its_hand_back_when_it_ends', async () => {
    // The loop ends with offset 2 unyielded: the gathered ack goes before its nack.
    const settles = await stopAfterTwoAcks(FEATURE_HI_GROUP_ACK_BATCH, 3);
    expect(
      settles.map(({ m }) =>
        m.type === 'group_ack_batch'
          ? [m.type, m.offsets]
          : [m.type, (m as { offset: number }).offset],
      ),
    ).toEqual([
      ['group_ack_batch', [0]],
      ['group_ack_batch', [1]],
      ['group_nack', 2],
    ]);
  });

  it('a_loop_that_ends_hands_back_in_one_nack_batch_after_its_gathered_acks', async () => {
    // The loop ends with offsets 2 and 3 unyielded: one nack batch, after the gathered ack.
    const settles = await stopAfterTwoAcks(
      FEATURE_HI_GROUP_ACK_BATCH | FEATURE_HI_GROUP_NACK_BATCH,
      4,
    );
    expect(settles.map(({ m }) => [m.type, (m as { offsets: number[] }).offsets])).toEqual([
      ['group_ack_batch', [0]],
      ['group_ack_batch', [1]],
      ['group_nack_batch', [2, 3]],
    ]);
    expect((settles[2]!.m as { attempts?: number[] }).attempts).toEqual([1, 1]);
  });

  it('a_hand_back_past_the_bound_goes_in_several_batches_each_message_settled_alone', async () => {
    const { host, streams } = fakeHost(FEATURE_HI_GROUP_NACK_BATCH);
    const g = new Group(host, 'jobs', 'billing');
    const n = GROUP_NACK_BATCH_OFFSETS_MAX + 1;
    const msgs = Array.from({ length: n }, (_, i) => new GroupMessage(g, i, new Uint8Array(), 1));
    const outcomes = Promise.all(
      g.handBack(msgs).map((p) =>
        p.then(
          () => 'ok',
          (e: Error) => e.name,
        ),
      ),
    );
    const batches = () =>
      decodeAll(streams[0]?.writes ?? []) as Extract<Message, { type: 'group_nack_batch' }>[];
    await waitFor(() => batches().length === 2, 'both batches are sent', 5_000);
    expect(batches().map((b) => b.offsets.length)).toEqual([GROUP_NACK_BATCH_OFFSETS_MAX, 1]);
    // The broker names offset 5 of the first batch stale: only that message fails.
    streams[0]!.push({ type: 'group_nacked', stale: [5], request_id: batches()[0]!.request_id });
    streams[0]!.push({ type: 'group_nacked', stale: [], request_id: batches()[1]!.request_id });
    const got = await outcomes;
    expect(got.filter((o) => o !== 'ok')).toEqual(['StaleClaimError']);
    expect(got[5]).toBe('StaleClaimError');
  });

  it('a_caller_slow_with_its_batches_keeps_a_single_poll_ahead', async () => {
    const { host, streams } = fakeHost();
    const g = new Group(host, 'jobs', 'billing');
    const sent = () =>
      streams.flatMap((stream) => decodeAll(stream.writes).map((m) => ({ stream, m })));
    const polls = () => sent().filter((x) => x.m.type === 'group_poll');
    const it = g.consume({ max: 1, waitMs: 1_000 })[Symbol.asyncIterator]();
    const answerPoll = (i: number, from: number) => {
      const p = polls()[i]!;
      const id = (p.m as { request_id: number }).request_id;
      p.stream.push({ type: 'group_records', request_id: id, records: records(from, 1) });
    };
    const first = it.next();
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    answerPoll(0, 0);
    expect((await first).value?.offset).toBe(0);
    // The caller's work on this batch outlasts a quick batch (a stand-in for slow work).
    await new Promise((r) => setTimeout(r, GROUP_CONSUME_QUICK_BATCH_MS + 50));
    const second = it.next();
    await waitFor(() => polls().length === 2, 'a poll made ahead', 5_000);
    answerPoll(1, 1);
    expect((await second).value?.offset).toBe(1);
    await waitFor(() => polls().length === 3, 'one poll ahead again', 5_000);
    answerPoll(2, 2);
    await it.return?.();
    const nacked = () => sent().filter((x) => x.m.type === 'group_nack');
    await waitFor(() => nacked().length === 1, 'the record made ahead is handed back', 5_000);
    // Only one poll went ahead after the slow batch, not GROUP_CONSUME_POLLS_AHEAD_MAX.
    expect(polls()).toHaveLength(3);
  });

  it('a_slow_callers_next_poll_asks_for_what_it_works_through_in_half_the_hold_bound', async () => {
    const { host, streams } = fakeHost();
    const g = new Group(host, 'jobs', 'billing');
    const polls = () =>
      streams
        .flatMap((stream) => decodeAll(stream.writes).map((m) => ({ stream, m })))
        .filter((x) => x.m.type === 'group_poll');
    // A 3 s claim: the loop holds a record 1 s at most, and sizes batches to 0.5 s of work.
    const it = g.consume({ max: 100, waitMs: 1_000, visibilityMs: 3_000 })[Symbol.asyncIterator]();
    const answerPoll = (i: number, from: number, n: number) => {
      const p = polls()[i]!;
      const id = (p.m as { request_id: number }).request_id;
      p.stream.push({ type: 'group_records', request_id: id, records: records(from, n) });
    };
    const first = it.next();
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    answerPoll(0, 0, 2);
    expect((await first).value?.offset).toBe(0);
    // 200 ms of work a record (a stand-in for the caller's job).
    await new Promise((r) => setTimeout(r, 200));
    expect((await it.next()).value?.offset).toBe(1);
    await new Promise((r) => setTimeout(r, 200));
    const third = it.next();
    await waitFor(() => polls().length === 2, 'the poll made ahead', 5_000);
    answerPoll(1, 2, 2);
    expect((await third).value?.offset).toBe(2);
    // The poll made after that batch asks for what the caller does in 0.5 s: 2 or so, not 100.
    await waitFor(() => polls().length === 3, 'the next poll ahead', 5_000);
    const asked = (polls()[2]!.m as { max_records: number }).max_records;
    expect(asked).toBeGreaterThanOrEqual(1);
    expect(asked).toBeLessThanOrEqual(3);
    expect((polls()[0]!.m as { max_records: number }).max_records).toBe(100);
    await it.return?.();
  });

  it('records_held_past_a_third_of_their_claim_are_released_not_yielded', async () => {
    const { host, streams } = fakeHost();
    const g = new Group(host, 'jobs', 'billing');
    const sent = () =>
      streams.flatMap((stream) => decodeAll(stream.writes).map((m) => ({ stream, m })));
    const polls = () => sent().filter((x) => x.m.type === 'group_poll');
    // A 600 ms claim: a record waits 200 ms at most in the loop before it is yielded.
    const it = g.consume({ max: 10, waitMs: 1_000, visibilityMs: 600 })[Symbol.asyncIterator]();
    const first = it.next();
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    const p0 = polls()[0]!;
    p0.stream.push({
      type: 'group_records',
      request_id: (p0.m as { request_id: number }).request_id,
      records: records(0, 3),
    });
    expect((await first).value?.offset).toBe(0);
    await new Promise((r) => setTimeout(r, 300)); // the caller's work outlasts the hold bound
    const next = it.next();
    // Offsets 1 and 2 go back uncounted instead of out to a caller whose claim on them may lapse.
    const released = () =>
      sent()
        .filter((x) => x.m.type === 'group_nack')
        .map((x) => (x.m as { offset: number }).offset);
    await waitFor(() => released().length === 2, 'the held records released', 5_000);
    expect(released().sort()).toEqual([1, 2]);
    // The poll made ahead answers with them again (owed first), and the loop goes on from there.
    await waitFor(() => polls().length >= 2, 'the poll ahead', 5_000);
    const p1 = polls()[1]!;
    p1.stream.push({
      type: 'group_records',
      request_id: (p1.m as { request_id: number }).request_id,
      records: records(1, 2),
    });
    expect((await next).value?.offset).toBe(1);
    await it.return?.();
  });

  it('a_request_that_cannot_be_built_leaves_later_answers_matched', async () => {
    const { host, streams } = fakeHost();
    const bc = (await host.connection()) as { requests: RequestLane };
    const ch = bc.requests;
    const ask = (key: string) =>
      ch.request((request_id) => ({
        type: 'cache_get',
        tenant_id: 't1',
        namespace: 'default',
        cache: 'users',
        key,
        request_id,
      }));
    const answer = (m: Message) => {
      const id = (m as { request_id: number }).request_id;
      streams[0]!.push({
        type: 'cache_value',
        tenant_id: 't1',
        namespace: 'default',
        cache: 'users',
        key: (m as { key: string }).key,
        request_id: id,
      });
    };
    const first = ask('first');
    await waitFor(() => streams[0]?.writes.length === 1, 'the first request is sent', 5_000);
    answer(decodeAll(streams[0]!.writes)[0]!);
    expect((await first).type).toBe('cache_value');
    const broken = Promise.resolve().then(() =>
      ch.request(() => {
        throw new Error('cannot build');
      }),
    );
    await expect(broken).rejects.toThrow('cannot build');
    const second = ask('second');
    await waitFor(() => streams[0]!.writes.length === 2, 'the second request is sent', 5_000);
    answer(decodeAll(streams[0]!.writes)[1]!);
    const got = await second;
    expect((got as { key: string }).key).toBe('second');
  });
});

describe('a consume loop whose poll fails', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('a_consume_loop_outlives_a_poll_the_broker_left_unanswered', async () => {
    const { it: loop, polls, answerPoll, leaveUnanswered, nacked } = consumeRig();
    const got: number[] = [];
    const first = loop.next();
    await waitFor(() => polls().length === 1, 'the first poll', 2_000);
    answerPoll(0, 0);
    got.push((await first).value!.offset);
    await waitFor(() => polls().length === 2, 'a poll made ahead', 2_000);
    got.push((await loop.next()).value!.offset);
    // The broker never answers the poll made ahead (paused by GC, a disk stall): past its wait
    // and the request timeout the connection's check fails it with TimeoutError.
    const third = loop.next();
    leaveUnanswered(1);
    // The loop does not end: after a backoff it polls again, on a new stream.
    await waitFor(() => polls().length === 3, 'the poll made again', 2_000);
    expect(polls()[2]!.stream).not.toBe(polls()[1]!.stream);
    answerPoll(2, 2);
    got.push((await third).value!.offset);
    got.push((await loop.next()).value!.offset);
    // Every record once, in order; nothing was handed back on the way.
    expect(got).toEqual([0, 1, 2, 3]);
    expect(nacked()).toEqual([]);
    await loop.return?.();
  });

  it('a_poll_ahead_that_fails_leaves_the_records_of_the_others_yielded_once_each', async () => {
    const { it: loop, polls, answerPoll, leaveUnanswered } = consumeRig();
    const got: number[] = [];
    const first = loop.next();
    await waitFor(() => polls().length === 1, 'the first poll', 2_000);
    answerPoll(0, 0);
    got.push((await first).value!.offset);
    got.push((await loop.next()).value!.offset);
    await waitFor(() => polls().length === 2, 'a poll made ahead', 2_000);
    const third = loop.next();
    answerPoll(1, 2);
    got.push((await third).value!.offset);
    // Batches worked through quickly: the full depth of polls goes out ahead.
    const ahead = GROUP_CONSUME_POLLS_AHEAD_MAX;
    await waitFor(() => polls().length === 2 + ahead, 'the polls made ahead', 2_000);
    got.push((await loop.next()).value!.offset);
    // The second of them goes unanswered; the others answer with records.
    const next = loop.next();
    leaveUnanswered(3);
    for (let i = 2; i < 2 + ahead; i++) if (i !== 3) answerPoll(i, 2 * i);
    got.push((await next).value!.offset);
    while (got.length < 2 * (1 + ahead)) got.push((await loop.next()).value!.offset);
    // Each record the answered polls brought comes out once; the failed one's claims (if the
    // broker made any) lapse and are delivered again later, as any lost answer's.
    const expected = [0, 1, 2, 3];
    for (let i = 2; i < 2 + ahead; i++) if (i !== 3) expected.push(2 * i, 2 * i + 1);
    expect([...got].sort((a, b) => a - b)).toEqual(expected);
    await loop.return?.();
  });

  it('a_consume_loop_retries_an_overloaded_refusal_after_a_backoff', async () => {
    vi.useFakeTimers(BACKOFF_TIMERS);
    // The jitter draws half of each cap.
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const { it: loop, polls, answerPoll, refusePoll } = consumeRig();
    const first = loop.next();
    await until(() => polls().length === 1, 'the first poll');
    // Two refusals in a row: the poll is made again after a backoff each time, the second
    // twice as long (the cap doubles per failure).
    const base = GROUP_CONSUME_RETRY_BASE_MS;
    for (const [i, delayMs] of [
      [0, base / 2],
      [1, base],
    ] as const) {
      refusePoll(i, 'overloaded', 'retry_after');
      await settle();
      await vi.advanceTimersByTimeAsync(delayMs - 1);
      await settle();
      expect(polls()).toHaveLength(i + 1);
      await vi.advanceTimersByTimeAsync(1);
      await until(() => polls().length === i + 2, 'the poll made again');
    }
    answerPoll(2, 0);
    expect((await first).value?.offset).toBe(0);
    await loop.return?.();
  });

  it('a_consume_loop_still_ends_at_once_on_a_fatal_refusal', async () => {
    vi.useFakeTimers(BACKOFF_TIMERS);
    const fatal = [
      ['forbidden', ForbiddenError],
      ['unauthenticated', UnauthenticatedError],
      ['invalid_request', InvalidRequestError],
    ] as const;
    for (const [code, Cls] of fatal) {
      const { it: loop, polls, refusePoll } = consumeRig();
      const first = loop.next();
      await until(() => polls().length === 1, 'the first poll');
      refusePoll(0, code, 'fatal');
      // No timer is advanced: the loop ends without a backoff, and polls nothing more.
      await expect(first).rejects.toBeInstanceOf(Cls);
      await settle();
      expect(polls()).toHaveLength(1);
    }
    // An answer the client cannot take for a poll's ends it too (the broker would send it again).
    const { it: loop, polls } = consumeRig();
    const first = loop.next();
    await until(() => polls().length === 1, 'the first poll');
    const p = polls()[0]!;
    p.stream.push({ type: 'cache_ok', request_id: (p.m as { request_id: number }).request_id });
    await expect(first).rejects.toBeInstanceOf(ProtocolError);
    await settle();
    expect(polls()).toHaveLength(1);
  });

  it('a_consume_loop_ends_on_an_unknown_group_once_its_not_found_window_passed', async () => {
    vi.useFakeTimers(BACKOFF_TIMERS);
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const { it: loop, polls, refusePoll } = consumeRig();
    let ended: unknown;
    loop.next().then(
      () => {
        ended = 'done';
      },
      (err: unknown) => {
        ended = err;
      },
    );
    const startedMs = Date.now();
    for (let i = 0; ended === undefined; i++) {
      await until(() => polls().length === i + 1 || ended !== undefined, 'the next poll');
      if (ended !== undefined) break;
      refusePoll(i, 'not_found', 'retry_after');
      await settle();
      await vi.advanceTimersByTimeAsync(GROUP_CONSUME_BUSY_RETRY_DELAY_MS_MAX);
    }
    // Retried (a name not yet loaded after a move), but not past the window.
    expect(ended).toBeInstanceOf(NotFoundError);
    expect(polls().length).toBeGreaterThan(1);
    expect(Date.now() - startedMs).toBeGreaterThan(NOT_FOUND_RETRY_MS);
    expect(Date.now() - startedMs).toBeLessThanOrEqual(
      NOT_FOUND_RETRY_MS + 2 * GROUP_CONSUME_BUSY_RETRY_DELAY_MS_MAX,
    );
  });

  it('a_consume_loop_in_a_backoff_ends_at_once_on_abort_or_return', async () => {
    vi.useFakeTimers(BACKOFF_TIMERS);
    const ctl = new AbortController();
    const aborted = consumeRig(ctl.signal);
    const returned = consumeRig();
    for (const rig of [aborted, returned]) {
      const first = rig.it.next();
      await until(() => rig.polls().length === 1, 'the first poll');
      rig.refusePoll(0, 'overloaded', 'retry_after');
      await settle();
      // No timer is advanced: the backoff ends with the abort (or the return), and so does
      // the loop, with nothing polled again.
      if (rig === aborted) ctl.abort();
      else await rig.it.return?.();
      expect(await first).toEqual({ value: undefined, done: true });
      expect(rig.polls()).toHaveLength(1);
    }
  });

  it('a_consume_loop_in_a_backoff_ends_at_once_when_its_client_closes', async () => {
    vi.useFakeTimers(BACKOFF_TIMERS);
    const rig = consumeRig();
    const first = rig.it.next();
    await until(() => rig.polls().length === 1, 'the first poll');
    rig.refusePoll(0, 'overloaded', 'retry_after');
    await settle();
    // No timer is advanced: the client's close ends the backoff (up to 5 s) and the loop.
    rig.close();
    expect(await first).toEqual({ value: undefined, done: true });
    expect(rig.polls()).toHaveLength(1);
  });
});
