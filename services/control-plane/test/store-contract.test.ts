// Goal: the store contract: one suite every backend must pass, run here against SQLite (a temp
// file) and the real Postgres server on this machine (never a mock). Method: every case opens a
// fresh store (a fresh schema on Postgres, dropped afterwards) and drives it directly.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AlreadyExistsError,
  InvalidCursorError,
  NamespaceNotFoundError,
  NotRegisteredError,
  StaleIncarnationError,
  TenantNotFoundError,
} from '../src/errors.js';
import type { ControlStore } from '../src/store/store.js';
import type { RegisterInput, Stream } from '../src/store/types.js';
import {
  type Backend,
  MIGRATIONS,
  ManualClock,
  type OpenedStore,
  openTestStore,
  lifecycleView as allLive,
} from './helpers.js';

export function stream(name: string, extra: Partial<Stream> = {}): Stream {
  return {
    tenant_id: 't1',
    namespace: 'ns',
    stream: name,
    kind: 'Stream',
    shards: 1,
    replication_factor: 1,
    retention: { max_age_seconds: null, max_size_bytes: null },
    consistency: 'Leader',
    durable: false,
    routing: 'modulo',
    uid: '',
    ...extra,
  };
}

export function registration(id: string, extra: Partial<RegisterInput> = {}): RegisterInput {
  return {
    node_id: id,
    advertise_addr: `${id}:5001`,
    client_addr: null,
    region: 'local',
    zone: null,
    labels: {},
    capacity: { max_shards: 0, weight: 1 },
    incarnation: 1,
    ...extra,
  };
}

async function seed(store: ControlStore): Promise<void> {
  await store.tenants.create({ tenant_id: 't1', display_name: 'T1' });
  await store.namespaces.create({ tenant_id: 't1', namespace: 'ns', display_name: 'ns' });
}

