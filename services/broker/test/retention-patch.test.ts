// Goal: a stream's retention PATCHed through the control plane reaches a shard the broker has
// open, without reopening it (Kafka applies a topic's retention.bytes the same way): segments
// past the new bound go at once, and the records kept still read back.
// Found by the session-41 operator trial: a PATCHed retention was applied only at the shard's
// next open (a restart, a hand-off, a failover), so a disk filling up stayed full.
// Method: real processes from the built dist/ of both services (control plane on SQLite, one
// broker with a data dir and 4 KiB segments), the stream made and patched through the REST API,
// @felix/client to publish and read.
import { type FelixClient, connect } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AcmeCluster,
  type Running,
  SETTLE_MS,
  heldShards,
  startAcmeCluster,
} from './support/cluster.js';

const SEGMENT_BYTES = 4096;

describe('a retention PATCHed on an open stream', () => {
  let cluster: AcmeCluster;
  let broker: Running;
  const api = (method: string, path: string, body?: unknown) => cluster.api(method, path, body);

  const lines = (msg: string) =>
    broker.child
      .jsonLines()
      .filter(
        (l) =>
          (l as { msg?: string }).msg === msg &&
          (l as { shard?: string }).shard === 'acme/prod/logs/0',
      );

  beforeAll(async () => {
    cluster = await startAcmeCluster('felix-retention-patch', {
      FELIX_DURABLE_SEGMENT_BYTES: String(SEGMENT_BYTES),
    });
    broker = cluster.broker;
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
  });

  it('a_patched_retention_reaches_an_open_shard_without_a_reopen', async () => {
    const created = await api('POST', '/v1/tenants/acme/namespaces/prod/streams', {
      stream: 'logs',
      durable: true,
    });
    expect(created.status).toBe(201);
    await waitFor(async () => (await heldShards(broker)) >= 1, 'the shard to open', SETTLE_MS);
    const felix: FelixClient = await connect({
      servers: [`quic://127.0.0.1:${broker.port}`],
      tenant: 'acme',
      namespace: 'prod',
      tls: { fingerprint: broker.fingerprint },
    });
    try {
      // About 40 segments of 4 KiB.
      const body = new Uint8Array(1000).fill(120);
      for (let i = 0; i < 160; i++) await felix.publish('logs', body);
      const opens = lines('shard opened').length;
      expect(opens).toBe(1);
      const patched = await api('PATCH', '/v1/tenants/acme/namespaces/prod/streams/logs', {
        retention: { max_size_bytes: SEGMENT_BYTES * 4 },
      });
      expect(patched.status).toBe(200);
      await waitFor(
        () => lines('retention changed: segments deleted').length > 0 || undefined,
        'the open shard to apply the new retention',
        SETTLE_MS,
      );
      // Not by a reopen, and the newest records are all still there.
      expect(lines('shard opened').length).toBe(opens);
      const it = felix.subscribe('logs', { from: 'earliest', shard: 0 })[Symbol.asyncIterator]();
      const first = await it.next();
      await it.return?.();
      expect(first.value!.offset).toBeGreaterThan(100);
      const latest = await felix.publish('logs', body);
      expect(latest.offset).toBe(160);
    } finally {
      await felix.close();
    }
  }, 90_000);
});
