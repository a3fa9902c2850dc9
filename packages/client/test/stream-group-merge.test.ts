// Goal: the merged consume() loop of StreamGroup hands back every record claimed but not
// yielded, once, whatever moment it is ended at, starts no shard's loop once ended, leaves
// nothing on the caller's signal, and one loop's abort does not fail another of the same handle.
// Found by a review of the first version, where each of these failed.
// Method: StreamGroup over stand-in Groups whose consume() is the real consume loop
// (consumeIterator) over a ConsumeSource whose polls the test answers by hand; every record a
// poll answered must end up yielded to the caller or handed back, exactly once.
import { getEventListeners } from 'node:events';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { AbortedError } from '../src/errors.js';
import { type ConsumeSource, consumeIterator } from '../src/projections/group-consume.js';
import { GroupMessage } from '../src/projections/group-message.js';
import type { Group } from '../src/projections/group.js';
import type { PollOptions } from '../src/projections/group-poll.js';
import { StreamGroup } from '../src/projections/stream-group.js';

interface Poll {
  resolve: (m: GroupMessage[]) => void;
  reject: (e: unknown) => void;
  settled: boolean;
}

function shardStandIn(shard: number) {
  const polls: Poll[] = [];
  const handedBack: number[] = [];
  const settler = {
    shard,
    ack: async () => undefined,
    nack: async () => undefined,
    settle: async () => ({}) as never,
  };
  const source: ConsumeSource = {
    closed: false,
    poll: (o: PollOptions) =>
      new Promise<GroupMessage[]>((resolve, reject) => {
        const p: Poll = {
          resolve: (m) => {
            p.settled = true;
            resolve(m);
          },
          reject: (e) => {
            p.settled = true;
            reject(e);
          },
          settled: false,
        };
        polls.push(p);
        o.signal?.addEventListener('abort', () => p.reject(new AbortedError('poll')), {
          once: true,
        });
      }),
    handBack: (msgs) => {
      handedBack.push(...msgs.map((m) => m.offset));
      return msgs.map(() => Promise.resolve());
    },
    sendGatheredAcks: () => undefined,
    release: () => undefined,
  };
  const group = {
    shard,
    consume: (o: PollOptions) => ({ [Symbol.asyncIterator]: () => consumeIterator(source, o) }),
    handBack: source.handBack,
    release: () => undefined,
  } as unknown as Group;
  const msg = (offset: number) => new GroupMessage(settler, offset, new Uint8Array(), 1);
  const open = () => polls.filter((p) => !p.settled);
  return { group, polls, open, handedBack, msg };
}

function rig(shards: number, lookup?: Promise<number>) {
  const s = Array.from({ length: shards }, (_, i) => shardStandIn(i));
  const sg = new StreamGroup(
    'events',
    'workers',
    () => lookup ?? Promise.resolve(shards),
    (i) => s[i]!.group,
  );
  return { s, sg };
}