function storeContract(backend: Backend): void {
  describe(`store contract on ${backend}`, () => {
    let opened: OpenedStore;
    let store: ControlStore;
    let clock: ManualClock;
    beforeEach(async () => {
      clock = new ManualClock();
      opened = await openTestStore(backend, { clock });
      store = opened.store;
    });
    afterEach(async () => {
      await opened.cleanup();
    });

    it('catalog_resources_read_back_as_created', async () => {
      await seed(store);
      await store.streams.create(
        stream('orders', {
          shards: 4,
          replication_factor: 3,
          durable: true,
          routing: 'jump_hash',
          retention: { max_age_seconds: 60, max_size_bytes: null },
        }),
      );
      await store.caches.create({
        tenant_id: 't1',
        namespace: 'ns',
        cache: 'sessions',
        display_name: 'S',
        shards: 2,
        replication_factor: 1,
        consistency: 'Quorum',
        default_ttl_ms: null,
      });
      expect(await store.tenants.get('t1')).toEqual({ tenant_id: 't1', display_name: 'T1' });
      const orders = await store.streams.get('t1', 'ns', 'orders');
      expect(orders).toEqual(
        stream('orders', {
          shards: 4,
          replication_factor: 3,
          durable: true,
          routing: 'jump_hash',
          retention: { max_age_seconds: 60, max_size_bytes: null },
          uid: orders.uid,
        }),
      );
      expect(orders.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect((await store.caches.get('t1', 'ns', 'sessions')).consistency).toBe('Quorum');
      expect((await store.namespaces.list('t1', 10)).items.map((n) => n.namespace)).toEqual(['ns']);
    });

    it('a_name_deleted_and_created_again_gets_another_creation_id', async () => {
      await seed(store);
      const first = (await store.streams.create(stream('s'))).item;
      // An identical create answers the existing resource with its id.
      expect((await store.streams.create(stream('s'))).item.uid).toBe(first.uid);
      await store.streams.delete('t1', 'ns', 's');
      const again = (await store.streams.create(stream('s'))).item;
      expect(again.uid).not.toBe('');
      expect(again.uid).not.toBe(first.uid);
      expect((await store.streams.get('t1', 'ns', 's')).uid).toBe(again.uid);
      const cache = { ...stream('c'), cache: 'c', display_name: 'c', default_ttl_ms: null };
      const { stream: _s, kind: _k, retention: _r, durable: _d, routing: _ro, ...c } = cache;
      const c1 = (await store.caches.create(c)).item;
      await store.caches.delete('t1', 'ns', 'c');
      const c2 = (await store.caches.create(c)).item;
      expect(c1.uid).not.toBe(c2.uid);
      // The feed carries it: a broker compares it with what its files were written for.
      const feed = await store.feeds.changes('caches', 0, 100);
      const created = feed.items.filter((ch) => ch.op === 'created').map((ch) => ch.item);
      expect(created).toEqual([
        expect.objectContaining({ uid: c1.uid }),
        expect.objectContaining({ uid: c2.uid }),
      ]);
    });

    it('an_identical_create_is_unchanged_and_a_different_one_conflicts', async () => {
      await seed(store);
      expect((await store.streams.create(stream('s'))).created).toBe(true);
      expect((await store.streams.create(stream('s'))).created).toBe(false);
      await expect(store.streams.create(stream('s', { shards: 2 }))).rejects.toBeInstanceOf(
        AlreadyExistsError,
      );
      await expect(
        store.tenants.create({ tenant_id: 't1', display_name: 'other' }),
      ).rejects.toBeInstanceOf(AlreadyExistsError);
    });

    it('a_resource_under_an_unknown_parent_is_refused_and_nothing_is_written', async () => {
      await expect(
        store.namespaces.create({ tenant_id: 'nope', namespace: 'ns', display_name: '' }),
      ).rejects.toBeInstanceOf(TenantNotFoundError);
      await store.tenants.create({ tenant_id: 't1', display_name: '' });
      await expect(store.streams.create(stream('s'))).rejects.toBeInstanceOf(
        NamespaceNotFoundError,
      );
      const feed = await store.feeds.changes('streams', 1, 100);
      expect(feed.items).toEqual([]);
      expect((await store.feeds.changes('namespaces', 1, 100)).items).toEqual([]);
    });

    it('keyset_paging_returns_every_item_once_in_order', async () => {
      const ids = Array.from({ length: 23 }, (_, i) => `tenant${String(i).padStart(2, '0')}`);
      for (const id of [...ids].reverse())
        await store.tenants.create({ tenant_id: id, display_name: id });
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const p = await store.tenants.list(5, cursor);
        seen.push(...p.items.map((t) => t.tenant_id));
        cursor = p.next_cursor ?? undefined;
        pages++;
      } while (cursor);
      expect(seen).toEqual(ids);
      expect(pages).toBe(5);
      await expect(store.tenants.list(5, 'not-a-cursor')).rejects.toBeInstanceOf(
        InvalidCursorError,
      );
    });

    it('a_cursor_from_another_list_is_refused_not_read_as_a_position', async () => {
      await seed(store);
      await store.namespaces.create({ tenant_id: 't1', namespace: 'ns2', display_name: '' });
      for (const name of ['a', 'b', 'c']) await store.streams.create(stream(name));
      const streams = await store.streams.list('t1', 'ns', 1);
      expect(streams.next_cursor).not.toBeNull();
      const cursor = streams.next_cursor ?? '';
      // Same key shape (one name), another list or another namespace: not this list's position.
      await expect(store.caches.list('t1', 'ns', 1, cursor)).rejects.toBeInstanceOf(
        InvalidCursorError,
      );
      await expect(store.streams.list('t1', 'ns2', 1, cursor)).rejects.toBeInstanceOf(
        InvalidCursorError,
      );
      const rest = await store.streams.list('t1', 'ns', 10, cursor);
      expect(rest.items.map((s) => s.stream)).toEqual(['b', 'c']);
    });

    it('deleting_a_tenant_cascades_to_everything_under_it', async () => {
      await seed(store);
      await store.streams.create(stream('s', { shards: 2 }));
      await store.caches.create({
        tenant_id: 't1',
        namespace: 'ns',
        cache: 'c',
        display_name: 'c',
        shards: 1,
        replication_factor: 1,
        consistency: 'Leader',
        default_ttl_ms: null,
      });
      await store.nodes.register(registration('n1'));
      await store.assignments.pass(allLive);
      expect((await store.assignments.list(100)).items).toHaveLength(3);
      const before = (await store.feeds.snapshot('assignments')).next_seq;
      await store.tenants.delete('t1');
      expect((await store.assignments.list(100)).items).toEqual([]);
      expect((await store.tenants.list(10)).items).toEqual([]);
      await expect(store.namespaces.get('t1', 'ns')).rejects.toBeInstanceOf(TenantNotFoundError);
      const unassigned = await store.feeds.changes('assignments', before, 100);
      expect(unassigned.items.map((c) => c.op)).toEqual(['unassigned', 'unassigned', 'unassigned']);
      const streams = await store.feeds.changes('streams', 1, 100);
      expect(streams.items.map((c) => c.op)).toEqual(['created', 'deleted']);
    });

    it('a_snapshot_and_its_next_seq_resume_the_feed_without_gaps', async () => {
      await seed(store);
      await store.streams.create(stream('a'));
      const snap = await store.feeds.snapshot('streams');
      expect(snap.items).toHaveLength(1);
      const empty = await store.feeds.changes('streams', snap.next_seq, 100);
      expect(empty).toEqual({ items: [], next_seq: snap.next_seq });
      await store.streams.create(stream('b'));
      await store.streams.patch('t1', 'ns', 'a', { consistency: 'Quorum' });
      await store.streams.delete('t1', 'ns', 'b');
      const page = await store.feeds.changes('streams', snap.next_seq, 100);
      expect(page.items.map((c) => [c.seq, c.op, c.key.stream])).toEqual([
        [snap.next_seq, 'created', 'b'],
        [snap.next_seq + 1, 'updated', 'a'],
        [snap.next_seq + 2, 'deleted', 'b'],
      ]);
      expect(page.next_seq).toBe(snap.next_seq + 3);
      expect((page.items[1]!.item as Stream).consistency).toBe('Quorum');
      const paged = await store.feeds.changes('streams', snap.next_seq, 2);
      expect(paged.next_seq).toBe(snap.next_seq + 2);
    });

    it('trimmed_history_and_a_reset_sequence_are_signalled', async () => {
      await opened.cleanup();
      opened = await openTestStore(backend, { changeRetentionRows: 50, clock });
      store = opened.store;
      await seed(store);
      for (let i = 0; i < 120; i++) await store.streams.create(stream(`s${i}`));
      // Retention is 50 rows (trimmed each time the sequence crosses a multiple of 50): asking
      // from seq 1 returns a first row past 1 (a gap: resnapshot), and at most 100 rows remain.
      const gap = await store.feeds.changes('streams', 1, 1000);
      expect(gap.items[0]!.seq).toBeGreaterThan(1);
      expect(gap.items.length).toBeGreaterThanOrEqual(50);
      expect(gap.items.length).toBeLessThanOrEqual(100);
      expect(gap.items[gap.items.length - 1]!.seq).toBe(120);
      const ahead = await store.feeds.changes('streams', 1000, 10);
      expect(ahead.items).toEqual([]);
      expect(ahead.next_seq).toBeLessThan(1000);
    });

    it('the_change_feed_orders_changes_by_commit', async () => {
      await seed(store);
      const from = (await store.feeds.snapshot('streams')).next_seq;
      const writers = 8;
      const each = 12;
      const total = writers * each + writers * Math.ceil(each / 3);
      // A follower reads the feed while the writers run: if a later sequence number ever became
      // visible before an earlier one, the follower would step past the earlier one for good.
      const all: Awaited<ReturnType<ControlStore['feeds']['changes']>>['items'] = [];
      let since = from;
      let writing = true;
      const follower = (async () => {
        while (writing || all.length < total) {
          // Read the flag before the page: a page read while the last commit was in flight may
          // be empty even though writing has ended since.
          const done = !writing;
          const p = await store.feeds.changes('streams', since, 7);
          all.push(...p.items);
          since = p.next_seq;
          if (done && p.items.length === 0) break;
          await new Promise((r) => setImmediate(r));
        }
      })();
      await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          for (let i = 0; i < each; i++) {
            await store.streams.create(stream(`w${w}-${i}`));
            if (i % 3 === 0)
              await store.streams.patch('t1', 'ns', `w${w}-${i}`, { consistency: 'Quorum' });
          }
        }),
      );
      writing = false;
      await follower;
      // Sequence numbers are dense and increasing, and each stream's update follows its create.
      expect(all.map((c) => c.seq)).toEqual(all.map((_, i) => from + i));
      expect(all).toHaveLength(total);
      const createdAt = new Map<string, number>();
      for (const c of all) {
        const name = String(c.key.stream);
        if (c.op === 'created') createdAt.set(name, c.seq);
        else expect(createdAt.get(name)).toBeLessThan(c.seq);
      }
      // The snapshot taken now agrees with the feed: every created stream is in it.
      const snap = await store.feeds.snapshot('streams');
      expect(snap.items).toHaveLength(writers * each);
      expect(snap.next_seq).toBe(from + all.length);
    });

    it('concurrent_writes_that_fail_leave_no_trace_beside_ones_that_succeed', async () => {
      await seed(store);
      const from = (await store.feeds.snapshot('streams')).next_seq;
      // Issued together, so SQLite commits them as one group: the refused ones must roll back
      // alone, and the others must all be there.
      const results = await Promise.allSettled(
        Array.from({ length: 40 }, (_, i) =>
          store.streams.create(
            i % 4 === 0 ? { ...stream(`bad${i}`), namespace: 'missing' } : stream(`ok${i}`),
          ),
        ),
      );
      expect(results.filter((r) => r.status === 'rejected')).toHaveLength(10);
      for (const r of results) {
        if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(NamespaceNotFoundError);
      }
      const page = await store.feeds.changes('streams', from, 100);
      expect(page.items.map((c) => c.seq)).toEqual(Array.from({ length: 30 }, (_, i) => from + i));
      expect(page.items.every((c) => String(c.key.stream).startsWith('ok'))).toBe(true);
      expect((await store.streams.list('t1', 'ns', 100)).items).toHaveLength(30);
    });

    it('a_stale_incarnation_is_refused_and_a_down_node_needs_a_newer_one', async () => {
      await store.nodes.register(registration('n1', { incarnation: 5 }));
      clock.advance(1);
      expect(await store.nodes.heartbeat('n1', 5)).toBe('live');
      const stamp = clock.nowMs();
      clock.advance(1);
      await expect(store.nodes.heartbeat('n1', 4)).rejects.toBeInstanceOf(StaleIncarnationError);
      await expect(store.nodes.heartbeat('n1', 6)).rejects.toBeInstanceOf(NotRegisteredError);
      await expect(
        store.nodes.register(registration('n1', { incarnation: 4 })),
      ).rejects.toBeInstanceOf(StaleIncarnationError);
      // The refused calls left the stamp alone: the sweep's stamp still marks the node down.
      expect(await store.nodes.markDown('n1', stamp)).toBe(true);
      clock.advance(1);
      expect(await store.nodes.heartbeat('n1', 5)).toBe('down');
      await expect(
        store.nodes.register(registration('n1', { incarnation: 5 })),
      ).rejects.toBeInstanceOf(NotRegisteredError);
      clock.advance(1);
      const revived = await store.nodes.register(registration('n1', { incarnation: 6 }));
      expect(revived.node.status).toMatchObject({ lifecycle: 'live', incarnation: 6 });
      expect(revived.revived).toBe(true);
    });

    it('a_placement_pass_bumps_generations_only_on_change', async () => {
      await seed(store);
      const now = clock.nowMs();
      for (const id of ['n1', 'n2', 'n3'])
        await store.nodes.register(registration(id, { zone: id }));
      await store.streams.create(stream('s', { shards: 3, replication_factor: 2 }));
      const first = await store.assignments.pass(allLive);
      expect(first.written).toHaveLength(3);
      expect(first.written.every((a) => a.generation === 1 && a.replicas.length === 2)).toBe(true);
      const again = await store.assignments.pass(allLive);
      expect(again.written).toEqual([]);
      const victim = first.written[0]!.leader;
      await store.nodes.markDown(victim, now);
      const moved = await store.assignments.pass(allLive);
      expect(moved.written.length).toBeGreaterThan(0);
      for (const a of moved.written) {
        expect(a.replicas).not.toContain(victim);
        expect(a.generation).toBe(2);
      }
      const feed = await store.feeds.snapshot('assignments');
      expect(feed.items).toHaveLength(3);
    });

    it('an_assignment_left_without_its_resource_is_removed_and_a_recreate_continues_its_generation', async () => {
      await seed(store);
      await store.nodes.register(registration('n1'));
      // What a delete racing a placement pass could leave behind: an assignment with no stream.
      await store.driver.query(
        `INSERT INTO shard_assignments (tenant_id, namespace, kind, name, shard, leader, replicas, generation, state, routing, updated_at_ms)
         VALUES ('t1', 'ns', 'stream', 'ghost', 0, 'n1', '["n1"]', 4, 'active', NULL, 0)`,
      );
      const from = (await store.feeds.snapshot('assignments')).next_seq;
      const pass = await store.assignments.pass(allLive);
      expect(pass.written).toEqual([]);
      expect((await store.assignments.list(10)).items).toEqual([]);
      const removed = await store.feeds.changes('assignments', from, 10);
      expect(removed.items.map((c) => [c.op, c.key.stream])).toEqual([['unassigned', 'ghost']]);
      // A stale row under a name being created is replaced at a higher generation.
      await store.driver.query(
        `INSERT INTO shard_assignments (tenant_id, namespace, kind, name, shard, leader, replicas, generation, state, routing, updated_at_ms)
         VALUES ('t1', 'ns', 'stream', 'again', 0, 'n1', '["n1"]', 7, 'active', NULL, 0)`,
      );
      await store.streams.create(stream('again'), allLive);
      const [a] = (await store.assignments.list(10)).items;
      expect(a).toMatchObject({ stream: 'again', leader: 'n1', generation: 8 });
    });

    it('the_store_stamps_rows_with_the_injected_clock', async () => {
      // A day after the epoch: no stamp taken from the system clock can pass for this one.
      const start = 86_400_000;
      await opened.cleanup();
      clock = new ManualClock(start);
      opened = await openTestStore(backend, { clock });
      store = opened.store;
      const stamps = async (sql: string) =>
        (await store.driver.query<{ ms: unknown }>(sql)).map((r) => Number(r.ms));
      await seed(store);
      clock.advance(1000);
      // In memory, so its cache shard moves when it goes down (a durable one's would wait).
      await store.nodes.register(registration('n1', { durable_storage: false }));
      await store.streams.create(stream('s', { shards: 2 }), allLive);
      await store.caches.create(
        {
          tenant_id: 't1',
          namespace: 'ns',
          cache: 'c',
          display_name: 'c',
          shards: 1,
          replication_factor: 1,
          consistency: 'Leader',
          default_ttl_ms: null,
        },
        allLive,
      );
      clock.advance(1000);
      expect(await store.nodes.heartbeat('n1', 1)).toBe('live');
      expect(await stamps('SELECT applied_at_ms AS ms FROM schema_migrations')).toEqual(
        MIGRATIONS.map(() => start),
      );
      expect(await stamps('SELECT created_at_ms AS ms FROM tenants')).toEqual([start]);
      expect(await stamps('SELECT created_at_ms AS ms FROM namespaces')).toEqual([start]);
      expect(await stamps('SELECT created_at_ms AS ms FROM streams')).toEqual([start + 1000]);
      expect(await stamps('SELECT created_at_ms AS ms FROM caches')).toEqual([start + 1000]);
      expect(await stamps('SELECT updated_at_ms AS ms FROM shard_assignments')).toEqual([
        start + 1000,
        start + 1000,
        start + 1000,
      ]);
      const node = await store.nodes.get('n1');
      expect(node.status.registered_at_ms).toBe(start + 1000);
      expect(node.status.last_heartbeat_at_ms).toBe(start + 2000);
      expect(
        await stamps(
          "SELECT ts_ms AS ms FROM changes WHERE feed IN ('tenants', 'namespaces') ORDER BY feed",
        ),
      ).toEqual([start, start]);
      const later = await stamps(
        "SELECT ts_ms AS ms FROM changes WHERE feed IN ('streams', 'caches', 'assignments')",
      );
      expect(later).toHaveLength(5);
      expect(later.every((ms) => ms === start + 1000)).toBe(true);
      // A placement pass stamps what it rewrites with the same clock.
      clock.advance(1000);
      await store.nodes.register(registration('n2'));
      await store.nodes.markDown('n1', start + 2000);
      expect((await store.assignments.pass(allLive)).written).toHaveLength(3);
      expect(await stamps('SELECT updated_at_ms AS ms FROM shard_assignments')).toEqual([
        start + 3000,
        start + 3000,
        start + 3000,
      ]);
    });

    it('migrating_again_applies_nothing', async () => {
      expect(await store.migrate()).toEqual([]);
      expect((await store.schemaCurrent()).current).toBe(true);
    });
  });
}

for (const backend of ['sqlite', 'postgres'] as const) storeContract(backend);
