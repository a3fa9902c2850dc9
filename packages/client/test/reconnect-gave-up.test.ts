// Goal: when a client closes itself because its reconnect gave up (`reconnect.attemptsMax`
// spent), every reader waiting on it ends with that ConnectError, as the README says: a
// subscription, a cache watch and a `consume()` loop alike. Before, only the subscription did; a
// watch and a consume loop ended done, as if the caller had closed the client, so a worker
// could not tell a broker gone for good from its own shutdown. Method: FelixClient over the
// scripted fake broker, whose connection the test kills once every reader waits; every redial
// fails, and one attempt is allowed.
import { waitFor, withDeadline } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { describe, expect, it, vi } from 'vitest';
import { FelixClient } from '../src/client.js';
import { ConnectError } from '../src/errors.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import type { ConnectOptions } from '../src/types.js';
import { FakeBroker, type FakeStream } from './fake-broker.js';

const ENDS_WITHIN_MS = 10_000;

/** How a `for await` over `it` ended: 'done' or the error it threw. */
async function ending(it: AsyncIterable<unknown>): Promise<unknown> {
  try {
    for await (const _ of it) {
      // nothing is published: the reader waits
    }
    return 'done';
  } catch (err) {
    return err;
  }
}

/** A client over the fake broker whose every redial fails, so its reconnect gives up. */
async function givingUpRig(opts: Pick<ConnectOptions, 'requestTimeoutMs' | 'reconnect'>) {
  const broker = new FakeBroker({ reauth: false });
  let dials = 0;
  const client = await FelixClient.create(
    { servers: ['quic://fake:1'], tenant: 't1', token: 'x', ...opts },
    {
      open: (server, o, turn) => {
        dials += 1;
        if (dials > 1) return Promise.reject(new Error('refused'));
        return BrokerConnection.over(server, broker.conn, o, turn);
      },
    },
  );
  return { broker, client };
}

describe('a client whose reconnect gave up', () => {
  it('every_reader_ends_with_the_connect_error_when_the_clients_reconnect_gives_up', async () => {
    const { broker, client } = await givingUpRig({
      reconnect: { attemptsMax: 1, baseMs: 1, maxDelayMs: 1 },
    });
    const opened = new Set<string>();
    broker.answer = (at: FakeStream, msg: Message) => {
      if (msg.type === 'subscribe' || msg.type === 'cache_watch') {
        const id = msg.subscription_id!;
        at.send(
          msg.type === 'subscribe'
            ? { type: 'subscribed', subscription_id: id, start_offset: 0, live_offset: 0 }
            : {
                type: 'cache_watch_started',
                subscription_id: id,
                resume_offset: 0,
                resnapshot: false,
              },
        );
        broker.openEvents(id);
        opened.add(msg.type);
        return true;
      }
      if (msg.type === 'group_poll') {
        opened.add(msg.type); // never answered: the poll waits
        return true;
      }
      return false;
    };
    try {
      const ends = Promise.all([
        ending(client.subscribe('orders', { shard: 0 })),
        ending(client.cache('users').watch({ key: 'u1' })),
        ending(client.group('orders', 'billing', { shard: 0 }).consume({ waitMs: 60_000 })),
      ]);
      await waitFor(() => opened.size === 3, 'every reader to be waiting');
      broker.kill();
      const [sub, watch, consume] = await withDeadline(ends, ENDS_WITHIN_MS, 'the readers to end');
      expect({ sub, watch, consume }).toEqual({
        sub: expect.any(ConnectError),
        watch: expect.any(ConnectError),
        consume: expect.any(ConnectError),
      });
    } finally {
      await client.close();
    }
  });

  it('a_subscription_in_a_retry_backoff_when_the_reconnect_gives_up_ends_with_the_connect_error', async () => {
    // The subscription's wait for the reconnect times out (requestTimeoutMs 50) and it backs off
    // (50, 100, 200 ms...); the client gives up about 400 ms after the loss, inside the third
    // backoff, which the close cuts short. Before, the loop then ended done. Jitter pinned near
    // its ceiling so the schedule is known: backoffs end near 99, 248 and 496 ms.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.99);
    const { broker, client } = await givingUpRig({
      requestTimeoutMs: 50,
      reconnect: { attemptsMax: 1, baseMs: 404, maxDelayMs: 404 },
    });
    broker.answer = (at: FakeStream, msg: Message) => {
      if (msg.type !== 'subscribe') return false;
      const id = msg.subscription_id!;
      at.send({ type: 'subscribed', subscription_id: id, start_offset: 0, live_offset: 0 });
      broker.openEvents(id);
      return true;
    };
    try {
      const sub = client.subscribe('orders', { shard: 0 });
      await sub.ready();
      const ended = ending(sub);
      broker.kill();
      const got = await withDeadline(ended, ENDS_WITHIN_MS, 'the subscription to end');
      expect(got).toBeInstanceOf(ConnectError);
    } finally {
      random.mockRestore();
      await client.close();
    }
  });
});
