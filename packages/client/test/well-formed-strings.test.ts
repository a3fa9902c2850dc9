// Goal: a string the client would turn into bytes (a key, a prefix, a name, string data) and
// that holds a lone UTF-16 surrogate is refused with InvalidArgumentError naming the argument,
// before anything is sent: UTF-8 has no bytes for a lone surrogate, so 'k\ud800', 'k\udbff' and
// 'k\ufffd' would otherwise reach the broker as one key. Method: FelixClient over the scripted
// fake broker (test/fake-broker.ts), which records every message the client sent; each call is
// made with an ill-formed string and the broker must have seen none of them.
import { describe, expect, it } from 'vitest';
import { type ClientInternals, FelixClient } from '../src/client.js';
import { InvalidArgumentError } from '../src/errors.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker, clientOver } from './fake-broker.js';

const LONE_HIGH = 'k\ud800';
const LONE_OTHER = 'k\udbff';
const REPLACED = 'k\ufffd';

/** What the fake broker received apart from the connection's own requests. */
function requests(broker: FakeBroker) {
  return broker.received
    .map((r) => r.msg)
    .filter((m) => m.type !== 'auth' && m.type !== 'topology' && m.type !== 'shard_owners');
}

/** The call's refusal, thrown or rejected: InvalidArgumentError naming `what`. */
async function refused(call: () => unknown, what: string): Promise<void> {
  let err: unknown;
  try {
    await call();
  } catch (e) {
    err = e;
  }
  expect(err, what).toBeInstanceOf(InvalidArgumentError);
  expect((err as Error).message).toContain(`${what} holds a lone UTF-16 surrogate`);
}

describe('well-formed strings', () => {
  it('a_cache_key_with_a_lone_surrogate_is_refused_not_merged_with_another', async () => {
    // The three keys are different strings with one UTF-8 encoding: a lone surrogate is U+FFFD.
    const utf8 = new TextEncoder();
    expect(utf8.encode(LONE_HIGH)).toEqual(utf8.encode(LONE_OTHER));
    expect(utf8.encode(LONE_HIGH)).toEqual(utf8.encode(REPLACED));

    const broker = new FakeBroker({ reauth: false });
    broker.answer = (at, msg) => {
      if (msg.type !== 'cache_put') return false;
      at.send({ type: 'cache_ok', request_id: msg.request_id! });
      return true;
    };
    const client = await clientOver(broker, 5_000);
    const cache = client.cache('kv');
    for (const key of [LONE_HIGH, LONE_OTHER, '\udc00', `${REPLACED}\ud83d`]) {
      await refused(() => cache.put(key, 'a'), 'the cache key');
      await refused(() => cache.get(key), 'the cache key');
      await refused(() => cache.delete(key), 'the cache key');
      await refused(() => cache.watch({ key }), 'the cache key');
    }
    expect(requests(broker)).toEqual([]);

    // A well-formed key goes as it is: U+FFFD itself, and a surrogate pair.
    await cache.put(REPLACED, 'c');
    await cache.put('k\ud83d\ude00', 'd');
    const sent = requests(broker).map((m) => (m as { key?: string }).key);
    expect(sent).toEqual([REPLACED, 'k😀']);
    await client.close();
  });

  it('every_name_key_and_string_value_with_a_lone_surrogate_is_refused_before_anything_is_sent', async () => {
    const open = (broker: FakeBroker): ClientInternals => ({
      open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn),
    });
    const base = { servers: ['quic://fake:1'], token: 'x' };
    const nobody = new FakeBroker({ reauth: false });
    await refused(
      () => FelixClient.create({ ...base, tenant: 't\ud800' }, open(nobody)),
      'the tenant',
    );
    await refused(
      () => FelixClient.create({ ...base, tenant: 't1', namespace: 'n\udfff' }, open(nobody)),
      'the namespace',
    );
    expect(nobody.received).toEqual([]);

    const broker = new FakeBroker({ reauth: false });
    const client = await clientOver(broker, 5_000);
    const bad = 's\ud800';
    await refused(() => client.publish(bad, 'x'), 'the stream name');
    await refused(() => client.publish('s', bad), 'the publish data');
    await refused(() => client.publish('s', 'x', { key: bad }), 'the publish key');
    await refused(() => client.publishBatch(bad, ['x']), 'the stream name');
    await refused(() => client.publishBatch('s', ['x', bad]), 'the publish data');
    await refused(() => client.publishBatch('s', ['x'], { key: bad }), 'the publish key');
    await refused(() => client.publisher(bad), 'the stream name');
    await refused(() => client.subscribe(bad), 'the stream name');
    await refused(() => client.offsetForTime(bad, 0), 'the stream name');
    await refused(() => client.shards(bad), 'the stream name');
    await refused(() => client.cache(bad), 'the cache name');
    await refused(() => client.cache('kv').put('k', bad), 'the cache value');
    await refused(() => client.cache('kv').watch({ prefix: bad }), 'the watch prefix');
    await refused(() => client.counter(bad), 'the counter name');
    await refused(() => client.counter('kv').add(bad, 1n), 'the counter key');
    await refused(() => client.counter('kv').get(bad), 'the counter key');
    await refused(() => client.group(bad, 'g'), 'the stream name');
    await refused(() => client.group('s', bad), 'the group name');
    await refused(() => client.group('s', 'g', { consumer: bad }), 'the consumer name');
    expect(requests(broker)).toEqual([]);
    await client.close();
  });
});
