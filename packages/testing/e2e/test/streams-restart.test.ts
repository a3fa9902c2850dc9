// Goal: what a client keeps across a broker restart or SIGKILL, over both transports: a durable
// stream replays from earliest, an acked publish survives a SIGKILL (the ones cut off are
// outcome-unknown), and a subscription resumes on its own after the broker comes back.
// Method: a fresh durable felix-broker process per test, stopped or SIGKILLed and started again
// on the same data directory and ports; real clients.
import { OutcomeUnknownError, type StatusEvent } from '@felix/client';
import { take, tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { startBroker } from '../src/index.js';
import { TRANSPORTS, client, text as maybeText, tcpRelay } from './support.js';

const RESTART_YAML = `
streams:
  - { tenant: t1, name: orders, durable: true, fsync: onCommit }
`;

const text = (b: Uint8Array) => maybeText(b)!;

for (const transport of TRANSPORTS) {
  describe(`streams across restarts over ${transport}`, () => {
    it('a_durable_stream_replays_from_earliest_after_a_restart', async () => {
      const dir = await tempDir();
      try {
        let broker = await startBroker({ yaml: RESTART_YAML, dir: dir.path, durable: true });
        const felix = await client(broker, transport);
        const sent = await felix.publishBatch(
          'orders',
          Array.from({ length: 30 }, (_, i) => `o${i}`),
        );
        await felix.close();
        await broker.stop();
        broker = await startBroker({
          yaml: RESTART_YAML,
          dir: dir.path,
          durable: true,
          port: broker.port,
          httpPort: broker.httpPort,
        });
        const again = await client(broker, transport);
        const got = await take(
          again.subscribe('orders', { from: 'earliest' })[Symbol.asyncIterator](),
          30,
        );
        expect(got.map((e) => text(e.data))).toEqual(Array.from({ length: 30 }, (_, i) => `o${i}`));
        expect(got[0]!.offset).toBe(sent.offset);
        await again.close();
        await broker.stop();
      } finally {
        await dir.cleanup();
      }
    });

    it('an_acked_publish_survives_a_broker_sigkill', async () => {
      const dir = await tempDir();
      try {
        let broker = await startBroker({ yaml: RESTART_YAML, dir: dir.path, durable: true });
        const felix = await client(broker, transport, { reconnect: { attemptsMax: 1 } });
        const acked = new Map<number, string>();
        const failures: unknown[] = [];
        let n = 0;
        const writers = Array.from({ length: 16 }, async () => {
          for (;;) {
            const body = `w${n++}`;
            try {
              const r = await felix.publish('orders', body);
              acked.set(r.offset!, body);
            } catch (err) {
              failures.push(err);
              return;
            }
          }
        });
        await waitFor(() => acked.size >= 300, '300 acked publishes');
        await broker.kill(); // SIGKILL mid-stream, with publishes in flight
        await Promise.all(writers);
        // Every publish the connection loss cut off is reported as outcome-unknown.
        expect(failures.length).toBeGreaterThan(0);
        for (const f of failures) expect(f).toBeInstanceOf(OutcomeUnknownError);
        await felix.close();
        broker = await startBroker({
          yaml: RESTART_YAML,
          dir: dir.path,
          durable: true,
          port: broker.port,
          httpPort: broker.httpPort,
        });
        const reader = await client(broker, transport);
        const maxAcked = Math.max(...acked.keys());
        const got = await take(
          reader.subscribe('orders', { from: 'earliest' })[Symbol.asyncIterator](),
          maxAcked + 1,
        );
        const byOffset = new Map(got.map((e) => [e.offset, text(e.data)]));
        for (const [offset, body] of acked) expect(byOffset.get(offset)).toBe(body);
        await reader.close();
        await broker.stop();
      } finally {
        await dir.cleanup();
      }
    });

    it('the_client_resumes_a_subscription_after_the_broker_restarts', async () => {
      const dir = await tempDir();
      try {
        let broker = await startBroker({ yaml: RESTART_YAML, dir: dir.path, durable: true });
        const felix = await client(broker, transport);
        const statuses: StatusEvent[] = [];
        const statusCtl = new AbortController();
        void (async () => {
          for await (const s of felix.status({ signal: statusCtl.signal })) statuses.push(s);
        })();
        const it = felix.subscribe('orders', { from: 'earliest' })[Symbol.asyncIterator]();
        await felix.publishBatch(
          'orders',
          Array.from({ length: 10 }, (_, i) => `a${i}`),
        );
        const before = await take(it, 10);
        await broker.kill();
        broker = await startBroker({
          yaml: RESTART_YAML,
          dir: dir.path,
          durable: true,
          port: broker.port,
          httpPort: broker.httpPort,
        });
        await waitFor(
          () => statuses.some((s) => s.type === 'connected' && statuses.indexOf(s) > 0),
          'the client to reconnect',
          20_000,
        );
        await felix.publishBatch(
          'orders',
          Array.from({ length: 10 }, (_, i) => `b${i}`),
        );
        const after = await take(it, 10);
        const all = [...before, ...after];
        expect(all.map((e) => text(e.data))).toEqual([
          ...before.map((e) => text(e.data)),
          ...Array.from({ length: 10 }, (_, i) => `b${i}`),
        ]);
        expect(all.map((e) => e.offset)).toEqual(Array.from({ length: 20 }, (_, i) => i));
        expect(statuses.map((s) => s.type)).toContain('reconnecting');
        statusCtl.abort();
        await felix.close();
        await broker.stop();
      } finally {
        await dir.cleanup();
      }
    });
  });
}

describe('an in-memory stream across a broker restart', () => {
  it('a_subscriber_to_an_in_memory_stream_is_told_its_offsets_began_again', async () => {
    // Before, a subscriber that had read offsets 0-9 resumed at 10 of the restarted broker's new
    // offsets, skipping the first ten new records without a word; only a cursor past the new
    // tail was caught. Now the subscribe answer names the offsets' incarnation.
    const dir = await tempDir();
    const yaml = 'streams:\n  - { tenant: t1, name: ticks }\n';
    let broker = await startBroker({ yaml, dir: dir.path });
    const relay = await tcpRelay(broker.port);
    const sub = await client(broker, 'tls', { servers: [`tls://127.0.0.1:${relay.port}`] });
    const statuses: StatusEvent[] = [];
    const watching = (async () => {
      for await (const s of sub.status()) statuses.push(s);
    })();
    try {
      const it = sub.subscribe('ticks', { from: 'earliest', shard: 0 })[Symbol.asyncIterator]();
      const first = it.next();
      const pub = await client(broker);
      await pub.publishBatch(
        'ticks',
        Array.from({ length: 10 }, (_, i) => `old${i}`),
      );
      await pub.close();
      const old = [(await first).value!, ...(await take(it, 9))];
      expect(old.map((e) => e.offset)).toEqual([...Array(10).keys()]);
      // The subscriber stays away while the broker restarts and takes thirty new records.
      relay.block(true);
      await broker.kill();
      relay.cut();
      broker = await startBroker({
        yaml,
        dir: dir.path,
        port: broker.port,
        httpPort: broker.httpPort,
      });
      const pub2 = await client(broker);
      await pub2.publishBatch(
        'ticks',
        Array.from({ length: 30 }, (_, i) => `new${i}`),
      );
      await pub2.close();
      relay.block(false);
      const fresh = await withDeadline(take(it, 30), 20_000, 'the thirty new records');
      expect(fresh.map((e) => text(e.data))).toEqual(
        Array.from({ length: 30 }, (_, i) => `new${i}`),
      );
      expect(fresh[0]!.offset).toBe(0);
      await waitFor(() => statuses.some((s) => s.type === 'reset'), 'a reset status');
      await it.return?.();
    } finally {
      await sub.close();
      await watching;
      await relay.close();
      await broker.stop();
      await dir.cleanup();
    }
  });
});
