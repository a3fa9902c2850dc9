// Goal: a group's calls in a cluster reach the shard's owner after a failover: a poll or an admin
// call refused not_leader by a broker that lost the shard is made again on the owner the refusal
// names, within the same call, and the next call goes there at once.
// Method: FelixClient over scripted fake brokers (test/fake-broker.ts), one per address.
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
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
        if (msg.type !== 'group_poll' && msg.type !== 'group_describe') return false;
        const request_id = (msg as { request_id: number }).request_id;
        if (addr === 'quic://b:1') {
          at.send({ type: 'not_leader', node_id: 'c', addr: 'c:1', generation: 2 });
        } else if (msg.type === 'group_poll') {
          const records = [{ offset: 7, payload: new Uint8Array([7]), attempts: 1 }];
          at.send({ type: 'group_records', request_id, records } as Message);
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
    await fresh.close();
    await client.close();
  });
});
