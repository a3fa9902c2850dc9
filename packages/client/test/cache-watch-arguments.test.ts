// Goal: a cache watch option the wire cannot carry (a negative, fractional or non-number
// `fromOffset` or `shard`) is refused at the call with InvalidArgumentError naming the option,
// before anything is sent, as the client README ("Errors") promises for input the wire cannot
// carry: "refused alone with InvalidArgumentError, before anything is sent", and "Every failure is
// a typed error extending ClientError with a stable code and a retry class". Today the watch
// opens a stream, and the encoder's FieldRangeError from @felix/wire (a WireError, not a
// ClientError: `err instanceof ClientError` is false) ends the iterator:
// `cache_watch.from_offset must be an integer in [0, 9007199254740991]`.
// Method: FelixClient over the scripted fake broker (test/fake-broker.ts), which records every
// message the client sent.
import { describe, expect, it } from 'vitest';
import { ClientError, InvalidArgumentError } from '../src/errors.js';
import { FakeBroker, clientOver } from './fake-broker.js';

describe('cache watch arguments', () => {
  it('a_watch_offset_or_shard_the_wire_cannot_carry_is_refused_with_invalid_argument_error', async () => {
    const broker = new FakeBroker({ reauth: false });
    const client = await clientOver(broker, 5_000);
    try {
      const users = client.cache('users');
      for (const opts of [
        { fromOffset: -1 },
        { fromOffset: 1.5 },
        { fromOffset: Number.NaN },
        { shard: -1 },
        { shard: 0.5 },
      ]) {
        let err: unknown;
        try {
          for await (const _ of users.watch({ key: 'k' }, opts)) break;
        } catch (e) {
          err = e;
        }
        expect(err, JSON.stringify(opts)).toBeInstanceOf(ClientError);
        expect(err, JSON.stringify(opts)).toBeInstanceOf(InvalidArgumentError);
      }
      const watches = broker.received.filter(({ msg }) => msg.type === 'cache_watch');
      expect(watches).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('a_put_ttl_past_the_brokers_bound_is_refused_before_anything_is_sent', async () => {
    const broker = new FakeBroker({ reauth: false });
    const client = await clientOver(broker, 5_000);
    try {
      const users = client.cache('users');
      for (const ttlMs of [2 ** 45 + 1, -1, 1.5, Number.NaN]) {
        await expect(users.put('k', 'v', { ttlMs }), String(ttlMs)).rejects.toThrow(
          InvalidArgumentError,
        );
      }
      expect(broker.received.filter(({ msg }) => msg.type === 'cache_put')).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
