// Goal: an argument the client can tell is wrong is refused with InvalidArgumentError naming
// that argument, before anything is sent: a publish key that is not bytes or a string, a cache
// or counter key longer than the broker accepts, a server address no transport can dial.
// Method: FelixClient over the scripted fake broker (test/fake-broker.ts), which records every
// message the client sent; `connect` with addresses that do not parse, against no broker at all.
import { describe, expect, it } from 'vitest';
import { connect } from '../src/client.js';
import { InvalidArgumentError } from '../src/errors.js';
import { FakeBroker, clientOver } from './fake-broker.js';

/** What the fake broker received apart from the connection's own requests. */
function requests(broker: FakeBroker) {
  return broker.received
    .map((r) => r.msg)
    .filter((m) => m.type !== 'auth' && m.type !== 'topology' && m.type !== 'shard_owners');
}

/** The call's refusal, thrown or rejected. */
async function refusal(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('arguments refused at the call', () => {
  it('a_publish_key_of_the_wrong_type_is_refused_naming_the_key_not_the_data', async () => {
    // Before, `publish(s, 'x', { key: 5 })` said "data must be a string or a Uint8Array": the
    // data was fine, the key was not.
    const broker = new FakeBroker({ reauth: false });
    const client = await clientOver(broker, 5_000);
    try {
      for (const key of [5, { id: 1 }, null]) {
        const opts = { key } as unknown as { key: string };
        for (const call of [
          () => client.publish('orders', 'x', opts),
          () => client.publishBatch('orders', ['x'], opts),
        ]) {
          const err = await refusal(call);
          expect(err, String(key)).toBeInstanceOf(InvalidArgumentError);
          expect((err as Error).message).toMatch(
            /^the publish key must be a string or a Uint8Array .*, got (number|object|null)$/,
          );
        }
      }
      // Wrong data still names the data.
      const err = await refusal(() => client.publish('orders', 5 as unknown as string));
      expect((err as Error).message).toMatch(/^the publish data must be a string or a Uint8Array/);
      expect(requests(broker)).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('a_name_that_is_not_a_string_is_refused_naming_the_argument_not_a_wire_field', async () => {
    // Before, `cache(undefined).get('a')` and `publish(undefined, 'x')` threw a plain TypeError
    // ("Cannot read properties of undefined"), and `cache(123)` a wire error naming
    // `shard_owners.name`, a field the caller never wrote.
    const broker = new FakeBroker({ reauth: false });
    const client = await clientOver(broker, 5_000);
    const odd = (v: unknown) => v as string;
    try {
      for (const [call, what] of [
        [() => client.publish(odd(undefined), 'x'), 'the stream name'],
        [() => client.publish(odd(7), 'x'), 'the stream name'],
        [() => client.cache(odd(undefined)).get('a'), 'the cache name'],
        [() => client.cache(odd(123)).get('a'), 'the cache name'],
        [() => client.counter(odd(undefined)).get('a'), 'the counter name'],
        [() => client.group('jobs', odd(undefined), { shard: 0 }).poll(), 'the group name'],
        [() => client.group(odd(undefined), 'g'), 'the stream name'],
        [() => client.subscribe(odd(null)), 'the stream name'],
      ] as const) {
        const err = await refusal(call);
        expect(err, what).toBeInstanceOf(InvalidArgumentError);
        expect((err as Error).message).toMatch(new RegExp(`^${what} must be a string, got `));
      }
      // A counter delta given as a number says how to write it.
      const err = await refusal(() => client.counter('hits').add('k', 3 as unknown as bigint));
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as Error).message).toMatch(/write 3n or BigInt\(3\)/);
      expect(requests(broker)).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('a_publishers_record_that_is_not_bytes_is_refused_naming_its_data_or_key', async () => {
    // Before, `publisher().send('text')` was refused as "a record of undefined bytes exceeds what
    // one publish carries" (a string has no byteLength), which names neither the argument nor
    // the fix.
    const broker = new FakeBroker({ reauth: false });
    const client = await clientOver(broker, 5_000);
    try {
      const pub = client.publisher('orders');
      const asBytes = (v: unknown) => v as Uint8Array;
      for (const [data, key, argument] of [
        ['text', undefined, 'data'],
        [5, undefined, 'data'],
        [new Uint8Array(1), 'k', 'key'],
        [new Uint8Array(1), null, 'key'],
      ] as const) {
        const opts = key === undefined ? {} : { key: asBytes(key) };
        const sent = await refusal(() => pub.send(asBytes(data), opts));
        const published = await refusal(() => pub.publish(asBytes(data), opts));
        for (const err of [sent, published]) {
          expect(err, `${String(data)} ${String(key)}`).toBeInstanceOf(InvalidArgumentError);
          expect((err as Error).message).toMatch(
            new RegExp(`^the publisher's ${argument} must be a Uint8Array`),
          );
        }
      }
      expect(requests(broker)).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('a_cache_or_counter_key_or_watch_prefix_over_the_brokers_bound_is_refused_before_it_is_sent', async () => {
    // The broker refuses a key over 1,024 UTF-8 bytes (a fixed bound of its store); the client
    // let keys of up to 65,535 bytes through to be refused there.
    const broker = new FakeBroker({ reauth: false });
    broker.answer = (at, msg) => {
      if (msg.type !== 'cache_put') return false;
      at.send({ type: 'cache_ok', request_id: msg.request_id! });
      return true;
    };
    const client = await clientOver(broker, 5_000);
    try {
      const cache = client.cache('kv');
      const hits = client.counter('kv');
      // 1,025 bytes: in one-byte characters, and in three-byte ones (342 x 3 = 1,026).
      for (const key of ['k'.repeat(1025), '€'.repeat(342)]) {
        for (const call of [
          () => cache.put(key, 'v'),
          () => cache.get(key),
          () => cache.delete(key),
          () => cache.watch({ key })[Symbol.asyncIterator]().next(),
        ]) {
          const err = await refusal(call);
          expect(err).toBeInstanceOf(InvalidArgumentError);
          expect((err as Error).message).toBe('a cache key exceeds 1024 bytes');
        }
        // The broker holds a watch's prefix to the key's bound too.
        const watched = await refusal(() => cache.watch({ prefix: key }));
        expect(watched).toBeInstanceOf(InvalidArgumentError);
        expect((watched as Error).message).toBe('a watch prefix exceeds 1024 bytes');
        for (const call of [() => hits.add(key, 1n), () => hits.get(key)]) {
          const err = await refusal(call);
          expect(err).toBeInstanceOf(InvalidArgumentError);
          expect((err as Error).message).toBe('a counter key exceeds 1024 bytes');
        }
      }
      expect(requests(broker)).toEqual([]);
      // A key of exactly the bound (CACHE_KEY_BYTES_MAX) goes.
      await cache.put('k'.repeat(1024), 'v');
      expect(requests(broker).map((m) => m.type)).toEqual(['cache_put']);
    } finally {
      await client.close();
    }
  });

  it('a_group_name_or_poll_option_the_broker_would_refuse_is_refused_at_the_call', async () => {
    // A new-user trial found these refused by the broker (InvalidRequestError, after a round
    // trip) where a consumer name over its bound was refused by the client: now all at the call.
    const broker = new FakeBroker({ reauth: false });
    const client = await clientOver(broker, 5_000);
    try {
      for (const name of ['g'.repeat(256), 'a\u001Fb']) {
        const err = await refusal(() => client.group('orders', name));
        expect(err, name.slice(0, 8)).toBeInstanceOf(InvalidArgumentError);
        expect(String(err)).toMatch(/group name is 1\.\.255 bytes/);
      }
      expect(client.group('orders', 'g'.repeat(255)).name).toHaveLength(255);
      const group = client.group('orders', 'billing');
      for (const [opts, named] of [
        [{ max: 0 }, 'max'],
        [{ max: 1.5 }, 'max'],
        [{ waitMs: -1 }, 'waitMs'],
        [{ visibilityMs: 0 }, 'visibilityMs'],
      ] as const) {
        const polled = await refusal(() => group.poll(opts));
        expect(polled, JSON.stringify(opts)).toBeInstanceOf(InvalidArgumentError);
        expect(String(polled)).toContain(named);
        const consumed = await refusal(() => group.consume(opts));
        expect(consumed, JSON.stringify(opts)).toBeInstanceOf(InvalidArgumentError);
      }
      expect(requests(broker).filter((m) => m.type === 'group_poll')).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('a_server_address_no_transport_can_dial_is_refused_at_connect_and_never_retryable', async () => {
    // Before, it failed as a ConnectError of class `retry_after_backoff`, which invited a retry
    // loop around a typo. Refused before any dial: a good seed beside it is not dialed either.
    for (const bad of ['not a url', 'http://127.0.0.1:5000', 'quic://127.0.0.1', 'tls://h:99999']) {
      const err = await refusal(() =>
        connect({ servers: ['quic://127.0.0.1:1', bad], tenant: 't1', token: 'x' }),
      );
      expect(err, bad).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).retry).toBe('never');
      expect((err as Error).message).toContain(JSON.stringify(bad));
      expect((err as Error).message).toContain('want quic://host:port or tls://host:port');
    }
  });
  it('a_malformed_tls_fingerprint_is_refused_at_connect_and_never_retryable', async () => {
    // A pin that is not a SHA-256 digest (cut short, pasted wrong) fails every attempt the
    // same way, and is found before any dial, yet connect() failed with a ConnectError of
    // class `retry_after_backoff`: the retry loop around a typo that the server-address check
    // above was made to stop. A well-formed wrong pin is already `never`.
    for (const fingerprint of ['AA:BB', 'sha256:xyz', '']) {
      const err = await refusal(() =>
        connect({
          servers: ['tls://127.0.0.1:1', 'quic://127.0.0.1:1'],
          tenant: 't1',
          token: 'x',
          tls: { fingerprint },
          connectTimeoutMs: 1_000,
        }),
      );
      expect(err, fingerprint).toBeInstanceOf(Error);
      expect((err as Error).message, fingerprint).toContain(JSON.stringify(fingerprint));
      expect((err as { retry?: string }).retry, fingerprint).toBe('never');
    }
  });
});
