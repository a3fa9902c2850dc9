// Goal: a poll on a connection that is live writes its request in the call's own turn (no await
// on the connection first), and one whose client has no live connection waits for one as
// before; an ack on a live connection joins its turn's batch without waiting for the connection
// either; a poll stream the broker ended while it was idle is not used again. Method: a Group
// over a stand-in host whose connection records each poll request written and answers it with
// one record, and answers each ack batch as settled.
import {
  FEATURE_CONSUMER_GROUP,
  FEATURE_HI_GROUP_ACK_BATCH,
  type Message,
  decodeFrame,
  encodeMessage,
} from '@felix/wire';
import { describe, expect, it, vi } from 'vitest';
import { Group } from '../src/projections/group.js';
import type { ProjectionHost } from '../src/projections/host.js';
import type { BrokerConnection } from '../src/protocol/broker-connection.js';
import type { InFrame } from '../src/protocol/frame-stream.js';
import type { Prepared } from '../src/protocol/request-lane.js';
import { TurnBatcher } from '../src/protocol/turn-batcher.js';
import { GROUP_POLL_STREAM_IDLE_RELEASE_MS, REQUEST_TIMEOUT_MS_DEFAULT } from '../src/limits.js';
import { CheckTicks } from '../src/util/check-ticks.js';

function standIn(live: boolean, featuresHi = 0) {
  const polls: Uint8Array[] = [];
  const acks: Uint8Array[] = [];
  /** Ends each poll stream opened so far, as the broker's half-close does. */
  const enders: Array<() => void> = [];
  let waits = 0;
  let ends = 0;
  const bc = {
    server: 'stand-in',
    scope: { tenant: 't1', namespace: 'default' },
    negotiated: { flags: 0, features: FEATURE_CONSUMER_GROUP, featuresHi, window: 1 },
    // The connection's check of overdue answers, which no test here runs.
    ticks: new CheckTicks(),
    requestTimeoutMs: REQUEST_TIMEOUT_MS_DEFAULT,
    watchDue: () => undefined,
    unwatchDue: () => undefined,
    turn: new TurnBatcher(),
    openStream: async () => {
      let onFrame: (f: InFrame) => void = () => undefined;
      return {
        stream: {
          // Each poll is answered with one record, after its write (as over a connection).
          write: async (b: Uint8Array) => {
            polls.push(b);
            const rid = polls.length;
            const records = [
              { offset: rid, payload: new Uint8Array([rid]), attempts: 1, skipped_before: 0 },
            ];
            const frame = encodeMessage({ type: 'group_records', records, request_id: rid });
            queueMicrotask(() => onFrame({ flags: 0, payload: decodeFrame(frame).payload }));
          },
          reset: () => undefined,
          end: async () => {
            ends++;
          },
        },
        frames: {
          forEachFrame: (each: (f: InFrame) => void, onEnd: (err: unknown) => void) => {
            onFrame = each;
            enders.push(() => onEnd(null));
          },
          release: async () => undefined,
        },
      };
    },
    requests: {
      // As the request lane: the request resolves with `finish` of its answer.
      requestPrepared(prepare: (id: number) => Prepared<unknown>) {
        const p = prepare(acks.length + 1);
        acks.push(p.bytes);
        const answer: Message = { type: 'group_acked', stale: [], request_id: acks.length };
        return Promise.resolve().then(() => (p.finish === undefined ? answer : p.finish(answer)));
      },
    },
  } as unknown as BrokerConnection;
  const host = {
    connection: async () => {
      waits++;
      return bc;
    },
    live: () => (live ? bc : undefined),
    closed: false,
  } as ProjectionHost;
  return {
    group: new Group(host, 'jobs', 'workers', { shard: 0 }),
    polls,
    acks,
    enders,
    waits: () => waits,
    ends: () => ends,
  };
}

describe('group poll turn', () => {
  it('a_poll_on_a_live_connection_writes_its_request_in_the_calls_own_turn', async () => {
    const { group, polls, waits } = standIn(true);
    await group.poll({ max: 1 }); // opens the poll stream (an await); later polls reuse it
    const second = group.poll({ max: 1 });
    expect(polls.length).toBe(2); // written before poll() returned
    await second;
    expect(waits()).toBe(0);
    // No live connection: each poll waits for one before writing.
    const offline = standIn(false);
    await offline.group.poll({ max: 1 });
    const third = offline.group.poll({ max: 1 });
    expect(offline.polls.length).toBe(1);
    await third;
    expect(offline.waits()).toBe(2);
  });

  it('an_ack_on_a_live_connection_joins_its_turns_batch_without_waiting_for_the_connection', async () => {
    const { group, acks, waits } = standIn(true, FEATURE_HI_GROUP_ACK_BATCH);
    const [a, b] = [await group.poll({ max: 1 }), await group.poll({ max: 1 })];
    await Promise.all([a[0]!.ack(), b[0]!.ack()]);
    expect(acks.length).toBe(1); // both acks of the turn in one batch
    expect(waits()).toBe(0);
    // No live connection: the ack waits for one first, and still settles.
    const offline = standIn(false, FEATURE_HI_GROUP_ACK_BATCH);
    const [m] = await offline.group.poll({ max: 1 });
    await m!.ack();
    expect(offline.acks.length).toBe(1);
    expect(offline.waits()).toBe(2);
  });

  it('a_poll_stream_the_broker_ended_while_it_was_idle_is_not_used_again', async () => {
    const { group, polls, enders } = standIn(true);
    await group.poll({ max: 1 });
    expect(enders.length).toBe(1);
    enders[0]!(); // the broker half-closes the idle poll stream
    const [m] = await group.poll({ max: 1 }); // on a stream of its own
    expect(enders.length).toBe(2);
    expect(m!.offset).toBe(2);
    expect(polls.length).toBe(2);
  });

  it('a_group_handle_left_idle_closes_its_poll_streams_so_abandoned_handles_do_not_exhaust_the_connection', async () => {
    // Before, a handle kept its idle poll stream for as long as the connection lived: a job
    // runner making a handle per job (felix.group(...).poll()) filled the connection's 1,024
    // streams and every later poll failed with StreamLimitExceededError (found in trial 5).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const { group, ends, enders } = standIn(true);
      await group.poll({ max: 1 });
      vi.advanceTimersByTime(GROUP_POLL_STREAM_IDLE_RELEASE_MS - 1);
      await group.poll({ max: 1 }); // reused, and idle again from here
      expect(enders.length).toBe(1);
      vi.advanceTimersByTime(GROUP_POLL_STREAM_IDLE_RELEASE_MS - 1);
      expect(ends()).toBe(0); // a handle in use keeps its stream
      vi.advanceTimersByTime(1);
      expect(ends()).toBe(1); // idle for the whole bound: let go
      const [m] = await group.poll({ max: 1 }); // the handle still polls, on a new stream
      expect(m!.offset).toBe(3);
      expect(enders.length).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });
});
