// Goal: `cache.put()` without its async wrapper keeps its contract: it resolves with nothing once
// the broker answers, a failure rejects it with the request's own error (the request lane's: a
// put sent and cut off by a lost connection is OutcomeUnknownError there,
// lost-connection-writes.test.ts), bad input rejects (never throws), and without a live
// connection it waits for one. Method: a Cache over a stand-in host
// whose connection's request lane is a function the test answers.
import {
  FEATURE_HI_CACHE_BINARY,
  FLAG_BINARY_CACHE,
  decodeFrame,
  encodeCacheOk,
  encodeCacheValue,
} from '@felix/wire';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  ClientClosedError,
  ConnectionLostError,
  InvalidArgumentError,
  OutcomeUnknownError,
} from '../src/errors.js';
import { Counter } from '../src/projections/counter.js';
import { Cache } from '../src/projections/cache.js';
import type { ProjectionHost } from '../src/projections/host.js';
import type { BrokerConnection } from '../src/protocol/broker-connection.js';

type Prepared = ReturnType<Parameters<BrokerConnection['requests']['requestPrepared']>[0]>;

function standIn(outcome: () => Promise<unknown>, live = true, featuresHi = 0) {
  const sent: Uint8Array[] = [];
  const prepared: Prepared[] = [];
  const bc = {
    scope: { tenant: 't1', namespace: 'default' },
    negotiated: { flags: 0, features: 0xffff_ffff, featuresHi, window: 1 },
    requests: {
      // A JSON request (a delete): its outcome as it is.
      request: () => outcome(),
      // As the lane: the answer through `finish`, any failure as it is.
      requestPrepared(prepare: (id: number) => Prepared) {
        const p = prepare(7);
        prepared.push(p);
        sent.push(p.bytes);
        return outcome().then((msg) => (p.finish === undefined ? msg : p.finish(msg as never)));
      },
    },
  } as unknown as BrokerConnection;
  let asked = 0;
  const host = {
    connection: async () => {
      asked++;
      return bc;
    },
    live: () => (live ? bc : undefined),
  } as unknown as ProjectionHost;
  return { cache: new Cache(host, 'kv'), sent, prepared, asked: () => asked };
}

describe('cache put', () => {
  it('a_cache_put_resolves_empty_and_rejects_with_its_requests_own_error', async () => {
    const ok = standIn(() => Promise.resolve({ type: 'cache_ok', request_id: 7 }));
    await expect(ok.cache.put('k', 'v')).resolves.toBeUndefined();
    expect(new TextDecoder().decode(ok.sent[0]!.subarray(12))).toContain('"type":"cache_put"');
    expect(ok.asked()).toBe(0); // a live connection is used as it is

    // The lane decides what a lost connection makes of a put (sent or not): the put adds nothing.
    const unknown = new OutcomeUnknownError('cache kv', { cause: new ConnectionLostError('a:1') });
    await expect(standIn(() => Promise.reject(unknown)).cache.put('k', 'v')).rejects.toBe(unknown);
    const lostBeforeSent = new ConnectionLostError('127.0.0.1:1');
    const notSent = standIn(() => Promise.reject(lostBeforeSent));
    await expect(notSent.cache.put('k', 'v')).rejects.toBe(lostBeforeSent);

    const refused = new Error('refused');
    const other = standIn(() => Promise.reject(refused));
    await expect(other.cache.put('k', 'v')).rejects.toBe(refused);

    // Bad input is a rejected promise, not a throw from the call.
    const bad = ok.cache.put('', 'v');
    await expect(bad).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(ok.cache.put('k', 'v', { ttlMs: -1 })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );

    const waiting = standIn(() => Promise.resolve({ type: 'cache_ok', request_id: 7 }), false);
    await expect(waiting.cache.put('k', 'v')).resolves.toBeUndefined();
    expect(waiting.asked()).toBe(1);
  });

  it('a_cache_get_and_put_go_binary_only_on_a_connection_that_negotiated_it', async () => {
    const ok = () => Promise.resolve({ type: 'cache_ok', request_id: 7 });
    const json = standIn(ok);
    await json.cache.put('k', 'v');
    // Only the get's frame counts here: its stand-in answer (an ok) is not a value.
    void json.cache.get('k').catch(() => undefined);
    expect(json.sent.map((b) => decodeFrame(b).flags)).toEqual([0, 0]);

    const bin = standIn(ok, true, FEATURE_HI_CACHE_BINARY);
    await bin.cache.put('k', 'v', { ttlMs: 5 });
    // As above: the stand-in's ok is not a value; only the get's frame counts.
    void bin.cache.get('k').catch(() => undefined);
    expect(bin.sent.map((b) => decodeFrame(b).flags)).toEqual([
      FLAG_BINARY_CACHE,
      FLAG_BINARY_CACHE,
    ]);
    // Its quick readers take the binary answers and leave a JSON one (an error) to the codec.
    const [put, get] = bin.prepared as [Prepared, Prepared];
    const payload = (f: Uint8Array) => f.subarray(12);
    expect(put.quick!(payload(encodeCacheOk(7)), FLAG_BINARY_CACHE)).toEqual({
      type: 'cache_ok',
      request_id: 7,
    });
    const value = new TextEncoder().encode('v');
    expect(get.quick!(payload(encodeCacheValue(7, value)), FLAG_BINARY_CACHE)).toEqual({
      type: 'cache_value',
      key: 'k',
      value,
      request_id: 7,
    });
    const error = new TextEncoder().encode('{"type":"error","message":"no"}');
    expect(get.quick!(error, 0)).toBeUndefined();
  });
});

