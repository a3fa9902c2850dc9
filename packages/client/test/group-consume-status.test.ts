// Goal: a consume loop that retries says so in the client's status feed: one event per backoff
// (its kind, count, delay and the poll's own error) and one when a poll is answered again, or
// one when the loop ends before that (and why), with nothing on answered polls and no more than
// a reader's bounded buffer held for a slow reader.
// Method: the fake broker connection of group-consume-rig.ts (events the group emits kept by the
// fake host), fake timers for the backoffs; one test through a FelixClient over fake-broker.ts.
import { withDeadline } from '@felix/testing-harness';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ForbiddenError, NotFoundError, OverloadedError, TimeoutError } from '../src/errors.js';
import { GROUP_CONSUME_RETRY_BASE_MS, STATUS_BUFFER_EVENTS_MAX } from '../src/limits.js';
import { type StatusEvent, StatusHub } from '../src/status.js';
import { FakeBroker, clientOver, refuseOverloaded } from './fake-broker.js';
import { BACKOFF_TIMERS, consumeRig, settle, until } from './group-consume-rig.js';

describe('a consume loop says what it retries', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  /** The consume_retry events among `events`. */
  const retries = (events: StatusEvent[]) =>
    events.filter(
      (e): e is Extract<StatusEvent, { type: 'consume_retry' }> => e.type === 'consume_retry',
    );

  it('a_consume_loop_reports_each_backoff_as_a_status_event', async () => {
    vi.useFakeTimers(BACKOFF_TIMERS);
    // The jitter draws half of each cap.
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const rig = consumeRig(undefined, { shard: 0, consumer: 'worker-7' });
    // What each poll failed with, as the loop got it.
    const failed: unknown[] = [];
    const poll = rig.g.poll.bind(rig.g);
    vi.spyOn(rig.g, 'poll').mockImplementation((o) => {
      const p = poll(o);
      p.catch((err: unknown) => failed.push(err));
      return p;
    });
    const first = rig.it.next();
    await until(() => rig.polls().length === 1, 'the first poll');
    const base = GROUP_CONSUME_RETRY_BASE_MS;
    // A busy broker, a poll it left unanswered, a group it does not know yet: three failures
    // in a row, each reported with its kind, its count and the backoff the loop then waits.
    const fail = [
      () => rig.refusePoll(0, 'overloaded', 'retry_after'),
      () => rig.leaveUnanswered(1),
      () => rig.refusePoll(2, 'not_found', 'retry_after'),
    ];
    const expected = [
      { failure: 'busy', delayMs: base / 2, cls: OverloadedError },
      { failure: 'unavailable', delayMs: base, cls: TimeoutError },
      { failure: 'not_found', delayMs: base * 2, cls: NotFoundError },
    ] as const;
    for (const [i, want] of expected.entries()) {
      fail[i]!();
      await until(() => retries(rig.events).length === i + 1, 'the backoff is reported');
      const e = retries(rig.events)[i]!;
      expect(e).toEqual({
        type: 'consume_retry',
        stream: 'jobs',
        group: 'billing',
        shard: 0,
        consumer: 'worker-7',
        failure: want.failure,
        error: failed[i],
        failures: i + 1,
        delayMs: want.delayMs,
      });
      // The poll's own error, not a copy or a wrapper.
      expect(e.error).toBe(failed[i]);
      expect(e.error).toBeInstanceOf(want.cls);
      // The loop waits the delay it reported, and not less.
      await vi.advanceTimersByTimeAsync(want.delayMs - 1);
      await settle();
      expect(rig.polls()).toHaveLength(i + 1);
      await vi.advanceTimersByTimeAsync(1);
      await until(() => rig.polls().length === i + 2, 'the poll made again');
    }
    rig.answerPoll(3, 0);
    expect((await first).value?.offset).toBe(0);
    expect(retries(rig.events)).toHaveLength(3);
    await rig.it.return?.();
  });

  it('a_consume_loop_reports_its_recovery_after_retrying', async () => {
    vi.useFakeTimers(BACKOFF_TIMERS);
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const rig = consumeRig();
    const first = rig.it.next();
    await until(() => rig.polls().length === 1, 'the first poll');
    const base = GROUP_CONSUME_RETRY_BASE_MS;
    for (const [i, delayMs] of [
      [0, base / 2],
      [1, base],
    ] as const) {
      rig.refusePoll(i, 'overloaded', 'retry_after');
      await until(() => retries(rig.events).length === i + 1, 'the backoff is reported');
      await vi.advanceTimersByTimeAsync(delayMs);
      await until(() => rig.polls().length === i + 2, 'the poll made again');
    }
    rig.answerPoll(2, 0);
    expect((await first).value?.offset).toBe(0);
    // The first answer after two failures says so, and how long the loop failed (the fake
    // clock moved by the two backoffs only).
    await until(() => rig.events.length === 3, 'the recovery is reported');
    expect(rig.events[2]).toEqual({
      type: 'consume_recovered',
      stream: 'jobs',
      group: 'billing',
      shard: 0,
      failures: 2,
      failedForMs: base / 2 + base,
    });
    // Answered polls after it report nothing.
    expect((await rig.it.next()).value?.offset).toBe(1);
    await until(() => rig.polls().length === 4, 'a poll made ahead');
    rig.answerPoll(3, 2);
    expect((await rig.it.next()).value?.offset).toBe(2);
    expect(rig.events).toHaveLength(3);
    // The count started over: the next failure is the first in a row again.
    expect((await rig.it.next()).value?.offset).toBe(3);
    await until(() => rig.polls().length === 5, 'the next poll');
    const next = rig.it.next();
    rig.refusePoll(4, 'overloaded', 'retry_after');
    await until(() => rig.events.length === 4, 'the new backoff is reported');
    // (Its delay is 0 if polls made ahead are still out: they are waited for first.)
    expect(rig.events[3]).toMatchObject({ type: 'consume_retry', failure: 'busy', failures: 1 });
    // (The next() stays with the polls made ahead, which the broker never answers.)
    void next;
    await rig.it.return?.();
  });

  /** A loop (ended by `signal` when given) whose first two polls were refused `overloaded`,
   *  10 ms into its second backoff (of GROUP_CONSUME_RETRY_BASE_MS): its rig, and its pending
   *  next(). */
  const loopInItsSecondBackoff = async (signal?: AbortSignal) => {
    const rig = consumeRig(signal);
    const ended = rig.it.next().then(
      (r) => r,
      (e: unknown) => e,
    );
    const base = GROUP_CONSUME_RETRY_BASE_MS;
    for (const [i, delayMs] of [
      [0, base / 2],
      [1, 10],
    ] as const) {
      await until(() => rig.polls().length === i + 1, 'a poll');
      rig.refusePoll(i, 'overloaded', 'retry_after');
      await until(() => retries(rig.events).length === i + 1, 'the backoff is reported');
      await vi.advanceTimersByTimeAsync(delayMs);
    }
    return { rig, ended };
  };

  it('a_consume_loop_ended_during_its_retries_reports_that_they_stopped_and_why', async () => {
    vi.useFakeTimers(BACKOFF_TIMERS);
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const base = GROUP_CONSUME_RETRY_BASE_MS;
    const ends = {
      aborted: (_: ReturnType<typeof consumeRig>, ctl: AbortController) => ctl.abort(),
      returned: (rig: ReturnType<typeof consumeRig>) => void rig.it.return?.(),
      closed: (rig: ReturnType<typeof consumeRig>) => rig.close(),
    };
    for (const [reason, end] of Object.entries(ends)) {
      const ctl = new AbortController();
      const { rig, ended } = await loopInItsSecondBackoff(ctl.signal);
      end(rig, ctl);
      expect({ reason, ended: await ended }).toEqual({
        reason,
        ended: { value: undefined, done: true },
      });
      // One event after the two backoffs: a view of the loop as retrying can be cleared.
      await until(() => rig.events.length >= 3, 'the stop is reported');
      await settle();
      expect(rig.events.slice(2)).toEqual([
        {
          type: 'consume_stopped',
          stream: 'jobs',
          group: 'billing',
          shard: 0,
          reason,
          failures: 2,
          failedForMs: base / 2 + 10,
        },
      ]);
    }
  });

  it('a_consume_loop_that_fails_for_good_after_retrying_reports_its_retries_stopped_with_the_error', async () => {
    vi.useFakeTimers(BACKOFF_TIMERS);
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const { rig, ended } = await loopInItsSecondBackoff();
    await vi.advanceTimersByTimeAsync(GROUP_CONSUME_RETRY_BASE_MS);
    await until(() => rig.polls().length === 3, 'the poll made again');
    rig.refusePoll(2, 'forbidden', 'fatal');
    const err = await ended;
    expect(err).toBeInstanceOf(ForbiddenError);
    await until(() => rig.events.length >= 3, 'the stop is reported');
    expect(rig.events.slice(2)).toEqual([
      expect.objectContaining({ type: 'consume_stopped', reason: 'failed', failures: 2 }),
    ]);
    expect((rig.events[2] as { error?: unknown }).error).toBe(err);
  });

  it('a_consume_loop_ended_when_not_retrying_reports_no_stop', async () => {
    vi.useFakeTimers(BACKOFF_TIMERS);
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    // Never failed: ended in its first poll.
    const ctl = new AbortController();
    const quiet = consumeRig(ctl.signal);
    const first = quiet.it.next();
    await until(() => quiet.polls().length === 1, 'the first poll');
    ctl.abort();
    expect(await first).toEqual({ value: undefined, done: true });
    // Recovered: a poll was answered after the failures, then the loop ended.
    const { rig } = await loopInItsSecondBackoff();
    await vi.advanceTimersByTimeAsync(GROUP_CONSUME_RETRY_BASE_MS);
    await until(() => rig.polls().length === 3, 'the poll made again');
    rig.answerPoll(2, 0);
    await until(() => rig.events.length === 3, 'the recovery is reported');
    await rig.it.return?.();
    rig.close();
    await settle();
    expect(quiet.events).toEqual([]);
    expect(rig.events.map((e) => e.type)).toEqual([
      'consume_retry',
      'consume_retry',
      'consume_recovered',
    ]);
  });

  it('a_clients_status_names_each_backoff_of_its_consume_loops', async () => {
    // Every poll is refused `overloaded`; the client's own status() feed says so.
    const broker = new FakeBroker({ reauth: false });
    refuseOverloaded(broker, ['group_poll']);
    const client = await clientOver(broker, 1_000);
    const ctl = new AbortController();
    try {
      const feed = client.status({ signal: ctl.signal })[Symbol.asyncIterator]();
      const group = client.group('orders', 'billing', { shard: 0 });
      const loop = group.consume({ signal: ctl.signal })[Symbol.asyncIterator]();
      const ended = loop.next();
      const seen: StatusEvent[] = [];
      const read = async () => {
        for (let r = await feed.next(); !r.done; r = await feed.next()) {
          seen.push(r.value);
          if (retries(seen).length === 2) return;
        }
      };
      await withDeadline(read(), 10_000, 'two backoffs in the status feed');
      expect(retries(seen).map((e) => [e.stream, e.group, e.shard, e.failure, e.failures])).toEqual(
        [
          ['orders', 'billing', 0, 'busy', 1],
          ['orders', 'billing', 0, 'busy', 2],
        ],
      );
      expect(retries(seen)[0]!.error).toBeInstanceOf(OverloadedError);
      ctl.abort();
      expect(await ended).toEqual({ value: undefined, done: true });
    } finally {
      ctl.abort();
      await client.close();
    }
  });

  it('a_clients_status_reports_a_retrying_consume_loop_stopped_by_its_close', async () => {
    // Every poll is refused `overloaded`; the client closes with its loop in a backoff: the
    // feed says the loop stopped (before it ends), not only that it was retrying.
    const broker = new FakeBroker({ reauth: false });
    refuseOverloaded(broker, ['group_poll']);
    const client = await clientOver(broker, 1_000);
    try {
      const feed = client.status()[Symbol.asyncIterator]();
      const loop = client.group('orders', 'billing').consume()[Symbol.asyncIterator]();
      const ended = loop.next();
      const seen: StatusEvent[] = [];
      const read = async () => {
        for (let r = await feed.next(); !r.done; r = await feed.next()) {
          seen.push(r.value);
          if (retries(seen).length === 1) return;
        }
      };
      await withDeadline(read(), 10_000, 'a backoff in the status feed');
      await client.close();
      expect(await withDeadline(ended, 10_000, 'the loop to end')).toEqual({
        value: undefined,
        done: true,
      });
      for (let r = await feed.next(); !r.done; r = await feed.next()) seen.push(r.value);
      const stopped = seen.filter((e) => e.type === 'consume_stopped');
      // Before the client's own `closed`, the feed's last word.
      expect(seen.map((e) => e.type).slice(-2)).toEqual(['consume_stopped', 'closed']);
      expect(stopped).toEqual([
        expect.objectContaining({
          group: 'billing',
          reason: 'closed',
          failures: retries(seen).length,
        }),
      ]);
    } finally {
      await client.close();
    }
  });

  it('many_consume_loops_backing_off_at_once_warn_of_no_listener_leak', async () => {
    // Each loop in a backoff listens on the client's close signal: sixteen at once (a worker with
    // a loop per shard, its broker overloaded) must print no MaxListenersExceededWarning.
    const broker = new FakeBroker({ reauth: false });
    const refused = refuseOverloaded(broker, ['group_poll']);
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const client = await clientOver(broker, 1_000);
    try {
      const ends = Array.from({ length: 16 }, (_, shard) =>
        client.group('orders', 'billing', { shard }).consume()[Symbol.asyncIterator]().next(),
      );
      await withDeadline(
        (async () => {
          while (refused.group_poll < 32) await new Promise((r) => setTimeout(r, 5));
        })(),
        10_000,
        'every loop refused twice',
      );
      // A warning is emitted on a later turn: let it come.
      await new Promise((r) => setImmediate(r));
      const leaks = warnings.filter((w) => w.name === 'MaxListenersExceededWarning');
      expect(leaks.map((w) => w.message)).toEqual([]);
      // The close ends every loop, each in its backoff.
      await client.close();
      const ended = await withDeadline(Promise.all(ends), 10_000, 'every loop to end');
      expect(ended.every((r) => r.done === true)).toBe(true);
    } finally {
      process.off('warning', onWarning);
      await client.close();
    }
  });

  it('a_status_reader_behind_a_consume_loop_that_keeps_failing_holds_a_bounded_buffer', async () => {
    // No jitter: every backoff is 0 ms, the loop retrying as fast as it can.
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const rig = consumeRig();
    const hub = new StatusHub();
    let emitted = 0;
    rig.host.emit = (e) => {
      emitted++;
      hub.emit(e);
    };
    vi.spyOn(rig.g, 'poll').mockImplementation(() =>
      Promise.reject(new OverloadedError({ brokerCode: 'overloaded', message: 'busy' })),
    );
    // A reader that asked once and then stopped reading.
    const reader = hub.listen()[Symbol.asyncIterator]();
    const firstRead = reader.next();
    const loop = rig.it.next();
    const n = 3 * STATUS_BUFFER_EVENTS_MAX;
    await until(() => emitted >= n, 'many backoffs');
    await rig.it.return?.();
    // Ended in a backoff: one consume_stopped after the retries.
    const retried = emitted - 1;
    expect(await loop).toEqual({ value: undefined, done: true });
    // It holds the first event (handed to its waiting read) and the newest
    // STATUS_BUFFER_EVENTS_MAX, and is told how many it missed between them.
    expect((await firstRead).value).toMatchObject({ type: 'consume_retry', failures: 1 });
    hub.end();
    const rest: StatusEvent[] = [];
    for (let r = await reader.next(); !r.done; r = await reader.next()) rest.push(r.value);
    expect(rest[0]).toEqual({
      type: 'status_dropped',
      count: emitted - 1 - STATUS_BUFFER_EVENTS_MAX,
    });
    expect(rest).toHaveLength(1 + STATUS_BUFFER_EVENTS_MAX);
    expect(rest.at(-2)).toMatchObject({ type: 'consume_retry', failures: retried });
    expect(rest.at(-1)).toMatchObject({ type: 'consume_stopped', failures: retried });
  });
});
