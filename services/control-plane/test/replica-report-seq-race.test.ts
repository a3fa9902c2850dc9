// Goal: 6681990d numbers a leader's replica reports so that one it gave up on (its request timed
// out) and that is applied late cannot take back what a newer one said: docs/control-plane.md and
// store/replica-reports.ts, "one older than the stored one from the same incarnation (a request it
// gave up on, applied late) is refused as stale too". A request a broker gives up on is one the
// control plane is still working on when the next arrives: the two run at once. On Postgres
// (READ COMMITTED, plain BEGIN) the older one reads the stored report before the newer commits,
// passes the seq check, and its upsert (ON CONFLICT DO UPDATE, no condition on report_seq) then
// overwrites the newer report once the newer commits.
// Method: fastify inject over a Postgres store (FELIX_TEST_POSTGRES_URL); a second connection
// holds the stored report's row lock so that both requests have read it before either writes;
// the newer request queues on the lock first, the older second; the lock is then released.
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type OpenedStore, POSTGRES_URL, freshSchema, openTestStore, testApp } from './helpers.js';

let opened: OpenedStore;
let built: Awaited<ReturnType<typeof testApp>>;
let schema: string;

beforeEach(async () => {
  schema = freshSchema();
  opened = await openTestStore('postgres', { schema });
  built = await testApp(opened.store);
});
afterEach(async () => {
  await built.app.close();
  await opened.cleanup();
});

async function placedStream(): Promise<{ leader: string; replicas: string[]; generation: number }> {
  for (const id of ['n1', 'n2', 'n3']) {
    const r = await built.inject({
      method: 'POST',
      url: '/v1/nodes',
      payload: { node_id: id, advertise_addr: `${id}:5001`, zone: id, incarnation: 1 },
    });
    expect(r.statusCode).toBe(200);
  }
  await built.inject({ method: 'POST', url: '/v1/tenants', payload: { tenant_id: 't1' } });
  await built.inject({
    method: 'POST',
    url: '/v1/tenants/t1/namespaces',
    payload: { namespace: 'ns' },
  });
  const created = await built.inject({
    method: 'POST',
    url: '/v1/tenants/t1/namespaces/ns/streams',
    payload: { stream: 's', shards: 1, replication_factor: 3, durable: true },
  });
  expect(created.statusCode).toBe(201);
  await built.placement.trigger();
  const page = (await built.inject({ method: 'GET', url: '/v1/shard-assignments' })).json();
  return page.items[0];
}

function shard(generation: number, extra: Record<string, unknown> = {}) {
  return {
    tenant_id: 't1',
    namespace: 'ns',
    kind: 'stream',
    stream: 's',
    shard: 0,
    generation,
    leader_offset: 10,
    commit_offset: 8,
    replica_offsets: [],
    ...extra,
  };
}

function report(nodeId: string, body: unknown) {
  return built.inject({
    method: 'POST',
    url: `/v1/nodes/${nodeId}/replica-status`,
    payload: body as Record<string, unknown>,
  });
}

/** Backends of this test's schema waiting on a lock. */
async function lockWaiters(c: pg.Client): Promise<number> {
  const r = await c.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND query ILIKE '%replica_reports%'`,
  );
  return r.rows[0].n as number;
}

async function until(cond: () => Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + 10_000;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('replica report order under concurrent requests', () => {
  it('an_older_replica_report_applied_while_a_newer_one_commits_does_not_overwrite_it', async () => {
    const a = await placedStream();
    const [b, c] = a.replicas.filter((id) => id !== a.leader);
    const first = await report(a.leader, {
      incarnation: 1,
      seq: 1,
      shards: [shard(a.generation, { in_sync: [b] })],
    });
    expect(first.statusCode).toBe(200);

    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    const watcher = new pg.Client({ connectionString: POSTGRES_URL });
    await watcher.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT * FROM "${schema}".replica_reports FOR UPDATE`);
      const base = await lockWaiters(watcher);
      // The newer report (seq 3) and the one given up on (seq 2) are both being applied.
      const newer = report(a.leader, {
        incarnation: 1,
        seq: 3,
        shards: [shard(a.generation, { in_sync: [c] })],
      });
      await until(async () => (await lockWaiters(watcher)) >= base + 1, 'the newer report');
      const late = report(a.leader, {
        incarnation: 1,
        seq: 2,
        shards: [shard(a.generation, { in_sync: [b, c], drained: true, caught_up: [b, c] })],
      });
      await until(async () => (await lockWaiters(watcher)) >= base + 2, 'the late report');
      await holder.query('COMMIT');
      expect((await newer).statusCode).toBe(200);
      await late;
      const stored = (await built.inject({ method: 'GET', url: '/v1/replica-reports' })).json();
      // What the newest report said stands: the late one must not bring back drained or in_sync.
      expect(stored.items).toEqual([expect.objectContaining({ in_sync: [c], drained: false })]);
    } finally {
      // Connections of a test already decided: a failed end leaks nothing that matters.
      await holder.end().catch(() => undefined);
      // As above.
      await watcher.end().catch(() => undefined);
    }
  }, 30_000);
});