describe('cache input the wire cannot carry', () => {
  it('a_cache_key_or_name_too_long_for_the_wire_is_refused_with_invalid_argument', async () => {
    // A key or cache name past a u16 length prefix cannot be encoded: the caller hears the
    // client's typed InvalidArgumentError (as a publish does), not @felix/wire's FieldRangeError.
    const ok = () => Promise.resolve({ type: 'cache_ok', request_id: 7 });
    const longKey = 'k'.repeat(65_536);
    for (const featuresHi of [0, FEATURE_HI_CACHE_BINARY]) {
      const { cache, sent } = standIn(ok, true, featuresHi);
      await expect(cache.put(longKey, 'v')).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(cache.get(longKey)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(cache.delete(longKey)).rejects.toBeInstanceOf(InvalidArgumentError);
      // Multi-byte characters count in UTF-8 bytes: 21,846 three-byte characters are 65,538.
      await expect(cache.put('€'.repeat(21_846), 'v')).rejects.toBeInstanceOf(InvalidArgumentError);
      expect(sent).toHaveLength(0);
      // The broker's own bound (CACHE_KEY_BYTES_MAX) is the longest key that goes.
      await expect(cache.put('k'.repeat(1_024), 'v')).resolves.toBeUndefined();
    }
    expect(() => new Cache({} as ProjectionHost, 'c'.repeat(65_536))).toThrow(InvalidArgumentError);
  });
});

describe('a signal aborted while a call waits for its answer', () => {
  it('a_cache_or_counter_call_whose_answer_has_not_come_ends_when_its_signal_aborts', async () => {
    // A live connection whose broker does not answer (stalled, or slow): the caller's signal
    // must end the call then, as it ends a publish, not only while no connection is up.
    const never = () => new Promise<never>(() => undefined);
    for (const featuresHi of [0, FEATURE_HI_CACHE_BINARY]) {
      const { cache, sent } = standIn(never, true, featuresHi);
      const ac = new AbortController();
      const calls = [
        cache.put('k', 'v', { signal: ac.signal }),
        cache.get('k', { signal: ac.signal }),
        cache.delete('k', { signal: ac.signal }),
      ].map((p) => p.catch((e: unknown) => e));
      expect(sent).toHaveLength(2); // the put and the get were sent, not only waiting
      ac.abort();
      const [put, get, del] = await Promise.all(calls);
      expect(put).toBeInstanceOf(AbortedError);
      expect((put as AbortedError).retry).toBe('unknown_outcome'); // it may have been applied
      expect(get).toBeInstanceOf(AbortedError);
      expect((get as AbortedError).retry).not.toBe('unknown_outcome');
      expect(del).toBeInstanceOf(AbortedError);
      expect((del as AbortedError).retry).toBe('unknown_outcome');
    }
    const counterHost = {
      connection: async () =>
        ({
          scope: { tenant: 't1', namespace: 'default' },
          negotiated: { flags: 0, features: 0xffff_ffff, featuresHi: 0, window: 1 },
          requests: { request: never },
        }) as unknown as BrokerConnection,
    } as unknown as ProjectionHost;
    const counter = new Counter(counterHost, 'hits');
    const ac = new AbortController();
    const add = counter.add('k', 1n, { signal: ac.signal }).catch((e: unknown) => e);
    const read = counter.get('k', { signal: ac.signal }).catch((e: unknown) => e);
    ac.abort();
    expect(await add).toBeInstanceOf(AbortedError);
    expect(await read).toBeInstanceOf(AbortedError);
  });
});

describe('a watch when the client closes', () => {
  it('a_cache_watch_waiting_for_a_connection_ends_done_when_the_client_closes', async () => {
    // The broker is down and the watch waits for a reconnect; close() makes that wait fail with
    // ClientClosedError. The watch ends, as a subscription and a group consumer do, instead of
    // throwing the client's closing into the caller's `for await`.
    const waiting: Array<() => void> = [];
    const host = {
      closed: false,
      connection: () =>
        new Promise((_resolve, reject) => waiting.push(() => reject(new ClientClosedError()))),
      live: () => undefined,
    };
    const it = new Cache(host as unknown as ProjectionHost, 'users')
      .watch({ key: 'u1' })
      [Symbol.asyncIterator]();
    const next = it.next();
    await waitFor(() => waiting.length === 1, 'the watch waits for a connection', 5_000);
    host.closed = true;
    for (const fail of waiting.splice(0)) fail();
    await expect(next).resolves.toEqual({ value: undefined, done: true });
  });
});
