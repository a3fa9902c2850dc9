// Goal: a broker whose connection stays up but that never answers a step of opening something
// (the `auth` of a connection or of a stream, a `subscribe`, a `cache_watch`) does not hold the
// caller for as long as the connection lives: each wait ends within its bound (connectTimeoutMs
// for the connection's auth, requestTimeoutMs for the rest) with a typed error, the stream it
// waited on is reset, and a subscription or watch tries again (SUBSCRIBE_UNANSWERED_RETRIES_MAX
// times) before it ends with SubscribeTimeoutError. Method: FelixClient over the scripted fake
// broker, whose `answer` hook swallows the message the test names; its connection reports no
// packet counts, so the client's silence check (a dead broker) ends nothing here.
import { waitFor, withDeadline } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { ConnectError, SubscribeTimeoutError, TimeoutError } from '../src/errors.js';
import { SUBSCRIBE_UNANSWERED_RETRIES_MAX } from '../src/limits.js';
import { FakeBroker, type FakeStream, clientOver } from './fake-broker.js';

/** The client's connect and request timeouts here. */
const BOUND_MS = 200;
/** Far beyond what the attempts take (a few bounds and resubscribe delays): a hang fails here. */
const ENDS_WITHIN_MS = 10_000;

/** A client over a broker that answers nothing `silent` picks (given the `auth`s so far), and
 *  what `answer` takes over as it says. */
function rig(
  silent: (msg: Message, auths: number) => boolean,
  answer: (at: FakeStream, msg: Message) => boolean = () => false,
) {
  const broker = new FakeBroker({ reauth: false });
  const swallowed: FakeStream[] = [];
  let auths = 0;
  broker.answer = (at, msg) => {
    if (msg.type === 'auth') auths++;
    if (!silent(msg, auths)) return answer(at, msg);
    swallowed.push(at);
    return true;
  };
  const connecting = clientOver(broker, BOUND_MS);
  return { broker, connecting, swallowed };
}

const sent = (broker: FakeBroker, type: string) =>
  broker.received.filter(({ msg }) => msg.type === type);

describe('an opening the broker never answers', () => {
  it('a_connect_whose_auth_is_never_answered_fails_typed_within_its_deadline', async () => {
    const { broker, connecting } = rig((msg) => msg.type === 'auth');
    const failed = withDeadline(connecting, ENDS_WITHIN_MS, 'the connect to fail');
    await expect(failed).rejects.toBeInstanceOf(ConnectError);
    await expect(connecting).rejects.toMatchObject({ cause: expect.any(TimeoutError) });
    // The connection that never authenticated is closed, not left open.
    await withDeadline(broker.conn.closed, ENDS_WITHIN_MS, 'the connection to close');
  });

  it('a_subscription_whose_open_is_never_answered_fails_typed_within_its_deadline', async () => {
    const { broker, connecting, swallowed } = rig((msg) => msg.type === 'subscribe');
    const client = await connecting;
    try {
      const next = client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]().next();
      const ended = withDeadline(next, ENDS_WITHIN_MS, 'the subscription to end');
      await expect(ended).rejects.toBeInstanceOf(SubscribeTimeoutError);
      await expect(next).rejects.toMatchObject({
        code: 'FELIX_CLIENT_SUBSCRIBE_TIMEOUT',
        retry: 'reconnect',
        ms: BOUND_MS,
      });
      // Tried again first, then ended; every control stream it gave up on was reset.
      expect(sent(broker, 'subscribe')).toHaveLength(SUBSCRIBE_UNANSWERED_RETRIES_MAX + 1);
      expect(swallowed.every((s) => s.isReset)).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('a_watch_whose_start_is_never_answered_fails_typed_within_its_deadline', async () => {
    const { broker, connecting, swallowed } = rig((msg) => msg.type === 'cache_watch');
    const client = await connecting;
    try {
      const next = client.cache('users').watch({ key: 'u1' })[Symbol.asyncIterator]().next();
      const ended = withDeadline(next, ENDS_WITHIN_MS, 'the watch to end');
      await expect(ended).rejects.toBeInstanceOf(SubscribeTimeoutError);
      await expect(next).rejects.toMatchObject({ code: 'FELIX_CLIENT_SUBSCRIBE_TIMEOUT' });
      expect(sent(broker, 'cache_watch')).toHaveLength(SUBSCRIBE_UNANSWERED_RETRIES_MAX + 1);
      expect(swallowed.every((s) => s.isReset)).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('a_subscription_whose_stream_auth_is_never_answered_fails_typed_within_its_deadline', async () => {
    // The connection's own auth (the first) is answered; its subscriptions' streams' are not.
    const { broker, connecting, swallowed } = rig((msg, auths) => msg.type === 'auth' && auths > 1);
    const client = await connecting;
    try {
      const next = client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]().next();
      const ended = withDeadline(next, ENDS_WITHIN_MS, 'the subscription to end');
      await expect(ended).rejects.toBeInstanceOf(SubscribeTimeoutError);
      expect(sent(broker, 'subscribe')).toHaveLength(0);
      expect(swallowed).toHaveLength(SUBSCRIBE_UNANSWERED_RETRIES_MAX + 1);
      expect(swallowed.every((s) => s.isReset)).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('a_subscription_whose_open_went_unanswered_once_resubscribes_and_delivers', async () => {
    let subscribes = 0;
    const { broker, connecting } = rig((msg) => msg.type === 'subscribe' && ++subscribes === 1);
    const client = await connecting;
    try {
      const first = client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]().next();
      await waitFor(() => broker.events.size === 1, 'the second subscribe to be answered');
      const [id] = [...broker.events.keys()];
      broker.emit(id!, 0, ['a']);
      const ev = await withDeadline(first, ENDS_WITHIN_MS, 'the first event');
      expect(ev.value).toMatchObject({ offset: 0 });
      expect(sent(broker, 'subscribe')).toHaveLength(2);
    } finally {
      await client.close();
    }
  });

  it('a_merged_subscription_whose_shard_lookup_is_never_answered_fails_typed_within_its_deadline', async () => {
    const { connecting } = rig((msg) => msg.type === 'stream_shards');
    const client = await connecting;
    try {
      // No `shard`: the subscription asks the stream's shard count first.
      const next = client.subscribe('orders')[Symbol.asyncIterator]().next();
      const ended = withDeadline(next, ENDS_WITHIN_MS, 'the subscription to end');
      await expect(ended).rejects.toBeInstanceOf(TimeoutError);
      await expect(next).rejects.toMatchObject({ code: 'FELIX_CLIENT_TIMEOUT', retry: 'retry' });
    } finally {
      await client.close();
    }
  });

  it('a_request_stream_whose_auth_is_never_answered_fails_typed_and_is_replaced', async () => {
    let streamAuths = 0;
    const { connecting } = rig(
      (msg, auths) => msg.type === 'auth' && auths > 1 && ++streamAuths === 1,
      (at, msg) => {
        if (msg.type !== 'counter_get') return false;
        at.send({ type: 'counter_value', value: 3n, request_id: msg.request_id });
        return true;
      },
    );
    const client = await connecting;
    try {
      const asked = client.counter('hits').get('k');
      const failed = withDeadline(asked, ENDS_WITHIN_MS, 'the counter read to fail');
      await expect(failed).rejects.toBeInstanceOf(TimeoutError);
      // The stream that never authenticated is given up: the next request opens another.
      await expect(client.counter('hits').get('k')).resolves.toBe(3n);
    } finally {
      await client.close();
    }
  });
});
