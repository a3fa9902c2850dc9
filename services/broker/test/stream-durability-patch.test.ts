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
import { join } from 'node:path';
import { type FelixClient, connect } from '@felix/client';
import { type Child, freePort, tempDir, waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OPERATOR_PERMISSIONS,
  type Running,
  SETTLE_MS,
  bootstrapToken,
  heldShards,
  nodeToken,
  readyStatus,
  startClusterBroker,
  startControlPlane,
} from './support/cluster.js';

const TEXT = new TextDecoder();

describe('a durable stream patched to durable: false', () => {
  let cpUrl = '';
  let cp: Child;
  let operatorToken = '';
  let acmeToken = '';
  let broker: Running;
  let cleanup: () => Promise<void>;

  async function api(method: string, path: string, body?: unknown) {
    const token = path.startsWith('/v1/tenants/acme/') ? acmeToken : operatorToken;
    const res = await fetch(`${cpUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? null : JSON.parse(text) };
  }

  const opened = () =>
    broker.child
      .jsonLines()
      .filter(
        (l) =>
          (l as { msg?: string; shard?: string }).msg === 'shard opened' &&
          (l as { shard?: string }).shard === 'acme/prod/orders/0',
      ).length;

  beforeAll(async () => {
    const dir = await tempDir('felix-durable-patch');
    cleanup = dir.cleanup;
    const cpPort = await freePort();
    const bootPort = await freePort();
    cpUrl = `http://127.0.0.1:${cpPort}`;
    cp = await startControlPlane(join(dir.path, 'cp'), cpPort, bootPort);
    operatorToken = await bootstrapToken(bootPort, 'operator', OPERATOR_PERMISSIONS, {
      operator: true,
    });
    broker = await startClusterBroker(dir.path, {
      FELIX_CONTROLPLANE_URL: cpUrl,
      FELIX_NODE_TOKEN: await nodeToken(bootPort, 'broker-a'),
      FELIX_NODE_ID: 'broker-a',
    });
    await waitFor(async () => (await readyStatus(broker)) === 200, 'the broker ready', SETTLE_MS);
    expect((await api('POST', '/v1/tenants', { tenant_id: 'acme' })).status).toBe(201);
    acmeToken = await bootstrapToken(bootPort, 'acme', ['tenant.manage:tenant:acme']);
    expect((await api('POST', '/v1/tenants/acme/namespaces', { namespace: 'prod' })).status).toBe(
      201,
    );
  }, 60_000);

  afterAll(async () => {
    await broker?.child.kill();
    await cp?.kill();
    await cleanup?.();
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
