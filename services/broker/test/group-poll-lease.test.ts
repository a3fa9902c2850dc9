// Goal: a long poll admitted while its broker held the lease and the shard hands nothing out if,
// when it wakes, either is gone: the claims would live on a broker the shard's next leader never
// hears from, and the records would go to a second consumer within their claims. It answers the
// refusal the broker's ownership check gives instead (shard_unavailable, lease_lapsed here).
// Method: a GroupService over a stand-in shard, with an ownership check the test turns from
// serving to refusing while the poll is parked; a record is then published and the service woken.
import type { Message } from '@felix/wire';
import { cleanupScope, waitFor, withDeadline } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import type { GroupMsg } from '../src/groups/requests.js';
import { Refusal } from '../src/session/refusal.js';
import {
  GROUP_AUTH,
  GROUP_SCOPE,
  HELD_IN_MEMORY,
  groupServiceOver,
} from './support/group-service.js';

const cleanup = cleanupScope();
afterEach(() => cleanup.run());

const auth = GROUP_AUTH;
const scope = GROUP_SCOPE;

/** A shard holding `tail` records in memory, counting the reads of its tail. */
function shardOf() {
  const s = {
    tail: 0,
    reads: 0,
    get appliedNext(): number {
      s.reads++;
      return s.tail;
    },
    ...HELD_IN_MEMORY,
  };
  return s;
}

describe('a long poll and the broker lease', () => {
  it('a_parked_poll_that_outlives_its_brokers_lease_hands_nothing_out', async () => {
    const shard = shardOf();
    const { svc, close } = await groupServiceOver(shard, { waitRecheckMs: 60_000 });
    cleanup.defer(close);
    let refusal: Refusal | null = null;
    svc.ownership = { refuseMessage: () => refusal };
    const poll = (request_id: number) =>
      ({
        type: 'group_poll',
        ...scope,
        max_records: 1,
        wait_ms: 30_000,
        reclaim: false,
        request_id,
      }) as GroupMsg;
    const parked = Promise.resolve(svc.answer(auth, poll(1), {})).then(
      (m) => m,
      (e: unknown) => e,
    );
    await waitFor(() => shard.reads > 0, 'the poll to look and park');
    refusal = new Refusal('shard_unavailable', 'jobs shard 0: lease lapsed', 'lease_lapsed');
    shard.tail = 1;
    svc.wake(shard as never);
    const answer = await withDeadline(parked, 5_000, 'the woken poll to answer');
    expect(answer).toBe(refusal);
    // The record was not claimed: once the broker serves again, a poll gets it at attempt 1.
    refusal = null;
    const again = (await withDeadline(
      Promise.resolve(svc.answer(auth, { ...poll(2), wait_ms: 0 } as GroupMsg, {})),
      5_000,
      'a poll after the lease came back',
    )) as Message;
    expect(
      again.type === 'group_records' && again.records.map((r) => [r.offset, r.attempts]),
    ).toEqual([[0, 1]]);
  });
});
