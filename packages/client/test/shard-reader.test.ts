// Goal: a shard reader that the broker keeps refusing with a retryable answer (shard
// unavailable, led elsewhere) waits between resubscribes instead of looping as fast as round
// trips allow, and still ends on a final refusal. Method: a fake connection answering a scripted
// list of refusals, with the reader's random source and sleep pinned.
import { describe, expect, it } from 'vitest';
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
});
