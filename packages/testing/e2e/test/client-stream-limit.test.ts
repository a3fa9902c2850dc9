// Goal: a client holding more subscriptions than one connection may have streams gets a typed
// client error naming that bound for each one past it, over TLS and QUIC alike, while the
// connection and its open subscriptions go on, and a closed subscription's slot serves the next.
// Method: one real broker process; 1,100 single-shard subscriptions on one client (the broker
// allows 1,024 streams per connection, one of them the request stream).
import { type FelixClient, StreamLimitExceededError } from '@felix/client';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, startBroker } from '../src/index.js';
import { TRANSPORTS, client } from './support.js';

const SUBSCRIPTIONS = 1_100;

describe.each(TRANSPORTS)('client stream limit over %s', (transport) => {
  let broker: BrokerProcess;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml: 'streams:\n  - { tenant: t1, name: s }\n', dir: dir.path });
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });

  it('subscriptions_past_the_streams_one_connection_may_hold_fail_typed_and_the_connection_goes_on', async () => {
    const felix: FelixClient = await client(broker, transport);
    try {
      await felix.publish('s', 'first');
      // Each subscription that opens yields the record at once; each one past the bound fails.
      const iterators = Array.from({ length: SUBSCRIPTIONS }, () =>
        felix.subscribe('s', { shard: 0, from: 'earliest' })[Symbol.asyncIterator](),
      );
      const results = await Promise.allSettled(iterators.map((i) => i.next()));
      const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      expect(failures.length).toBeGreaterThan(0);
      expect(failures.length).toBeLessThan(SUBSCRIPTIONS - 1_000);
      for (const err of failures) {
        expect(err).toBeInstanceOf(StreamLimitExceededError);
        expect((err as StreamLimitExceededError).code).toBe('FELIX_CLIENT_STREAM_LIMIT');
        expect((err as StreamLimitExceededError).retry).toBe('retry_after_backoff');
      }
      // The connection is up: a publish reaches the subscriptions that opened.
      await felix.publish('s', 'second');
      const open = iterators.filter((_, i) => results[i]!.status === 'fulfilled');
      const second = await open[0]!.next();
      expect(second.done).toBe(false);
      // A closed subscription frees its slot for a new one (once the broker has seen it go).
      await Promise.all(open.slice(0, 10).map((i) => i.return?.()));
      const again = await waitFor(async () => {
        const it = felix.subscribe('s', { shard: 0, from: 'earliest' })[Symbol.asyncIterator]();
        const first = await it.next();
        return first.done ? undefined : it;
      }, 'a subscription in a freed slot');
      await again.return?.();
      await Promise.all(open.map((i) => i.return?.()));
    } finally {
      await felix.close();
    }
  });
});
