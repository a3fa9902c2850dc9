// Goal: positions() names where a resume reads next without a gap: after a `diverged` (the
// broker restarted the shard's read below the cursor) the records at the new offsets are unread,
// so the shard's position does not stay past them. Found by a review (it stayed at 4).
// Method: a Subscription over one ShardReader whose fake connection answers a first subscribe
// with four records, ends it, and answers the resubscribe with `divergedAt: 2`.
import { decodeFrame, encodeEventBatch } from '@felix/wire';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import type { StatusEvent } from '../src/status.js';
import { ShardReader, Subscription, type ReaderHost } from '../src/subscription.js';

function stream(frames: Uint8Array[], endAfter: boolean) {
  let i = 0;
  return {
    nextPieces: async () => {
      const f = frames[i++];
      if (f === undefined) return endAfter ? null : new Promise<never>(() => {});
      const { flags, payload } = decodeFrame(f);
      return { flags, length: payload.length, pieces: [payload] };
    },
  };
}

describe('subscription positions after a diverged resubscribe', () => {
  it('positions_after_a_diverged_resubscribe_do_not_skip_the_new_records_below_the_old_cursor', async () => {
    const d = new Uint8Array([1]);
    let subscribes = 0;
    const conn = {
      isLost: false,
      lost: new Promise<Error>(() => {}),
      subscribe: async () => {
        subscribes++;
        if (subscribes === 1)
          return {
            events: stream([encodeEventBatch({ baseOffset: 0, payloads: [d, d, d, d] })], true),
            startOffset: 0,
            liveOffset: 4,
            close: () => {},
          };
        // The new leader's log parted at 2: offsets 2.. now hold other records, not yet sent.
        return {
          events: stream([], false),
          startOffset: 2,
          liveOffset: 2,
          divergedAt: 2,
          close: () => {},
        };
      },
    };
    const events: StatusEvent[] = [];
    const host: ReaderHost = {
      closed: false,
      emit: (e) => events.push(e),
      connection: async () => conn as never,
    };
    const sub = new Subscription(
      async (signal) => [new ShardReader(host, 's', 0, 'earliest', 16, signal)],
      4,
      undefined,
    );
    const it = sub[Symbol.asyncIterator]();
    for (let n = 0; n < 4; n++) expect((await it.next()).value?.offset).toBe(n);
    void it.next(); // waits for the shard's next record, after the resubscribe
    await waitFor(() => events.find((e) => e.type === 'diverged'), 'diverged told', 2000);
    // Saved now, a resume must read the new records at 2 and 3.
    expect(sub.positions()).toEqual({ 0: 2 });
    sub.close();
  });
});
