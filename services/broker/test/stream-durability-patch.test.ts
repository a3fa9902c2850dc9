// Goal: a stream PATCH "changes only retention, consistency and durable" (docs/control-plane.md,
// Resources; `felixctl streams update --no-durable`, docs/control-plane.md, felixctl). Whatever
// the control plane and the broker do with `durable: false` on a stream that holds acknowledged
// durable records (refuse it, or keep serving the log), an offset once acknowledged must keep
// naming the record it was acknowledged for: the offsets handed out after the PATCH must not
// start again at 0.
// Found in an operator trial: `felixctl streams update t1 default clicks --no-durable` on a
// durable stream holding offsets 0-3 was accepted; the broker released the shard and reopened it
// in memory, `sub --from earliest` showed nothing of the four records, and the next publish was
// acknowledged at offset 0 again (then `--durable` brought the old log back and the records
// acknowledged meanwhile at offsets 0 and 1 were gone, their offsets naming other records).
// Method: real processes from the built dist/ of both services (control plane on SQLite, one
// broker with a data dir), the stream made and patched through the REST API, @felix/client.
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

const TEXT = new TextDecoder();

describe('a durable stream patched to durable: false', () => {
  let cluster: AcmeCluster;
  let broker: Running;
  const api = (method: string, path: string, body?: unknown) => cluster.api(method, path, body);

  const opened = () =>
    broker.child
      .jsonLines()
      .filter(
        (l) =>
          (l as { msg?: string; shard?: string }).msg === 'shard opened' &&
          (l as { shard?: string }).shard === 'acme/prod/orders/0',
      ).length;

  beforeAll(async () => {
    cluster = await startAcmeCluster('felix-durable-patch');
    broker = cluster.broker;
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
  });

  it('turning_durability_off_never_hands_out_an_acknowledged_offset_again', async () => {
    const created = await api('POST', '/v1/tenants/acme/namespaces/prod/streams', {
      stream: 'orders',
      durable: true,
    });
    expect(created.status).toBe(201);
    await waitFor(async () => (await heldShards(broker)) >= 1, 'the shard to open', SETTLE_MS);
    const felix: FelixClient = await connect({
      servers: [`quic://127.0.0.1:${broker.port}`],
      tenant: 'acme',
      namespace: 'prod',
      tls: { fingerprint: broker.fingerprint },
      reconnect: { baseMs: 20, maxDelayMs: 200 },
    });
    try {
      const acked: number[] = [];
      for (const v of ['r0', 'r1', 'r2']) acked.push((await felix.publish('orders', v)).offset!);
      expect(acked).toEqual([0, 1, 2]);

      const opensBefore = opened();
      const patched = await api('PATCH', '/v1/tenants/acme/namespaces/prod/streams/orders', {
        durable: false,
      });
      if (patched.status >= 400) return; // refusing the PATCH keeps every offset: fine
      expect(patched.status).toBe(200);
      // The broker applies the change by reopening the shard.
      await waitFor(() => opened() > opensBefore, 'the shard to reopen', SETTLE_MS);
      const after = await waitFor(
        // Refused while the shard reopens: waitFor asks again.
        () => felix.publish('orders', 'after-patch').catch(() => undefined),
        'a publish after the PATCH',
        SETTLE_MS,
      );
      // An offset already acknowledged for r0..r2 must not be handed out again.
      expect(after.offset).toBeGreaterThan(2);
      // And offset 0 still names r0.
      const it = felix.subscribe('orders', { from: 0, shard: 0 })[Symbol.asyncIterator]();
      const first = await it.next();
      expect(first.value?.offset).toBe(0);
      expect(TEXT.decode(first.value!.data)).toBe('r0');
      await it.return?.();
    } finally {
      await felix.close();
    }
  }, 90_000);
});
