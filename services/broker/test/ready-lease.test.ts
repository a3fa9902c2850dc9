// Goal: /ready answers 503, saying why, while a clustered broker's write lease is not held (it
// then refuses every write to the shards it leads), and 200 again once the lease is renewed; a
// broker without a control plane has no lease and stays ready.
// Method: the broker's own HTTP listener and readiness rule over a real Lease on a fake
// monotonic clock (a real lapse takes 0.75 of the control plane's expiry timeout).
import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { Lease, leaseRefusal } from '../src/cluster/lease.js';
import { notReadyReason, startHttp } from '../src/http/http-server.js';
import { LEASE_KEPT_FRACTION } from '../src/limits.js';
import { BrokerMetrics } from '../src/metrics.js';

const L_MS = 10_000;

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function ready(port: number): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/ready`);
  return { status: res.status, body: await res.text() };
}

describe('/ready and the write lease', () => {
  it('ready_answers_503_with_its_reason_while_the_write_lease_is_lapsed_and_200_once_renewed', async () => {
    let now = 0;
    const lease = new Lease(() => now);
    lease.renew(0, L_MS);
    const http = await startHttp('127.0.0.1', 0, new BrokerMetrics(), {
      notReady: () =>
        notReadyReason({ started: true, draining: false, cluster: { ready: true, lease } }),
      refreshGauges: () => undefined,
    });
    server = http.server;
    expect(await ready(http.port)).toEqual({ status: 200, body: 'ready\n' });
    now = LEASE_KEPT_FRACTION * L_MS; // the last accepted heartbeat is now too old
    const lapsed = await ready(http.port);
    expect(lapsed.status).toBe(503);
    expect(lapsed.body).toMatch(/^not ready: lease_lapsed/);
    lease.renew(now, L_MS); // the next heartbeat is accepted
    expect(await ready(http.port)).toEqual({ status: 200, body: 'ready\n' });
    lease.depose(); // counted down: no lease until the assignments catch up
    expect((await ready(http.port)).status).toBe(503);
  });

  it('a_broker_without_a_lease_is_ready_by_the_other_rules_alone', () => {
    expect(notReadyReason({ started: true, draining: false, cluster: null })).toBeNull();
    expect(
      notReadyReason({ started: true, draining: false, cluster: { ready: true, lease: null } }),
    ).toBeNull();
    expect(notReadyReason({ started: true, draining: true, cluster: null })).toBe('draining');
    expect(notReadyReason({ started: false, draining: false, cluster: null })).toBe('starting');
    expect(
      notReadyReason({ started: true, draining: false, cluster: { ready: false, lease: null } }),
    ).toMatch(/^waiting for the control plane/);
  });

  it('a_write_to_a_broker_still_registering_is_refused_as_starting_not_as_a_lapsed_lease', () => {
    // A user's trial: clients reconnected to a restarted broker before its registration was
    // accepted and were told it "has had no heartbeat accepted for 0.75 of its lease", which
    // sent an operator looking at heartbeats. Each way of not holding the lease says its own.
    let now = 0;
    const lease = new Lease(() => now);
    const where = 'cache t1/default/users shard 0';
    const starting = leaseRefusal(lease, where, 'b1');
    expect(starting?.reason).toBe('lease_starting');
    expect(starting?.wireCode).toBe('shard_unavailable');
    expect(starting?.message).toMatch(/registering with the control plane/);
    lease.renew(0, L_MS);
    expect(leaseRefusal(lease, where, 'b1')).toBeNull();
    now = LEASE_KEPT_FRACTION * L_MS + 1;
    const lapsed = leaseRefusal(lease, where, 'b1');
    expect(lapsed?.reason).toBe('lease_lapsed');
    expect(lapsed?.message).toMatch(/0\.75 of its lease/);
    lease.renew(now, L_MS);
    lease.depose();
    const deposed = leaseRefusal(lease, where, 'b1');
    expect(deposed?.reason).toBe('lease_deposed');
    expect(deposed?.message).toMatch(/counted node b1 down/);
  });
});
