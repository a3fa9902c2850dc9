// Goal: a durable subscriber that falls behind is ended with `subscription_lagged` and the
// client resumes it from disk with nothing lost; and no byte sequence a client can send crashes
// the broker. Method: a real broker process per transport, a client that does not read while
// records are published, and fast-check byte strings written raw to fresh streams.
import { type StatusEvent, type StreamEvent, connect } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { dial } from '@felix/transport';
import { FrameDecoder, decodeMessage, encodeMessage } from '@felix/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BrokerProcess, durableBrokerForSuite } from './broker-process.js';

const YAML = `
streams:
  - { tenant: t1, name: lagging, durable: true, fsync: none }
`;

async function metric(broker: BrokerProcess, pattern: RegExp): Promise<number> {
  const body = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
  const m = pattern.exec(body);
  return m ? Number(m[1]) : 0;
}

for (const transport of ['tls', 'quic'] as const) {
  describe(`lag and bad bytes over ${transport}`, () => {
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

    it('random_bytes_never_crash_the_broker', async () => {
      const conn = await dial(suite.broker.url(transport), {
        fingerprint: suite.broker.fingerprint,
      });
      const auth = encodeMessage({
        type: 'auth',
        tenant_id: 't1',
        token: '',
        client_flags: 0x1fff,
        client_features: 0x0800,
      });
      await fc.assert(
        fc.asyncProperty(
          fc.boolean(),
          fc.uint8Array({ maxLength: 512 }),
          async (authFirst, junk) => {
            const stream = await conn.openBidi();
            if (authFirst) await stream.write(auth);
            await stream.write(junk);
            await stream.end();
            // Whatever the broker makes of it, it answers only with frames, then ends the stream.
            const decoder = new FrameDecoder();
            for await (const chunk of stream)
              for (const f of decoder.push(chunk)) decodeMessage(f.payload);
          },
        ),
        { numRuns: transport === 'quic' ? 25 : 60 },
      );
      await conn.close();
      expect((await fetch(`http://127.0.0.1:${suite.broker.httpPort}/live`)).status).toBe(200);
      const felix = await connect({
        servers: [suite.broker.url(transport)],
        tenant: 't1',
        tls: { fingerprint: suite.broker.fingerprint },
      });
      expect((await felix.publish('lagging', 'still serving')).offset).not.toBeNull();
      await felix.close();
    });
  });
}
