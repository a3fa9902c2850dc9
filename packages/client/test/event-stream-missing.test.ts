// Goal: a subscription or a cache watch whose broker answered (`subscribed`,
// `cache_watch_started`) but never opens the event stream does not wait for it forever: the
// wait is bounded (EVENT_STREAM_WAIT_MS_MAX, or requestTimeoutMs when shorter), an event stream
// that went missing once is treated as a lost stream (the reader subscribes again from the next
// offset it had not delivered), and one that never comes ends the iterator with
// EventStreamTimeoutError after EVENT_STREAM_REOPENS_MAX attempts more. Method: FelixClient over
// the scripted fake broker, which answers and then opens no event stream for the attempts the
// test picks (its connection reports no packet counts, so no silence check ends anything here).
import { waitFor, withDeadline } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import { EventStreamTimeoutError } from '../src/errors.js';
import { EVENT_STREAM_REOPENS_MAX } from '../src/limits.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker, type FakeStream } from './fake-broker.js';

/** The client's request timeout here, and so its bound on the wait for an event stream. */
const WAIT_MS = 200;
/** Far beyond what the attempts take (a few waits and resubscribe delays): a hang fails here. */
const ENDS_WITHIN_MS = 10_000;

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** A client over a broker that opens no event stream for the first `missing` attempts. */
async function rig(missing: number) {
  const broker = new FakeBroker({ reauth: false });
  const client = await FelixClient.create(
    { servers: ['quic://fake:1'], tenant: 't1', token: 'x', requestTimeoutMs: WAIT_MS },
    { open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn) },
  );
  const asked: Array<Extract<Message, { type: 'subscribe' | 'cache_watch' }>> = [];
  broker.answer = (at: FakeStream, msg: Message) => {
    if (msg.type !== 'subscribe' && msg.type !== 'cache_watch') return false;
    asked.push(msg);
    const id = msg.subscription_id!;
    if (msg.type === 'subscribe')
      at.send({ type: 'subscribed', subscription_id: id, start_offset: 5, live_offset: 5 });
    else
      at.send({
        type: 'cache_watch_started',
        subscription_id: id,
        resume_offset: 0,
        resnapshot: false,
      });
    if (asked.length > missing) broker.openEvents(id);
    return true;
  };
  return { broker, client, asked };
}

describe('an event stream the broker never opens', () => {
  it('a_subscription_whose_event_stream_never_opens_ends_typed_instead_of_waiting_forever', async () => {
    const { client, asked } = await rig(Number.POSITIVE_INFINITY);
    try {
      const next = client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]().next();
      const ended = withDeadline(next, ENDS_WITHIN_MS, 'the subscription to end');
      await expect(ended).rejects.toBeInstanceOf(EventStreamTimeoutError);
      await expect(next).rejects.toMatchObject({ code: 'FELIX_CLIENT_EVENT_STREAM_TIMEOUT' });
      // Treated as a lost stream first: subscribed again, then ended once that did not help.
      expect(asked.filter((m) => m.type === 'subscribe')).toHaveLength(
        EVENT_STREAM_REOPENS_MAX + 1,
      );
    } finally {
      await client.close();
    }
  });

  it('a_subscription_whose_event_stream_went_missing_resubscribes_from_its_next_offset', async () => {
    const { broker, client, asked } = await rig(1);
    try {
      const it = client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]();
      const first = it.next();
      await waitFor(
        () => asked.length === 2 && broker.events.get(asked[1]!.subscription_id!),
        'the subscription to subscribe again',
      );
      const [gone, again] = asked;
      broker.emit(again!.subscription_id!, 5, ['a']);
      const ev = await withDeadline(first, ENDS_WITHIN_MS, 'the first event');
      expect(text(ev.value.data)).toBe('a');
      // The second subscribe resumed where the first one's answer started it.
      expect(again).toMatchObject({ type: 'subscribe', start: { offset: 5 } });
      // The first one's stream, should it come late after all, is not kept: nobody claims it.
      const late = broker.openEvents(gone!.subscription_id!);
      await waitFor(() => late.isReset, 'the late event stream to be reset');
    } finally {
      await client.close();
    }
  });

  it('a_cache_watch_whose_event_stream_never_opens_ends_typed_instead_of_waiting_forever', async () => {
    const { client, asked } = await rig(Number.POSITIVE_INFINITY);
    try {
      // Each answered re-watch says `resumed`; the watch then ends with the typed error.
      const seen: string[] = [];
      const drained = (async () => {
        for await (const ev of client.cache('users').watch({ key: 'u1' })) seen.push(ev.type);
      })();
      const ended = withDeadline(drained, ENDS_WITHIN_MS, 'the watch to end');
      await expect(ended).rejects.toBeInstanceOf(EventStreamTimeoutError);
      expect(seen.every((t) => t === 'resumed')).toBe(true);
      expect(asked.filter((m) => m.type === 'cache_watch')).toHaveLength(
        EVENT_STREAM_REOPENS_MAX + 1,
      );
    } finally {
      await client.close();
    }
  });
});
