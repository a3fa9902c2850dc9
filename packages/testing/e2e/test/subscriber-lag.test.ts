// Goal: a durable subscriber that falls behind is ended with `subscription_lagged` and the client
// resumes it from disk with nothing lost, over both transports. Method: a real broker process per
// transport and a client that does not read while records are published, until the broker's
// fan-out queue has overflowed.
import { type StatusEvent, type StreamEvent, connect } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { brokerMetric as metric, durableBrokerForSuite } from '../src/index.js';

const YAML = `
streams:
  - { tenant: t1, name: lagging, durable: true, fsync: none }
`;

for (const transport of ['tls', 'quic'] as const) {
  describe(`a lagging subscriber over ${transport}`, () => {
    const suite = durableBrokerForSuite(YAML);

    it('a_lagging_durable_subscriber_resumes_from_disk_without_loss', async () => {
      const felix = await connect({
        servers: [suite.broker.url(transport)],
        tenant: 't1',
        tls: { fingerprint: suite.broker.fingerprint },
      });
      const statuses: StatusEvent[] = [];
      void (async () => {
        for await (const s of felix.status()) statuses.push(s);
      })();
      const first = await felix.publish('lagging', 'first');
      const it = felix
        .subscribe('lagging', { from: first.offset!, shard: 0, queueCapacity: 2 })
        [Symbol.asyncIterator]();
      const head = await it.next(); // registered; now stop reading while the stream grows
      const count = transport === 'quic' ? 400 : 2000;
      const payload = new Uint8Array(transport === 'quic' ? 8192 : 2048).fill(3);
      const pub = felix.publisher('lagging', { lingerMs: 0, maxBatchRecords: 1 });
      await Promise.all(Array.from({ length: count }, () => pub.publish(payload)));
      // Its broker queue overflowed: the subscription will end with subscription_lagged.
      await waitFor(
        async () =>
          (await metric(suite.broker, /felix_broker_fanout_dropped_records_total (\d+)/)) > 0,
        'the queue to overflow',
      );
      const got: StreamEvent[] = [head.value as StreamEvent];
      while (got.length < count + 1) got.push((await it.next()).value as StreamEvent);
      expect(got.map((e) => e.offset)).toEqual(
        Array.from({ length: count + 1 }, (_, i) => first.offset! + i),
      );
      expect(got.every((e) => e.lostBefore === 0)).toBe(true);
      expect(statuses.some((s) => s.type === 'lagged')).toBe(true);
      expect(
        await metric(suite.broker, /felix_broker_subscriptions_lagged_total (\d+)/),
      ).toBeGreaterThan(0);
      await felix.close();
    });
  });
}
