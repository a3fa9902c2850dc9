// Goal: concurrent shard lookups of one stream share one `stream_shards` request, and each
// caller's signal ends only its own call. Method: FelixClient over the scripted fake broker
// (test/fake-broker.ts), which holds the lookup's answer until the test sends it. A subscription
// whose lookup fails leaves nothing on the caller's signal. A watch given a bare key string (not
// `{ key }`) is refused with the typed error.
import { getEventListeners } from 'node:events';
import { waitFor } from '@felix/testing-harness';
import { type Message, PUBLISH_BATCH_RECORDS_MAX } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import {
  AbortedError,
  InvalidArgumentError,
  NotFoundError,
  UnknownStreamError,
} from '../src/errors.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker, type FakeStream } from './fake-broker.js';

type Lookup = Extract<Message, { type: 'stream_shards' }>;

async function rig() {
  const broker = new FakeBroker({ reauth: false });
  const held: Array<{ at: FakeStream; msg: Lookup }> = [];
  broker.answer = (at, msg) => {
    if (msg.type !== 'stream_shards') return false;
    held.push({ at, msg });
    return true;
  };
  const client = await FelixClient.create(
    { servers: ['quic://fake:1'], tenant: 't1', token: 'x' },
    { open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn) },
  );
  return { broker, held, client };
}

describe('shard lookups', () => {
  it('a_shard_lookup_shared_by_two_callers_fails_only_the_one_that_aborts', async () => {
    const { held, client } = await rig();
    const stop = new AbortController();
    const first = client.shards('orders', stop.signal);
    const second = client.shards('orders');
    await waitFor(() => held.length === 1 || undefined, 'the lookup reaches the broker');
    stop.abort();
    await expect(first).rejects.toBeInstanceOf(AbortedError);
    const { at, msg } = held[0]!;
    at.send({
      type: 'stream_shards_view',
      request_id: msg.request_id,
      shards: 4,
      routing: 'jump_hash',
    } as Message);
    await expect(second).resolves.toEqual({ shards: 4, routing: 'jump_hash' });
    expect(held).toHaveLength(1);
    // Answered once, the width is cached: no second request.
    await expect(client.shards('orders')).resolves.toEqual({ shards: 4, routing: 'jump_hash' });
    expect(held).toHaveLength(1);
    await client.close();
  });

  it('a_subscription_to_an_unknown_stream_leaves_no_listener_on_the_callers_signal', async () => {
    const { held, client } = await rig();
    const lifetime = new AbortController();
    const sub = client.subscribe('nowhere', { from: 'earliest', signal: lifetime.signal });
    expect(getEventListeners(lifetime.signal, 'abort')).toHaveLength(1);
    const next = sub[Symbol.asyncIterator]().next();
    await waitFor(() => held.length === 1 || undefined, 'the lookup reaches the broker');
    const { at, msg } = held[0]!;
    at.send({ type: 'stream_shards_view', request_id: msg.request_id, shards: 0 } as Message);
    await expect(next).rejects.toBeInstanceOf(UnknownStreamError);
    expect(getEventListeners(lifetime.signal, 'abort')).toHaveLength(0);
    await client.close();
  });

  it('a_mistyped_stream_name_is_a_not_found_error_whichever_call_meets_it', async () => {
    const { held, client } = await rig();
    const next = client.subscribe('clickz')[Symbol.asyncIterator]().next();
    await waitFor(() => held.length === 1 || undefined, 'the lookup reaches the broker');
    const { at, msg } = held[0]!;
    at.send({ type: 'stream_shards_view', request_id: msg.request_id, shards: 0 } as Message);
    const err = await next.catch((e: unknown) => e);
    // One `catch (e) { if (e instanceof NotFoundError) ... }` takes it, as a publish's refusal.
    expect(err).toBeInstanceOf(UnknownStreamError);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).code).toBe('FELIX_CLIENT_UNKNOWN_STREAM');
    expect((err as NotFoundError).brokerCode).toBe('not_found');
    await client.close();
  });

  it('a_mistyped_stream_met_by_the_shard_lookup_is_named_as_the_brokers_refusals_name_it', async () => {
    // A publish or a one-shard subscribe hears the broker's `stream default/clickz not found`
    // (services/broker's read and publish handlers); a merged subscribe met the typo at the
    // client's shard lookup and said `stream clickz is unknown to the broker`: one typo, two
    // messages to search logs for.
    const { held, client } = await rig();
    const next = client.subscribe('clickz')[Symbol.asyncIterator]().next();
    await waitFor(() => held.length === 1 || undefined, 'the lookup reaches the broker');
    const { at, msg } = held[0]!;
    at.send({ type: 'stream_shards_view', request_id: msg.request_id, shards: 0 } as Message);
    const err = await next.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnknownStreamError);
    expect((err as Error).message).toBe('stream default/clickz not found');
    await client.close();
  });

  it('a_subscription_aborted_while_its_shards_are_looked_up_ends_without_an_error', async () => {
    const { held, client } = await rig();
    const stop = new AbortController();
    const next = client.subscribe('orders', { signal: stop.signal })[Symbol.asyncIterator]().next();
    await waitFor(() => held.length === 1 || undefined, 'the lookup reaches the broker');
    stop.abort();
    await expect(next).resolves.toMatchObject({ done: true });
    await client.close();
  });

  it('a_cache_watch_given_a_bare_key_string_is_refused_with_a_typed_error', async () => {
    const { client } = await rig();
    const users = client.cache('users');
    expect(() => users.watch('u1' as never)).toThrow(InvalidArgumentError);
    expect(() => users.watch({ key: 'u1', prefix: 'u' } as never)).toThrow(InvalidArgumentError);
    await client.close();
  });

  it('a_batch_of_more_records_than_the_broker_accepts_is_refused_before_it_is_sent', async () => {
    const { broker, client } = await rig();
    const sent: string[] = [];
    const previous = broker.answer;
    broker.answer = (at, msg) => {
      sent.push(msg.type);
      return previous(at, msg);
    };
    const records = new Array<Uint8Array>(PUBLISH_BATCH_RECORDS_MAX + 1).fill(new Uint8Array(0));
    await expect(client.publishBatch('orders', records)).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(sent).toEqual([]);
    await client.close();
  });
});
