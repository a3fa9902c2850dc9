// Goal: a consume loop with several polls out yields a record from whichever poll brings one,
// never holding it behind an earlier poll that waits out its long poll with nothing.
// Method: consumeIterator over a stand-in group whose polls the test answers one by one.
import { waitFor, withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type ConsumeSource, consumeIterator } from '../src/projections/group-consume.js';
import { GroupMessage, type GroupSettler } from '../src/projections/group-message.js';

const settler = {
  ack: () => Promise.resolve(),
  nack: () => Promise.resolve(),
  settle: () => Promise.reject(new Error('not used')),
} as unknown as GroupSettler;
const msg = (offset: number) => new GroupMessage(settler, offset, new Uint8Array([offset]), 1);

describe('a consume loop with polls ahead', () => {
  it('a_consume_loop_yields_a_later_polls_record_while_an_earlier_poll_still_waits', async () => {
    const polls: Array<(m: GroupMessage[]) => void> = [];
    const source: ConsumeSource = {
      closed: false,
      poll: () => new Promise<GroupMessage[]>((resolve) => polls.push(resolve)),
      handBack: (msgs) => msgs.map(() => Promise.resolve()),
      sendGatheredAcks: () => undefined,
      release: () => undefined,
    };
    const loop = consumeIterator(source, {});
    const first = loop.next();
    await waitFor(() => polls.length === 1, 'the first poll');
    polls[0]!([msg(0)]);
    expect((await first).value?.offset).toBe(0);
    // Worked through quickly: the loop polls further ahead once the next batch comes.
    const second = loop.next();
    await waitFor(() => polls.length === 2, 'the poll ahead');
    polls[1]!([msg(1)]);
    expect((await second).value?.offset).toBe(1);
    await waitFor(() => polls.length === 5, 'three polls ahead');
    // The earlier polls wait at the broker with nothing (a record nacked meanwhile went to the
    // latest one); the record must not wait out their long polls.
    const third = loop.next();
    polls[4]!([msg(2)]);
    const got = await withDeadline(third, 2_000, 'the later poll record');
    expect(got.value?.offset).toBe(2);
    polls[2]!([]);
    polls[3]!([]);
    await loop.return?.();
  });
});
