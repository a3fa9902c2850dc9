// Goal: a group's calls in a cluster reach the shard's owner after a failover: a poll or an admin
// call refused not_leader by a broker that lost the shard is made again on the owner the refusal
// names, within the same call, and the next call goes there at once; a walk is bounded and
// never goes back to a broker it tried.
// Method: FelixClient over scripted fake brokers (test/fake-broker.ts), one per address.
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import { RedirectLimitError } from '../src/errors.js';
import { fakeCluster } from './fake-broker.js';
import { FakeClock } from './fake-clock.js';

describe('group calls on a cluster', () => {
  it('a_group_poll_or_admin_call_refused_by_a_former_owner_is_made_again_on_the_owner_it_names', async () => {
    // A trial's loop of plain polls kept asking the broker that had lost the shard in a
    // failover: each poll was refused not_leader naming the new owner, and none learned it.
    const rig = fakeCluster((addr, b) => {
      b.topology = ['a', 'b', 'c'].map((n) => ({ node_id: n, addr: `${n}:1` }));
      // The entry still names the old owner b; b knows that c leads now.
      b.owners = [{ shard: 0, node_id: 'b', addr: 'b:1', generation: 1 }];
      b.answer = (at, msg) => {
        const answered = ['group_poll', 'group_describe', 'group_redrive'];
        if (!answered.includes(msg.type)) return false;
        const request_id = (msg as { request_id: number }).request_id;
        if (addr === 'quic://b:1') {
          at.send({ type: 'not_leader', node_id: 'c', addr: 'c:1', generation: 2 });
        } else if (msg.type === 'group_poll') {
          const records = [{ offset: 7, payload: new Uint8Array([7]), attempts: 1 }];
          at.send({ type: 'group_records', request_id, records } as Message);
        } else if (msg.type === 'group_redrive') {
          at.send({ type: 'cache_ok', request_id } as Message);
        } else {
          const info = { tail: 8, in_flight: 1, owed: 0, dead_letters: 0 };
          at.send({ type: 'group_info', committed: 7, ...info, request_id } as Message);
        }
        return true;
      };
    });
    const client = await FelixClient.create(
      { servers: ['quic://a:1'], tenant: 't1', token: 't' },
      { open: rig.open, clock: new FakeClock() },
    );
    const asked = (addr: string, type: string) =>
      (rig.opened[addr] ?? []).flatMap((b) => b.received).filter((r) => r.msg.type === type).length;
    const group = client.group('orders', 'billing');
    const first = await group.poll({ max: 1, waitMs: 0 });
    expect(first.map((m) => m.offset)).toEqual([7]);
    expect(asked('quic://b:1', 'group_poll')).toBe(1);
    // The next poll goes to c at once: the redirect was learned.
    await group.poll({ max: 1, waitMs: 0 });
    expect(asked('quic://b:1', 'group_poll')).toBe(1);
    expect(asked('quic://c:1', 'group_poll')).toBe(2);
    // An admin call on a handle whose owner is stale follows the redirect too.
    const fresh = await FelixClient.create(
      { servers: ['quic://a:1'], tenant: 't1', token: 't' },
      { open: rig.open, clock: new FakeClock() },
    );
    expect(await fresh.group('orders', 'audit').describe()).toMatchObject({
      committed: 7,
      tail: 8,
    });
    expect(asked('quic://b:1', 'group_describe')).toBe(1);
    expect(asked('quic://c:1', 'group_describe')).toBe(1);
    // So does a single settle (a redrive): refused where it was not applied, made on c.
    const third = await FelixClient.create(
      { servers: ['quic://a:1'], tenant: 't1', token: 't' },
      { open: rig.open, clock: new FakeClock() },
    );
    await third.group('orders', 'audit').redrive(3);
    expect(asked('quic://b:1', 'group_redrive')).toBe(1);
    expect(asked('quic://c:1', 'group_redrive')).toBe(1);
    await third.close();
    await fresh.close();
    await client.close();
  });

  it('a_group_poll_redirected_back_to_a_broker_it_tried_fails_typed_and_the_next_asks_again', async () => {
    // b and c each name the other: the walk never goes back to b, and fails RedirectLimitError
    // (retried after a backoff), after which the owner is asked again, not taken as c.
    const rig = fakeCluster((addr, b) => {
      b.topology = ['a', 'b', 'c'].map((n) => ({ node_id: n, addr: `${n}:1` }));
      b.owners = [{ shard: 0, node_id: 'b', addr: 'b:1', generation: 1 }];
      b.answer = (at, msg) => {
        if (msg.type !== 'group_poll') return false;
        const other = addr === 'quic://b:1' ? 'c' : 'b';
        at.send({ type: 'not_leader', node_id: other, addr: `${other}:1`, generation: 2 });
        return true;
      };
    });
    const client = await FelixClient.create(
      { servers: ['quic://a:1'], tenant: 't1', token: 't' },
      { open: rig.open, clock: new FakeClock() },
    );
    const polls = (addr: string) =>
      (rig.opened[addr] ?? []).flatMap((b) => b.received).filter((r) => r.msg.type === 'group_poll')
        .length;
    const owners = () =>
      (rig.opened['quic://a:1'] ?? [])
        .flatMap((b) => b.received)
        .filter((r) => r.msg.type === 'shard_owners').length;
    const group = client.group('orders', 'billing');
    const err = await group.poll({ max: 1, waitMs: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedirectLimitError);
    expect((err as RedirectLimitError).retry).toBe('retry_after_backoff');
    expect([polls('quic://b:1'), polls('quic://c:1')]).toEqual([1, 1]);
    const asked = owners();
    // Its outcome is the walk's again; what it asked first is what this checks.
    await group.poll({ max: 1, waitMs: 0 }).catch(() => undefined);
    expect(owners(), 'the owner is asked again').toBe(asked + 1);
    await client.close();
  });
});
