// Goal: a long poll answers as soon as a write to its feed commits, on this instance and (on
// Postgres) on another instance sharing the database. Method: fastify inject with the
// fallback re-read raised past the poll's wait, so only a wake-up can answer it in time.
import { waitFor, withDeadline } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { type OpenedStore, freshSchema, openTestStore, testApp } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function instance(backend: 'sqlite' | 'postgres', schema?: string) {
  const opened: OpenedStore = await openTestStore(backend, { schema });
  const built = await testApp(opened.store, { longPollRereadMs: 60_000 });
  cleanups.push(async () => {
    await built.app.close();
    // Best-effort removal of the test's store; a leftover temp dir is harmless.
    await opened.cleanup().catch(() => undefined);
  });
  return built;
}

describe('feeds', () => {
  it('a_long_poll_wakes_on_a_change', async () => {
    const { inject, hub } = await instance('sqlite');
    const snap = (await inject({ method: 'GET', url: '/v1/tenants/snapshot' })).json();
    const poll = inject({
      method: 'GET',
      url: `/v1/tenants/changes?since=${snap.next_seq}&wait_ms=20000`,
    });
    await waitFor(() => hub.parkedCount === 1, 'the poll to park');
    await inject({ method: 'POST', url: '/v1/tenants', payload: { tenant_id: 'woken' } });
    const r = await withDeadline(poll, 10_000, 'the long poll to wake before its 20 s wait');
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(body.items).toHaveLength(1);
    expect(body.items[0]).toMatchObject({
      seq: snap.next_seq,
      op: 'created',
      item: { tenant_id: 'woken' },
    });
    expect(body.next_seq).toBe(snap.next_seq + 1);
  });

  it('a_long_poll_with_nothing_new_answers_an_empty_page_at_its_wait', async () => {
    const { inject } = await instance('sqlite');
    const r = (
      await inject({ method: 'GET', url: '/v1/shard-assignments/changes?since=1&wait_ms=50' })
    ).json();
    expect(r).toEqual({ items: [], next_seq: 1 });
  });

  it('a_long_poll_wakes_on_another_instances_write', async () => {
    const schema = freshSchema();
    const a = await instance('postgres', schema);
    const b = await instance('postgres', schema);
    const snap = (await a.inject({ method: 'GET', url: '/v1/tenants/snapshot' })).json();
    const poll = a.inject({
      method: 'GET',
      url: `/v1/tenants/changes?since=${snap.next_seq}&wait_ms=20000`,
    });
    await waitFor(() => a.hub.parkedCount === 1, 'the poll to park');
    await b.inject({ method: 'POST', url: '/v1/tenants', payload: { tenant_id: 'remote' } });
    const r = await withDeadline(poll, 10_000, 'the long poll to wake on a NOTIFY');
    expect(r.json().items.map((c: { item: { tenant_id: string } }) => c.item.tenant_id)).toEqual([
      'remote',
    ]);
  });
});
