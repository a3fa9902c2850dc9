// Goal: membership timing and incarnations: a silent node goes down only after L + margin, an
// older incarnation is refused, and the placement view says why a node is not eligible.
// Method: fastify inject with short liveness timings; simulated brokers heartbeat on timers.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '@felix/testing-harness';
import { FAST_LIVENESS, type OpenedStore, openTestStore, testApp } from './helpers.js';

let opened: OpenedStore;
let built: Awaited<ReturnType<typeof testApp>>;
const timers: NodeJS.Timeout[] = [];

beforeEach(async () => {
  opened = await openTestStore('sqlite');
  built = await testApp(opened.store, { liveness: FAST_LIVENESS });
});
afterEach(async () => {
  for (const t of timers.splice(0)) clearInterval(t);
  await built.app.close();
  await opened.cleanup();
});

function register(id: string, incarnation: number, zone: string | null = null) {
  return built.inject({
    method: 'POST',
    url: '/v1/nodes',
    payload: { node_id: id, advertise_addr: `${id}:5001`, zone, incarnation },
  });
}
function heartbeat(id: string, incarnation: number) {
  return built.inject({
    method: 'POST',
    url: `/v1/nodes/${id}/heartbeat`,
    payload: { incarnation },
  });
}
async function nodeView(id: string) {
  return (await built.inject({ method: 'GET', url: `/v1/nodes/${id}` })).json();
}

describe('membership', () => {
  it('a_silent_node_is_marked_down_after_the_expiry_window', async () => {
    const reg = await register('quiet', 1);
    expect(reg.statusCode).toBe(200);
    expect(reg.json()).toMatchObject({ expiry_timeout_ms: 800, heartbeat_interval_ms: 200 });
    expect((await register('chatty', 1)).statusCode).toBe(200);
    timers.push(setInterval(() => void heartbeat('chatty', 1), 100));

    const down = await waitFor(
      async () => {
        const v = await nodeView('quiet');
        return v.node.status.lifecycle === 'down' ? v : undefined;
      },
      'the silent node to be marked down',
      10_000,
    );
    // Never early: it was silent for at least L + margin on the store's clock.
    const silentFor = Date.now() - down.node.status.last_heartbeat_at_ms;
    expect(silentFor).toBeGreaterThanOrEqual(
      FAST_LIVENESS.expiryTimeoutMs + FAST_LIVENESS.regrantMarginMs,
    );
    expect(down.placement).toMatchObject({ eligible: false, routable: false });
    expect(down.placement.reasons).toContain('lifecycle_down');
    expect((await nodeView('chatty')).node.status.lifecycle).toBe('live');

    // A heartbeat does not revive it; the answer tells the broker to re-register.
    const hb = await heartbeat('quiet', 1);
    expect(hb.json().lifecycle).toBe('down');
    expect((await register('quiet', 2)).json().node.status.lifecycle).toBe('live');
  });

  it('a_silent_node_is_marked_down_when_its_window_ends_not_at_the_next_periodic_sweep', async () => {
    // A window (500 ms) well inside the sweep interval (1.5 s): before, a node was marked down
    // at the first periodic sweep after its window (here about 1.5 s of silence), and a stamp
    // counted from the sweep that first saw it (about 2.8 s for `late`).
    const liveness = { ...FAST_LIVENESS, expiryTimeoutMs: 400, regrantMarginMs: 100 };
    await built.app.close();
    built = await testApp(opened.store, { liveness: { ...liveness, sweepIntervalMs: 1500 } });
    const firstSweepPast = Date.now() + 1_700;
    const windowMs = liveness.expiryTimeoutMs + liveness.regrantMarginMs;
    expect((await register('quiet', 1)).statusCode).toBe(200);
    expect((await register('late', 1)).statusCode).toBe(200);
    expect((await heartbeat('quiet', 1)).json().lifecycle).toBe('live');
    // `late` beats until a periodic sweep has seen it, then falls silent.
    const beating = setInterval(() => void heartbeat('late', 1), 100);
    timers.push(beating);
    const silentWhenDown = (id: string) =>
      waitFor(
        async () => {
          const v = await nodeView(id);
          if (v.node.status.lifecycle !== 'down') return undefined;
          return Date.now() - v.node.status.last_heartbeat_at_ms;
        },
        `${id} to be marked down`,
        10_000,
      );
    const quietFor = await silentWhenDown('quiet');
    await waitFor(() => Date.now() >= firstSweepPast, 'the first periodic sweep to be past', 5_000);
    clearInterval(beating);
    const lateFor = await silentWhenDown('late');
    for (const silentFor of [quietFor, lateFor]) {
      expect(silentFor).toBeGreaterThanOrEqual(windowMs);
      expect(silentFor).toBeLessThan(windowMs + 400);
    }
  });

  it('a_heartbeat_from_an_older_incarnation_is_refused', async () => {
    await register('n1', 7);
    const old = await heartbeat('n1', 6);
    expect(old.statusCode).toBe(409);
    expect(old.json().code).toBe('FELIX_CONTROLPLANE_STALE_INCARNATION');
    const reg = await register('n1', 3);
    expect(reg.statusCode).toBe(409);
    expect(reg.json().code).toBe('FELIX_CONTROLPLANE_STALE_INCARNATION');
    const current = await heartbeat('n1', 7);
    expect(current.statusCode).toBe(200);
    expect(current.json()).toMatchObject({ node_id: 'n1', lifecycle: 'live' });
    const unknown = await heartbeat('ghost', 1);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('FELIX_CONTROLPLANE_NODE_NOT_FOUND');
  });

  it('a_drained_node_stays_routable_but_takes_no_new_shards', async () => {
    await register('n1', 1);
    const drained = await built.inject({ method: 'POST', url: '/v1/nodes/n1/drain' });
    expect(drained.statusCode).toBe(200);
    expect(drained.json().placement).toMatchObject({
      eligible: false,
      routable: true,
      reasons: ['lifecycle_draining'],
    });
    const other = await register('n2', 1);
    expect(other.statusCode).toBe(200);
    const dup = await built.inject({
      method: 'POST',
      url: '/v1/nodes',
      payload: { node_id: 'n3', advertise_addr: 'n2:5001', incarnation: 1 },
    });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().code).toBe('FELIX_CONTROLPLANE_ADDRESS_IN_USE');
    const live = await built.inject({ method: 'DELETE', url: '/v1/nodes/n2' });
    expect(live.json().code).toBe('FELIX_CONTROLPLANE_NODE_STATE_CONFLICT');
    const left = await built.inject({ method: 'POST', url: '/v1/nodes/n2/deregister' });
    expect(left.json().node.status.lifecycle).toBe('left');
    expect((await built.inject({ method: 'DELETE', url: '/v1/nodes/n2' })).statusCode).toBe(204);
    const list = (await built.inject({ method: 'GET', url: '/v1/nodes' })).json();
    expect(list.items.map((v: { node: { node_id: string } }) => v.node.node_id)).toEqual(['n1']);
  });
});
