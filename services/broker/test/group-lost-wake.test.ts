// Goal: a long poll woken after its hand-out looked and found nothing, but before it began to
// sleep (a publish landing while the hand-out's promise settles), answers with the record at
// once, not at its next re-check or its deadline. Method: a GroupService whose polls re-check
// only every 60 s over a stand-in shard that publishes a record, and wakes the service, in a
// microtask queued as the hand-out reads the shard's tail.
import type { Message } from '@felix/wire';
import { withDeadline } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import type { GroupService } from '../src/groups/group-service.js';
import type { GroupMsg } from '../src/groups/requests.js';
import {
  GROUP_AUTH,
  GROUP_SCOPE,
  HELD_IN_MEMORY,
  groupServiceOver,
} from './support/group-service.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const auth = GROUP_AUTH;
const scope = GROUP_SCOPE;

/** An empty shard that, once armed, publishes offset 0 (and wakes `svc`) in a microtask queued
 *  by the next read of its tail: after that read, before the reader's promise settles. */
function publishingShard() {
  let tail = 0;
  let armed: GroupService | undefined;
  let tailReadsAfterPublish = 0;
  const s = {
    get appliedNext() {
      const svc = armed;
      if (svc !== undefined) {
        armed = undefined;
        queueMicrotask(() => {
          tail = 1;
          svc.wake(s as never);
        });
      } else if (tail > 0) tailReadsAfterPublish++;
      return tail;
    },
    ...HELD_IN_MEMORY,
  };
  return { s, arm: (svc: GroupService) => (armed = svc), reads: () => tailReadsAfterPublish };
}

describe('a long poll woken between its hand-out and its sleep', () => {
  it('a_long_poll_woken_after_its_empty_hand_out_looked_answers_with_the_record_promptly', async () => {
    const shard = publishingShard();
    const { svc, close } = await groupServiceOver(shard.s, { waitRecheckMs: 60_000 });
    cleanups.push(close);
    shard.arm(svc);
    const poll = {
      type: 'group_poll',
      ...scope,
      max_records: 1,
      wait_ms: 30_000,
      reclaim: false,
      request_id: 1,
    } as GroupMsg;
    const answer = (await withDeadline(
      Promise.resolve(svc.answer(auth, poll, {})),
      5_000,
      'the woken poll to answer',
    )) as Message;
    expect(answer.type === 'group_records' && answer.records.map((r) => r.offset)).toEqual([0]);
    // The record was taken by a second hand-out, so the wake came after the first one looked.
    expect(shard.reads()).toBeGreaterThan(0);
  });
});
