// Goal: a consume loop keeps its pipeline full: acks made in one event-loop turn leave in one
// write on the request stream, and the next poll is in flight while the caller works on a batch.
// Method: a Group over a fake broker connection whose streams record every write and answer
// requests from the test; waiting is by waitFor on what the fake saw.
import { waitFor } from '@felix/testing-harness';
import {
  FEATURE_CONSUMER_GROUP,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_NACK_BATCH,
  FrameDecoder,
  type Message,
  decodeMessage,
  encodeMessage,
} from '@felix/wire';
import { describe, expect, it } from 'vitest';
import {
  GROUP_CONSUME_POLLS_AHEAD_MAX,
  GROUP_CONSUME_QUICK_BATCH_MS,
  GROUP_NACK_BATCH_OFFSETS_MAX,
  REQUEST_TIMEOUT_MS_DEFAULT,
} from '../src/limits.js';
import { Group, GroupMessage } from '../src/projections/group.js';
import { RequestLane } from '../src/protocol/request-lane.js';
import { RequestTable } from '../src/protocol/request-table.js';
import { TurnBatcher } from '../src/protocol/turn-batcher.js';
import { CheckTicks } from '../src/util/check-ticks.js';

/** A transport stream stand-in: records writes, hands out chunks the test pushes. */
class FakeStream {
  readonly writes: Uint8Array[] = [];
  private readonly chunks: Uint8Array[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  async write(b: Uint8Array): Promise<void> {
    this.writes.push(b);
  }
  push(m: Message): void {
    this.chunks.push(encodeMessage(m));
    this.wake?.();
  }
  async end(): Promise<void> {
    this.ended = true;
    this.wake?.();
  }
  reset(): void {
    this.ended = true;
    this.wake?.();
  }
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: async () => {
        while (this.chunks.length === 0 && !this.ended)
          await new Promise<void>((r) => {
            this.wake = r;
          });
        const c = this.chunks.shift();
        return c === undefined ? { done: true, value: undefined } : { done: false, value: c };
      },
      return: async () => ({ done: true, value: undefined }),
    };
  }
}

function decodeAll(writes: Uint8Array[]): Message[] {
  const d = new FrameDecoder();
  return writes.flatMap((w) => d.push(w).map((f) => decodeMessage(f.payload)));
}

/** A broker connection stand-in: every opened stream is kept for the test to drive. */
function fakeHost(featuresHi = 0) {
  const streams: FakeStream[] = [];
  const openStream = async () => {
    const stream = new FakeStream();
    streams.push(stream);
    const { FrameStream } = await import('../src/protocol/frame-stream.js');
    return { stream: stream as never, frames: new FrameStream(stream as never) };
  };
  const turn = new TurnBatcher();
  const table = new RequestTable();
  const ticks = new CheckTicks();
  const bc = {
    server: 'fake',
    scope: { tenant: 't1', namespace: 'default' },
    negotiated: { flags: 0, features: FEATURE_CONSUMER_GROUP, featuresHi, window: 1 },
    lost: new Promise<Error>(() => undefined),
    turn,
    table,
    openStream,
    // The connection's request stream, over a fake stream of its own opened on first use.
    requests: new RequestLane({
      server: 'fake',
      table,
      turn,
      ticks,
      timeoutMs: REQUEST_TIMEOUT_MS_DEFAULT,
      open: openStream,
    }),
    // The connection's check, which no test here runs: no poll's answer is overdue.
    ticks,
    requestTimeoutMs: REQUEST_TIMEOUT_MS_DEFAULT,
    watchDue: () => undefined,
    unwatchDue: () => undefined,
  };
  const host = { closed: false, connection: async () => bc as never };
  return { host, streams };
}

/** Every group_poll written so far, with the stream it went on and its request id. */
function pollsOn(streams: ReturnType<typeof fakeHost>['streams']) {
  return streams.flatMap((stream) =>
    decodeAll(stream.writes)
      .filter((m) => m.type === 'group_poll')
      .map((m) => ({ stream, id: (m as { request_id: number }).request_id })),
  );
}

const records = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    offset: from + i,
    payload: new Uint8Array([i]),
    attempts: 1,
    skipped_before: 0,
  }));

/** A consume loop taking 2 records per poll over a fake broker: what it sent, how to answer its
 *  polls, and the offsets it handed back. */
function consumeRig() {
  const { host, streams } = fakeHost();
  const g = new Group(host, 'jobs', 'billing');
  const sent = () =>
    streams.flatMap((stream) => decodeAll(stream.writes).map((m) => ({ stream, m })));
  const polls = () => sent().filter((x) => x.m.type === 'group_poll');
  const it = g.consume({ max: 2, waitMs: 1_000 })[Symbol.asyncIterator]();
  const answerPoll = (i: number, from: number) => {
    const p = polls()[i]!;
    const id = (p.m as { request_id: number }).request_id;
    p.stream.push({ type: 'group_records', request_id: id, records: records(from, 2) });
  };
  const nacked = () =>
    sent()
      .filter((x) => x.m.type === 'group_nack')
      .map((x) => (x.m as { offset: number }).offset)
      .sort((a, b) => a - b);
  return { it, polls, answerPoll, nacked };
}

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
