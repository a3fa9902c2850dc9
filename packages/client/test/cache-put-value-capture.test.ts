// Goal: `cache.put(key, bytes)` stores the bytes as they were when put() was called, as every
// Redis client does (the command is serialized by the call), whatever the caller does with its
// buffer afterwards. Calls made without awaiting are the documented way to pipeline ("cache
// calls made without awaiting reach the broker in call order", docs/caches-and-watches.md,
// "Request streams and errors"), and the usual way to pipeline puts is to fill one buffer per
// value in a loop, reusing it.
// Method: FelixClient over the scripted fake broker, which records every request it receives. A
// put is made on a fresh client (its request stream not open yet) and the caller's buffer is
// changed in the same turn, after the call returned; the value the broker receives is compared
// with the one passed. Today the client encodes the request only once the stream opens (or a
// request slot frees, past REQUESTS_IN_FLIGHT_MAX unanswered), from the caller's live buffer, so
// the broker stores bytes that were never put: against a real broker, a cold client stored
// "MUTATED!" for put('k', 'original'), and 5,000 pipelined puts reusing one 4-byte buffer stored
// later puts' numbers under the keys past the 4,096th.
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker, type FakeStream } from './fake-broker.js';

const UTF8 = new TextEncoder();
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe('a cache put over the scripted broker', () => {
  it('a_cache_put_sends_the_value_as_it_was_when_put_was_called', async () => {
    const broker = new FakeBroker({ reauth: false });
    broker.answer = (at: FakeStream, msg: Message) => {
      if (msg.type !== 'cache_put') return false;
      at.send({ type: 'cache_ok', request_id: msg.request_id! });
      return true;
    };
    const client = await FelixClient.create(
      { servers: ['quic://fake:1'], tenant: 't1', token: 'x' },
      { open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn) },
    );
    try {
      const users = client.cache('users');
      const buf = UTF8.encode('original');
      const put = users.put('k', buf);
      // The call has returned: the caller is free to reuse its buffer.
      buf.set(UTF8.encode('MUTATED!'));
      await put;
      const puts = broker.received.flatMap(({ msg }) => (msg.type === 'cache_put' ? [msg] : []));
      expect(puts).toHaveLength(1);
      expect(text(puts[0]!.value)).toBe('original');
    } finally {
      await client.close();
    }
  });
});