describe('the merged consume loop of a group over every shard', () => {
  it('a_return_while_the_first_next_waits_on_the_shard_lookup_leaves_no_record_claimed', async () => {
    let answer!: (n: number) => void;
    const lookup = new Promise<number>((r) => {
      answer = r;
    });
    const { s, sg } = rig(2, lookup);
    const it = sg.consume()[Symbol.asyncIterator]();
    const first = it.next(); // waits on the shard lookup
    await it.return!(); // the caller ends the loop meanwhile (shutdown)
    answer(2);
    // Ended before it polled: it ends without starting a shard's loop, so nothing is claimed
    // (before, every shard's loop started after the end, and all but one record stayed claimed
    // until its visibility timeout, the loops polling on).
    expect(await first).toEqual({ value: undefined, done: true });
    expect(s.map((sh) => sh.polls.length)).toEqual([0, 0]);
  });

  it('a_merged_loop_ended_takes_its_listener_off_the_callers_signal', async () => {
    const { s, sg } = rig(2);
    const shutdown = new AbortController();
    for (let n = 0; n < 3; n++) {
      const it = sg.consume({ signal: shutdown.signal })[Symbol.asyncIterator]();
      const p = it.next();
      await waitFor(() => s[0]!.open().length > 0 || undefined, 'polled', 2000);
      s[0]!.open()[0]!.resolve([s[0]!.msg(n)]);
      await p;
      await it.return!();
      for (const sh of s) for (const q of sh.open()) q.resolve([]);
    }
    // Three loops started and ended under one long-lived signal: none should still listen.
    expect(getEventListeners(shutdown.signal, 'abort').length).toBe(0);
  });

  it('a_return_right_after_a_next_hands_each_held_record_back_once', async () => {
    const { s, sg } = rig(2);
    const it = sg.consume()[Symbol.asyncIterator]();
    const p0 = it.next();
    await waitFor(() => s[0]!.open().length > 0 || undefined, 'polled', 2000);
    s[0]!.open()[0]!.resolve([s[0]!.msg(0), s[0]!.msg(1), s[0]!.msg(2)]);
    expect((await p0).value?.offset).toBe(0);
    const p1 = it.next();
    const r = it.return!();
    const got = await p1;
    await r;
    for (const sh of s) for (const q of sh.open()) q.resolve([]);
    const yielded = got.done ? [0] : [0, got.value.offset];
    await waitFor(
      () => s[0]!.handedBack.length + yielded.length >= 3 || undefined,
      'the rest handed back',
      2000,
    );
    const all = [...yielded, ...s[0]!.handedBack].sort();
    expect(all).toEqual([0, 1, 2]); // each record once: yielded or handed back
  });

  it('one_loop_aborted_during_the_shard_lookup_does_not_fail_another_loop_of_the_same_handle', async () => {
    const s = [shardStandIn(0), shardStandIn(1)];
    let answer!: (n: number) => void;
    const shared = new Promise<number>((r) => {
      answer = r;
    });
    // One shared lookup, as client.shards() makes; each caller's signal ends only its own wait.
    const sg = new StreamGroup(
      'events',
      'workers',
      () => shared,
      (i) => s[i]!.group,
    );
    const a = new AbortController();
    const loopA = sg.consume({ signal: a.signal })[Symbol.asyncIterator]();
    const loopB = sg.consume()[Symbol.asyncIterator]();
    const nextA = loopA.next();
    const nextB = loopB.next().then(
      (r) => ({ r }),
      (err: unknown) => ({ err }),
    );
    a.abort(); // worker A shuts down; worker B was not asked to
    expect(await nextA).toEqual({ value: undefined, done: true });
    answer(2);
    await waitFor(() => s[1]!.open().length > 0 || undefined, 'B polls shard 1', 2000);
    for (const q of s[1]!.open()) q.resolve([s[1]!.msg(5)]);
    const got = await nextB;
    expect('err' in got ? String(got.err) : got.r.value?.offset).toBe(5);
    await loopB.return!();
  });

  it('a_record_waiting_in_the_merge_past_the_hold_bound_goes_back_rather_than_out', async () => {
    // A 600 ms claim: a record waits 200 ms at most in a shard's loop, and as long in the merge.
    const { s, sg } = rig(2);
    const it = sg.consume({ visibilityMs: 600 })[Symbol.asyncIterator]();
    const p0 = it.next();
    await waitFor(
      () => (s[0]!.open().length > 0 && s[1]!.open().length > 0) || undefined,
      'both shards polled',
      2000,
    );
    s[0]!.open()[0]!.resolve([s[0]!.msg(10)]);
    expect((await p0).value?.offset).toBe(10);
    s[1]!.open()[0]!.resolve([s[1]!.msg(20)]); // waits in the merge while the caller works
    await new Promise((r) => setTimeout(r, 300)); // the caller's work on offset 10
    const p1 = it.next();
    // Offset 20 waited past the bound: handed back (its shard's poll gets it again), not out.
    await waitFor(() => s[1]!.handedBack.includes(20) || undefined, '20 handed back', 2000);
    await waitFor(() => s[1]!.open().length > 0 || undefined, 'shard 1 polled again', 2000);
    s[1]!.open()[0]!.resolve([s[1]!.msg(20)]);
    expect((await p1).value?.offset).toBe(20);
    await it.return!();
    for (const sh of s) for (const q of sh.open()) q.resolve([]);
  });
});
