// Goal: `close()` ends the client's readers quietly and fails its calls loudly. A subscription,
// a cache watch and a `consume()` loop, open or made after the close, end their `for await`
// (done, no throw), as a nats.js iterator ends when its connection closes; a call that answers
// once (`publish`, a cache `get`, a subscription's `ready()`) rejects with ClientClosedError.
// Method: FelixClient over the scripted fake broker (test/fake-broker.ts): each reader is left
// waiting on a live stream (a subscription after its first record, a watch with no change yet, a
// group poll the broker holds), then the client closes.
import { waitFor, withDeadline } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { ClientClosedError } from '../src/errors.js';
import { FakeBroker, clientOver } from './fake-broker.js';

const DONE = { value: undefined, done: true };

describe('a closed client', () => {
  it('readers_end_done_at_close_while_calls_reject_with_client_closed_error', async () => {
    const broker = new FakeBroker({ reauth: false });
    broker.answer = (at, msg) => {
      if (msg.type === 'group_poll') return true; // held: the poll waits, as a long poll does
      if (msg.type !== 'cache_watch') return false;
      const id = msg.subscription_id!;
      at.send({
        type: 'cache_watch_started',
        subscription_id: id,
        resume_offset: 0,
        resnapshot: false,
      } as Message);
      broker.openEvents(id);
      return true;
    };
    // A transport's close ends every stream of its connection, which is what ends a reader
    // waiting on one; the fake's own close ends none, so it is made to here.
    Object.assign(broker.conn, { close: async () => broker.kill() });
    const sent = (type: string) => broker.received.some((r) => r.msg.type === type);
    const client = await clientOver(broker, 5_000);

    const sub = client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]();
    const first = sub.next();
    await waitFor(() => broker.events.size === 1 || undefined, 'the subscription opens', 5_000);
    broker.emit([...broker.events.keys()][0]!, 0, ['a']);
    expect((await first).done).toBe(false);
    const reading = sub.next(); // a quiet stream: waits
    const watching = client.cache('users').watch({ key: 'u1' })[Symbol.asyncIterator]().next();
    const group = client.group('orders', 'billing', { shard: 0 });
    const consuming = group.consume()[Symbol.asyncIterator]().next();
    await waitFor(
      () => (sent('cache_watch') && sent('group_poll')) || undefined,
      'the watch and the poll reach the broker',
      5_000,
    );

    await client.close();
    const ended = await withDeadline(
      Promise.all([reading, watching, consuming]),
      5_000,
      'every reader to end at the close',
    );
    expect(ended).toEqual([DONE, DONE, DONE]);

    // Made after the close: the readers end at once, the calls reject.
    expect(await client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]().next()).toEqual(
      DONE,
    );
    expect(await client.cache('users').watch({ key: 'u1' })[Symbol.asyncIterator]().next()).toEqual(
      DONE,
    );
    expect(await group.consume()[Symbol.asyncIterator]().next()).toEqual(DONE);
    await expect(client.publish('orders', 'x')).rejects.toBeInstanceOf(ClientClosedError);
    await expect(client.cache('users').get('u1')).rejects.toBeInstanceOf(ClientClosedError);
    await expect(client.subscribe('orders', { shard: 0 }).ready()).rejects.toBeInstanceOf(
      ClientClosedError,
    );
  });
});
