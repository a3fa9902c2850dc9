// Found by a review: 48f7f11a's hold timer releases what a one-shard loop holds while a long job runs.
// The all-shards merge keeps one record of every other shard's loop (already yielded to it, so
// no shard loop's timer covers it) and checks its age only when the caller asks for more: during
// a job longer than the claim (kept with extend) those records lapse in the client.
import { describe, expect, it } from 'vitest';
import type { Group } from '../src/projections/group.js';
import type { GroupMessage } from '../src/projections/group-message.js';
import { StreamGroup } from '../src/projections/stream-group.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('merged consume during a long job', () => {
  it('a_record_waiting_in_the_merge_is_handed_back_before_its_claim_lapses_during_a_long_job', async () => {
    const handedBack: number[] = [];
    const fakeGroup = (shard: number) =>
      ({
        shard,
        consume: () => ({
          [Symbol.asyncIterator]: () => {
            let n = 0;
            return {
              next: async () => ({
                value: { offset: shard * 100 + n++, shard } as unknown as GroupMessage,
                done: false,
              }),
              return: async () => ({ value: undefined, done: true }),
            };
          },
        }),
        handBack: (msgs: readonly GroupMessage[]) => {
          for (const m of msgs) handedBack.push(m.offset);
          return [];
        },
        release: () => undefined,
      }) as unknown as Group;
    const sg = new StreamGroup('jobs', 'workers', async () => 2, fakeGroup);
    // 600 ms claim: 200 ms hold bound.
    const it = sg.consume({ visibilityMs: 600 })[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.done).toBe(false);
    const yieldedAt = performance.now();
    // A long job (its own claim extended): 800 ms. The other shard's record waits in the merge.
    await sleep(800);
    const waited = performance.now() - yieldedAt;
    // Its claim (600 ms from about when it was yielded to the merge) has lapsed by now unless the
    // merge handed it back meanwhile.
    expect({ handedBack: handedBack.length, waitedPastClaim: waited > 600 }).toEqual({
      handedBack: 1,
      waitedPastClaim: true,
    });
    await it.return?.();
  });
});
