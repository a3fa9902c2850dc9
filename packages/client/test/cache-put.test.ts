// Goal: `cache.put()` without its async wrapper keeps its contract: it resolves with nothing once
// the broker answers, a lost connection rejects it with OutcomeUnknownError (the put may or may
// not have been applied), any other failure rejects with that failure, bad input rejects (never
// throws), and without a live connection it waits for one. Method: a Cache over a stand-in host
// whose connection's request lane is a function the test answers.
import { describe, expect, it } from 'vitest';
import { ConnectionLostError, InvalidArgumentError, OutcomeUnknownError } from '../src/errors.js';
import { Cache } from '../src/projections/cache.js';
import type { ProjectionHost } from '../src/projections/host.js';
import type { BrokerConnection } from '../src/protocol/broker-connection.js';

function standIn(outcome: () => Promise<unknown>, live = true) {
  const sent: Uint8Array[] = [];
  const bc = {
    scope: { tenant: 't1', namespace: 'default' },
    requests: {
      requestPrepared(prepare: (id: number) => { bytes: Uint8Array }) {
        sent.push(prepare(7).bytes);
        return outcome();
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
  return { cache: new Cache(host, 'kv'), sent, asked: () => asked };
}

describe('cache put', () => {
  it('a_cache_put_resolves_empty_and_maps_a_lost_connection_to_an_unknown_outcome', async () => {
    const ok = standIn(() => Promise.resolve({ type: 'cache_ok', request_id: 7 }));
    await expect(ok.cache.put('k', 'v')).resolves.toBeUndefined();
    expect(new TextDecoder().decode(ok.sent[0]!.subarray(12))).toContain('"type":"cache_put"');
    expect(ok.asked()).toBe(0); // a live connection is used as it is

    const lost = standIn(() => Promise.reject(new ConnectionLostError('127.0.0.1:1')));
    const err = await lost.cache.put('k', 'v').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect((err as Error).cause).toBeInstanceOf(ConnectionLostError);

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
});
