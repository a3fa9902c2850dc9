// Goal: a shard reader that the broker keeps refusing with a retryable answer (shard
// unavailable, led elsewhere) waits between resubscribes instead of looping as fast as round
// trips allow, and still ends on a final refusal. Method: a fake connection answering a scripted
// list of refusals, with the reader's random source and sleep pinned.
import { decodeFrame, encodeEventBatch } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import type { StatusEvent } from '../src/status.js';
import { NotLeaderError } from '../src/errors.js';
import { NOT_LEADER_RESUBSCRIBES_MAX } from '../src/limits.js';
import {
  RESUBSCRIBE_BASE_MS,
  RESUBSCRIBE_DELAY_MS_MAX,
  type ReaderHost,
  ShardReader,
  brokerErrorFor,
} from './units.js';

describe('shard reader', () => {
  it('a_retryable_subscribe_refusal_is_retried_after_a_capped_full_jitter_delay', async () => {
    const unavailable = { brokerCode: 'shard_unavailable', message: 'opening', retry: 'retry' };
    const answers = [
      brokerErrorFor(unavailable),
      brokerErrorFor({ brokerCode: 'not_leader', message: 'moved', retry: 'redirect' }),
      ...Array.from({ length: 8 }, () => brokerErrorFor(unavailable)),
      brokerErrorFor({ brokerCode: 'not_found', message: 'deleted', retry: 'fatal' }),
    ];
    let attempts = 0;
    const conn = {
      isLost: false,
      lost: new Promise<Error>(() => {}),
      subscribe: async () => {
        throw answers[attempts++];
      },
    };
    const host: ReaderHost = {
      closed: false,
      emit: () => {},
      connection: async () => conn as never,
    };
    const waits: number[] = [];
    const reader = new ShardReader(host, 'temp', 0, 'earliest', 16, undefined, {
      random: () => 0.999,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });

    await expect(reader.events().next()).rejects.toMatchObject({ brokerCode: 'not_found' });
    expect(attempts).toBe(answers.length);
    // One wait per retryable refusal, doubling from the base up to the named cap.
    const retryable = answers.length - 1;
    expect(waits).toEqual(
      Array.from({ length: retryable }, (_, i) =>
        Math.floor(0.999 * Math.min(RESUBSCRIBE_DELAY_MS_MAX, RESUBSCRIBE_BASE_MS * 2 ** i)),
      ),
    );
    expect(Math.max(...waits)).toBeLessThanOrEqual(RESUBSCRIBE_DELAY_MS_MAX);
  });

  it('a_subscription_retrying_a_shard_no_broker_serves_reports_each_backoff_as_a_status_event', async () => {
    // A new user's trial: `felixctl sub` of a quorum stream whose set had lost its majority
    // waited in silence (and `--until-end` then ended as if the stream were empty): the retries
    // must be visible to whoever watches the client's status.
    const unavailable = { brokerCode: 'shard_unavailable', message: 'no leader', retry: 'retry' };
    const answers = [
      ...Array.from({ length: 3 }, () => brokerErrorFor(unavailable)),
      brokerErrorFor({ brokerCode: 'not_found', message: 'deleted', retry: 'fatal' }),
    ];
    let attempts = 0;
    const conn = {
      isLost: false,
      lost: new Promise<Error>(() => {}),
      subscribe: async () => {
        throw answers[attempts++];
      },
    };
    const said: StatusEvent[] = [];
    const host: ReaderHost = {
      closed: false,
      emit: (e) => void said.push(e),
      connection: async () => conn as never,
    };
    const waits: number[] = [];
    const reader = new ShardReader(host, 'held', 2, 'earliest', 16, undefined, {
      random: () => 0.5,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    await expect(reader.events().next()).rejects.toMatchObject({ brokerCode: 'not_found' });
    expect(said.map((e) => e.type)).toEqual([
      'subscribe_retry',
      'subscribe_retry',
      'subscribe_retry',
    ]);
    said.forEach((e, i) => {
      expect(e).toMatchObject({
        type: 'subscribe_retry',
        stream: 'held',
        shard: 2,
        failure: 'unavailable',
        failures: i + 1,
        delayMs: waits[i],
      });
      expect((e as { error: Error }).error).toMatchObject({ brokerCode: 'shard_unavailable' });
    });
  });

  it('a_subscription_to_a_shard_led_by_another_broker_ends_with_not_leader_instead_of_waiting_forever', async () => {
    // This client does not follow a redirect yet: a lasting not_leader must reach the caller,
    // naming the leader, after a few resubscribes (a move may settle back within them).
    const moved = {
      brokerCode: 'not_leader',
      message: 'led by node broker-2 (client address 127.0.0.1:5002)',
      retry: 'redirect',
    };
    let attempts = 0;
    const conn = {
      isLost: false,
      lost: new Promise<Error>(() => {}),
      subscribe: async () => {
        attempts++;
        throw brokerErrorFor(moved);
      },
    };
    const host: ReaderHost = {
      closed: false,
      emit: () => {},
      connection: async () => conn as never,
    };
    const reader = new ShardReader(host, 'clicks', 0, 'earliest', 16, undefined, {
      random: () => 0,
      sleep: async () => {},
    });
    const err = await reader
      .events()
      .next()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotLeaderError);
    expect((err as NotLeaderError).code).toBe('FELIX_CLIENT_NOT_LEADER');
    expect((err as Error).message).toContain('127.0.0.1:5002');
    expect(attempts).toBe(NOT_LEADER_RESUBSCRIBES_MAX + 1);
  });
});

/** A fake connection whose one subscription delivers `frames` (encoded), then waits. */
function scripted(frames: Uint8Array[]) {
  let i = 0;
  const events = {
    nextPieces: async () => {
      const f = frames[i++];
      if (f === undefined) return new Promise<never>(() => {});
      const { flags, payload } = decodeFrame(f);
      return { flags, length: payload.length, pieces: [payload] };
    },
  };
  const open = { events, startOffset: 0, liveOffset: 0, close: () => {} };
  return { isLost: false, lost: new Promise<Error>(() => {}), subscribe: async () => open };
}

describe('shard reader loss reports', () => {
  it('a_loss_notice_emits_one_gap_at_once_and_the_next_event_carries_the_count', async () => {
    const data = new Uint8Array([1]);
    const conn = scripted([
      encodeEventBatch({ baseOffset: 0, payloads: [data, data] }),
      encodeEventBatch({ baseOffset: 7, payloads: [] }), // offsets 2..6 were dropped
      encodeEventBatch({ baseOffset: 7, payloads: [data] }),
    ]);
    const gaps: StatusEvent[] = [];
    const host: ReaderHost = {
      closed: false,
      emit: (e) => gaps.push(e),
      connection: async () => conn as never,
    };
    const reader = new ShardReader(host, 's', 0, 'earliest', 16, undefined);
    const runs = reader.events();
    const first = (await runs.next()).value!;
    expect(first.event(0).lostBefore).toBe(0);
    const notice = (await runs.next()).value!;
    expect(notice.payloads.length).toBe(0);
    // Reported as the notice is read, before any later record.
    expect(gaps).toEqual([{ type: 'gap', stream: 's', shard: 0, from: 2, count: 5 }]);
    const next = (await runs.next()).value!;
    expect(next.event(0)).toMatchObject({ offset: 7, lostBefore: 5 });
    expect(gaps.length).toBe(1); // not reported twice
    reader.stop();
  });

  it('offsets_that_hold_no_record_are_told_on_the_next_event_and_are_no_loss', async () => {
    const data = new Uint8Array([1]);
    const conn = scripted([
      encodeEventBatch({ baseOffset: 0, payloads: [data, data] }),
      // Offset 2 is a new leader's generation-start record: a page ending on it says so alone.
      encodeEventBatch({ baseOffset: 3, skippedBefore: 1, payloads: [] }),
      encodeEventBatch({ baseOffset: 3, payloads: [data] }),
      // A batch right after two more that hold no record, and one lost.
      encodeEventBatch({ baseOffset: 7, skippedBefore: 2, payloads: [data] }),
    ]);
    const gaps: StatusEvent[] = [];
    const host: ReaderHost = {
      closed: false,
      emit: (e) => gaps.push(e),
      connection: async () => conn as never,
    };
    const reader = new ShardReader(host, 's', 0, 'earliest', 16, undefined);
    const runs = reader.events();
    expect((await runs.next()).value!.event(1).skippedBefore).toBeUndefined();
    expect((await runs.next()).value!.payloads.length).toBe(0);
    expect((await runs.next()).value!.event(0)).toMatchObject({
      offset: 3,
      lostBefore: 0,
      skippedBefore: 1,
    });
    expect((await runs.next()).value!.event(0)).toMatchObject({
      offset: 7,
      lostBefore: 1,
      skippedBefore: 2,
    });
    expect(gaps).toEqual([{ type: 'gap', stream: 's', shard: 0, from: 4, count: 1 }]);
    reader.stop();
  });
});
