// Goal: a stopping broker ends each request stream (its half-close) only after answering every
// request it applied there (services/broker/src/session/stream-finish.ts), so a write still
// waiting when that end arrives was never applied: it fails as a loss the caller may retry
// (ConnectionLostError), never OutcomeUnknownError, and the client then closes the connection
// itself. A connection that dies instead (lost-connection-writes.test.ts) keeps the unknown
// outcome, and so does the end of a stream from a broker that did not offer the notice
// (FEATURE_HI_STREAM_END_NOTICE). Method: FelixClient over the scripted fake broker, which swallows the writes and then
// ends every stream the client opened while the connection stays up.
import { waitFor, withDeadline } from '@felix/testing-harness';
import { FEATURE_HI_STREAM_END_NOTICE } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { ConnectionLostError, OutcomeUnknownError } from '../src/errors.js';
import { FelixClient } from '../src/client.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker } from './fake-broker.js';

const BOUND_MS = 30_000;
const ENDS_WITHIN_MS = 10_000;

/** A client over a fake broker that swallows a cache put, a counter add and an acked publish;
 *  `hiWithout` takes feature bits out of what the broker offers. */
async function rig(hiWithout = 0) {
  const broker = new FakeBroker({ reauth: false, hiWithout });
  const writes = new Set(['cache_put', 'counter_add', 'publish_batch']);
  broker.answer = (_at, msg) => writes.has(msg.type);
  let dialed = 0;
  const client = await FelixClient.create(
    {
      servers: ['quic://fake:1'],
      tenant: 't1',
      token: 'x',
      connectTimeoutMs: BOUND_MS,
      requestTimeoutMs: BOUND_MS,
      reconnect: { attemptsMax: 1 },
    },
    {
      open: (server, o, turn) =>
        ++dialed === 1
          ? BrokerConnection.over(server, broker.conn, o, turn)
          : Promise.reject(new Error('the broker is gone')),
    },
  );
  /** Makes the three writes, waits for them to reach the broker, ends its streams and
   *  returns how each failed. */
  const endUnderWrites = async (): Promise<unknown[]> => {
    const failures = [
      client.cache('users').put('u1', 'v'),
      client.counter('hits').add('k', 1n),
      client.publish('orders', 'r1'),
    ].map((p) =>
      p.then(
        () => new Error('the write succeeded'),
        (err: unknown) => err,
      ),
    );
    await waitFor(
      () => [...writes].every((t) => broker.received.some(({ msg }) => msg.type === t)),
      'the writes reach the broker',
      5_000,
    );
    broker.endRequestStreams();
    return withDeadline(Promise.all(failures), ENDS_WITHIN_MS, 'the writes to fail');
  };
  return { broker, client, endUnderWrites };
}

describe('a stopping broker ends its request streams', () => {
  it('writes_waiting_when_a_stopping_broker_ends_their_streams_fail_as_not_applied_not_outcome_unknown', async () => {
    const { broker, client, endUnderWrites } = await rig();
    try {
      const errs = await endUnderWrites();
      for (const err of errs) {
        // A loss the caller may retry (its retry finds the broker anew), saying why.
        expect(err).toBeInstanceOf(ConnectionLostError);
        expect((err as ConnectionLostError).retry).toBe('reconnect');
        expect(String(((err as Error).cause as Error)?.message)).toMatch(/were not applied/);
      }
      expect(errs.some((e) => e instanceof OutcomeUnknownError)).toBe(false);
      // With nothing left waiting the client closes the connection itself: the broker's stop
      // need not wait for its bound.
      await withDeadline(broker.conn.closed, ENDS_WITHIN_MS, 'the client to close the connection');
    } finally {
      await client.close();
    }
  });

  it('a_stream_end_from_a_broker_without_the_end_notice_leaves_sent_writes_outcome_unknown', async () => {
    // An older broker's end of a stream may follow a refusal written before answers it still
    // owed (applied writes): without FEATURE_HI_STREAM_END_NOTICE the end proves nothing.
    const { client, endUnderWrites } = await rig(FEATURE_HI_STREAM_END_NOTICE);
    try {
      const errs = await endUnderWrites();
      for (const err of errs) expect(err).toBeInstanceOf(OutcomeUnknownError);
    } finally {
      await client.close();
    }
  });

  it('a_group_poll_stream_the_broker_ended_is_closed_by_the_client_so_the_stop_need_not_wait', async () => {
    // The broker waits (broker.drain_peer_close_ms) for the client to close each stream it
    // ended; a poll stream left open on the client's side held every stop for that bound.
    const { broker, client } = await rig();
    try {
      broker.answer = (_at, msg) => msg.type === 'group_poll'; // the poll waits, unanswered
      const polled = client
        .group('orders', 'billing')
        .poll({ waitMs: 20_000 })
        .catch((e: unknown) => e);
      await waitFor(
        () => broker.received.some(({ msg }) => msg.type === 'group_poll'),
        'the poll reaches the broker',
        5_000,
      );
      const pollStream = broker.received.find(({ msg }) => msg.type === 'group_poll')!.stream;
      broker.endRequestStreams();
      await waitFor(() => pollStream.isReset, 'the client closes the ended poll stream', 5_000);
      await client.close();
      await polled;
    } finally {
      await client.close();
    }
  });
});
