// Goal: a subscription or a cache watch whose signal aborts while it is still opening ends at
// once, as an open one does, whatever step of the opening the broker is stalled at (the `auth`
// of its stream, its `subscribe` or `cache_watch`, the event stream after `subscribed`): the
// opening once ended only when the silence check declared the connection lost (~3 s).
// Method: FelixClient over the scripted fake broker, which answers nothing past the chosen step
// (its connection reports no packet counts, so no silence check ends anything here).
import { waitFor, withDeadline } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker, type FakeStream } from './fake-broker.js';

/** Well under the silence bound: an abort acted on at once ends within it. */
const ENDS_WITHIN_MS = 1_000;

type Stall = 'auth' | 'request' | 'events';

async function rig(stall: Stall) {
  const broker = new FakeBroker({ reauth: false });
  const client = await FelixClient.create(
    { servers: ['quic://fake:1'], tenant: 't1', token: 'x' },
    { open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn) },
  );
  const asked: Message['type'][] = [];
  broker.answer = (at: FakeStream, msg: Message) => {
    asked.push(msg.type);
    if (msg.type === 'auth') return stall === 'auth'; // the connection's own auth came before
    if (msg.type !== 'subscribe' && msg.type !== 'cache_watch') return false;
    if (stall === 'events' && msg.type === 'subscribe')
      at.send({ type: 'subscribed', subscription_id: msg.subscription_id!, start_offset: 0 });
    if (stall === 'events' && msg.type === 'cache_watch')
      at.send({
        type: 'cache_watch_started',
        subscription_id: msg.subscription_id!,
        resume_offset: 0,
        resnapshot: false,
      });
    return true; // silence past the step
  };
  return { client, asked };
}

describe('an abort while a subscription or a watch opens', () => {
  it('a_subscription_or_watch_aborted_while_it_opens_ends_at_once', {
    timeout: 20_000,
  }, async () => {
    for (const stall of ['auth', 'request', 'events'] as const) {
      for (const kind of ['subscribe', 'watch'] as const) {
        const { client, asked } = await rig(stall);
        try {
          const ac = new AbortController();
          const iterable: AsyncIterable<unknown> =
            kind === 'subscribe'
              ? client.subscribe('orders', { shard: 0, signal: ac.signal })
              : client.cache('users').watch({ key: 'u1' }, { signal: ac.signal });
          const pending = iterable[Symbol.asyncIterator]().next();
          const step =
            stall === 'auth' ? 'auth' : kind === 'subscribe' ? 'subscribe' : 'cache_watch';
          // Stalled at its step: the broker was asked and will say nothing more.
          await waitFor(() => asked.includes(step), `the ${kind} to reach ${step}`, ENDS_WITHIN_MS);
          ac.abort();
          const r = await withDeadline(pending, ENDS_WITHIN_MS, `the ${kind} stalled at ${stall}`);
          expect(r.done, `${kind} stalled at ${stall}`).toBe(true);
        } finally {
          await client.close();
        }
      }
    }
  });
});
