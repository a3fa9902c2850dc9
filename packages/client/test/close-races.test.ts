// Goal: `close()` keeps the README's promise whatever step a reader or a call is at. A
// subscription (one shard or merged), a cache watch and a `consume()` loop still opening when
// the client closes (the broker has not answered, or answered and not yet opened the event
// stream) end their `for await` done, no throw, as readers open at the close do; a merged
// subscription made after the close ends done as a one-shard one does; a call the broker had not
// answered yet (a group poll, a cache get, a counter add, a shard lookup for `ready()`) rejects
// with ClientClosedError, not the ConnectionLostError of the connection the close ended.
// Method: FelixClient over the scripted fake broker (test/fake-broker.ts), which holds the
// answers a test names until after `close()`, so each race is taken at the same step every run.
import { waitFor, withDeadline } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import type { FelixClient } from '../src/client.js';
import { ClientClosedError, OutcomeUnknownError } from '../src/errors.js';
import { FakeBroker, clientOver } from './fake-broker.js';

/** Far beyond what an end at the close takes: a hang fails here. */
const ENDS_WITHIN_MS = 5_000;

/**
 * A client over a broker that holds every message of `held` unanswered; `answered` subscribes
 * and cache watches are answered (`subscribed`, `cache_watch_started`) with no event stream
 * opened. Its connection's close ends every
 * stream of it, as a transport's does (the fake's own ends none).
 */
async function rig(held: string[], opts: { shards?: number; answered?: boolean } = {}) {
  const broker = new FakeBroker({ reauth: false });
  broker.answer = (at, msg) => {
    if (msg.type === 'stream_shards' && !held.includes(msg.type)) {
      const shards = opts.shards ?? 2;
      at.send({ type: 'stream_shards_view', request_id: msg.request_id, shards } as Message);
      return true;
    }
    if (msg.type === 'subscribe' && opts.answered) {
      const id = msg.subscription_id!;
      at.send({ type: 'subscribed', subscription_id: id, start_offset: 0, live_offset: 0 });
      return true;
    }
    if (msg.type === 'cache_watch' && opts.answered) {
      const id = msg.subscription_id!;
      const started = { subscription_id: id, resume_offset: 0, resnapshot: false };
      at.send({ type: 'cache_watch_started', ...started } as Message);
      return true;
    }
    return held.includes(msg.type);
  };
  Object.assign(broker.conn, { close: async () => broker.kill() });
  const client = await clientOver(broker, ENDS_WITHIN_MS);
  const asked = (type: string, n = 1) =>
    broker.received.filter((r) => r.msg.type === type).length >= n || undefined;
  return { broker, client, asked };
}

/** How a reader's `for await` ended: 'done', or the name of what it threw. */
async function ending(reader: AsyncIterable<unknown>): Promise<string> {
  try {
    for await (const _ of reader) return 'yielded';
    return 'done';
  } catch (err) {
    return `threw ${(err as Error).name}: ${(err as Error).message}`;
  }
}

/** Closes `client` and answers how each of `readers` ended. */
async function endingsAtClose(client: FelixClient, readers: Promise<string>[]) {
  await client.close();
  return withDeadline(Promise.all(readers), ENDS_WITHIN_MS, 'every reader to end at the close');
}

describe('a close racing what is still opening', () => {
  it('a_subscription_whose_subscribe_is_unanswered_at_close_ends_done', async () => {
    const { client, asked } = await rig(['subscribe']);
    const one = ending(client.subscribe('orders', { shard: 0 }));
    const merged = ending(client.subscribe('orders'));
    const ready = client.subscribe('orders', { shard: 0 }).ready();
    ready.catch(() => undefined); // observed below, after the close
    await waitFor(() => asked('subscribe', 4), 'four subscribes to reach the broker');
    expect(await endingsAtClose(client, [one, merged])).toEqual(['done', 'done']);
    await expect(ready).rejects.toBeInstanceOf(ClientClosedError);
  });

  it('a_subscription_or_watch_answered_but_without_its_event_stream_at_close_ends_done', async () => {
    const { client, asked } = await rig([], { answered: true });
    const one = ending(client.subscribe('orders', { shard: 0 }));
    const merged = ending(client.subscribe('orders'));
    const watch = ending(client.cache('users').watch({ prefix: 'u' }));
    await waitFor(
      () => (asked('subscribe', 3) && asked('cache_watch')) || undefined,
      'three subscribes and a watch to be answered',
    );
    expect(await endingsAtClose(client, [one, merged, watch])).toEqual(['done', 'done', 'done']);
  });

  it('a_merged_subscription_whose_shard_lookup_is_unanswered_at_close_ends_done', async () => {
    const { client, asked } = await rig(['stream_shards']);
    const merged = ending(client.subscribe('orders'));
    const ready = client.subscribe('orders').ready();
    ready.catch(() => undefined); // observed below, after the close
    await waitFor(() => asked('stream_shards'), 'the shard lookup to reach the broker');
    expect(await endingsAtClose(client, [merged])).toEqual(['done']);
    await expect(ready).rejects.toBeInstanceOf(ClientClosedError);
  });

  it('a_cache_watch_and_a_consume_loop_still_opening_at_close_end_done', async () => {
    const { client, asked } = await rig(['cache_watch', 'group_poll']);
    const watch = ending(client.cache('users').watch({ prefix: 'u' }));
    const consume = ending(client.group('orders', 'billing', { shard: 0 }).consume());
    await waitFor(
      () => (asked('cache_watch') && asked('group_poll')) || undefined,
      'the watch and the poll to reach the broker',
    );
    expect(await endingsAtClose(client, [watch, consume])).toEqual(['done', 'done']);
  });

  it('a_merged_subscription_made_after_close_ends_done_as_a_one_shard_one_does', async () => {
    const { client } = await rig([]);
    await client.close();
    const [merged, one] = await withDeadline(
      Promise.all([
        ending(client.subscribe('orders')),
        ending(client.subscribe('orders', { shard: 0 })),
      ]),
      ENDS_WITHIN_MS,
      'both subscriptions to end',
    );
    expect({ merged, one }).toEqual({ merged: 'done', one: 'done' });
    await expect(client.subscribe('orders').ready()).rejects.toBeInstanceOf(ClientClosedError);
  });

  it('reads_unanswered_at_close_reject_with_client_closed_error_and_sent_writes_as_outcome_unknown', async () => {
    const { client, asked } = await rig(['group_poll', 'cache_get', 'counter_add']);
    const poll = client.group('orders', 'billing', { shard: 0 }).poll({ waitMs: 20_000 });
    const get = client.cache('users').get('u1');
    const add = client.counter('users').add('hits', 1n);
    const calls = [poll, get, add];
    for (const c of calls) c.catch(() => undefined); // observed below, after the close
    await waitFor(
      () => (asked('group_poll') && asked('cache_get') && asked('counter_add')) || undefined,
      'the three calls to reach the broker',
    );
    await client.close();
    const settled = await withDeadline(
      Promise.allSettled(calls),
      ENDS_WITHIN_MS,
      'every call to settle at the close',
    );
    const [polled, got, added] = settled.map((s) => (s.status === 'rejected' ? s.reason : 'ok'));
    expect(polled).toBeInstanceOf(ClientClosedError);
    expect(got).toBeInstanceOf(ClientClosedError);
    // The add was sent: it may have been applied, which only OutcomeUnknownError says.
    expect(added).toBeInstanceOf(OutcomeUnknownError);
    expect((added as Error).cause).toBeInstanceOf(ClientClosedError);
  });
});
