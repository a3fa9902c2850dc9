// Goal: d23bdb38 promises that `cache.put(key, bytes)` stores the bytes as they were when put()
// was called, whatever the caller does with its buffer afterwards (packages/client README,
// docs/caches-and-watches.md; cache-put-value-capture.test.ts checks a cold request stream). A
// put made while the client reconnects (Cache.putConnecting) waits for the connection before it
// reaches the request lane, and is encoded only then, from the caller's live buffer: the broker
// stores bytes that were never put. (A routed put, in a cluster, waits for its route alike.)
// Method: FelixClient over two scripted fake brokers; the first is killed, the second's
// connection is held open-pending until the put was made and its buffer changed; the value the
// second broker receives is compared with the one passed.
import type { Message } from '@felix/wire';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker, type FakeStream } from './fake-broker.js';

const UTF8 = new TextEncoder();
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Puts `original` (as `make` makes its bytes) while the client reconnects, overwrites the
 *  caller's buffer once put() returned, and answers what the next broker received. */
async function putWhileReconnecting(make: (s: string) => Uint8Array): Promise<string[]> {
  const brokers = [new FakeBroker({ reauth: false }), new FakeBroker({ reauth: false })];
  for (const b of brokers)
    b.answer = (at: FakeStream, msg: Message) => {
      if (msg.type !== 'cache_put') return false;
      at.send({ type: 'cache_ok', request_id: msg.request_id! });
      return true;
    };
  let opens = 0;
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const client = await FelixClient.create(
    { servers: ['quic://fake:1'], tenant: 't1', token: 'x' },
    {
      open: async (server, o, turn) => {
        const n = opens++;
        if (n > 0) await gate; // the reconnect is slow
        return BrokerConnection.over(server, brokers[Math.min(n, 1)]!.conn, o, turn);
      },
    },
  );
  try {
    const users = client.cache('users');
    brokers[0]!.kill();
    await waitFor(() => opens >= 2, 'the reconnect under way', 5_000);
    const buf = make('original');
    const put = users.put('k', buf);
    // The call has returned: the caller is free to reuse its buffer.
    buf.set(UTF8.encode('MUTATED!'));
    release();
    await put;
    return brokers[1]!.received.flatMap(({ msg }) =>
      msg.type === 'cache_put' ? [text(msg.value)] : [],
    );
  } finally {
    release();
    await client.close();
  }
}

describe('a cache put made while the client reconnects', () => {
  it('a_cache_put_made_while_reconnecting_sends_the_value_as_it_was_when_put_was_called', async () => {
    expect(await putWhileReconnecting((v) => UTF8.encode(v))).toEqual(['original']);
  }, 20_000);

  it('a_cache_put_of_a_buffer_made_while_reconnecting_stores_the_bytes_it_had_at_the_call', async () => {
    // A Node Buffer: its slice() is a view of the caller's memory, not a copy.
    expect(await putWhileReconnecting((v) => Buffer.from(v))).toEqual(['original']);
  }, 20_000);
});
