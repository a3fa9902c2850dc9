// Goal: caches, counters, cache watches and consumer groups served by the broker, end to end.
// Method: real felix-broker processes (one shared durable broker over TLS, fresh ones for
// restarts and for the in-memory case) driven through @felix/client; raw transport streams for
// requests the client never sends (bad input). Waiting is by waitFor or by the broker's answers.
import {
  type CacheWatchEvent,
  CursorTooOldError,
  type FelixClient,
  FeatureUnsupportedError,
  type GroupMessage,
  InvalidArgumentError,
  InvalidRequestError,
  NotFoundError,
  StaleClaimError,
  connect,
} from '@felix/client';
import { take, tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { dial } from '@felix/transport';
import {
  FEATURE_EXTENDED,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_NACK_BATCH,
  FEATURE_HI_GROUP_RECORDS_BINARY,
  FLAG_BINARY_GROUP_RECORDS,
  encodeMessage,
} from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, type BrokerSpec, startBroker } from './broker-process.js';
import { rawAuthed } from './raw-session.js';

const YAML = `
streams:
  - { tenant: t1, name: jobs, durable: true, fsync: onCommit }
  - { tenant: t1, name: memjobs }
caches:
  - { tenant: t1, name: users }
  - { tenant: t1, name: sharded, shards: 4 }
  - { tenant: t1, name: alerts }
`;

const text = (b: Uint8Array | undefined) =>
  b === undefined ? undefined : new TextDecoder().decode(b);

function client(broker: BrokerProcess, transport: 'tls' | 'quic' = 'tls'): Promise<FelixClient> {
  return connect({
    servers: [broker.url(transport)],
    tenant: 't1',
    tls: { fingerprint: broker.fingerprint },
    reconnect: { baseMs: 20, maxDelayMs: 200 },
    idleTimeoutMs: 2_000,
  });
}

async function metric(broker: BrokerProcess, pattern: RegExp): Promise<number> {
  const body = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
  const m = pattern.exec(body);
  return m ? Number(m[1]) : 0;
}

const WATCHES = /felix_broker_cache_watches (\d+)/;
const WATCHES_OPENED = /felix_broker_cache_watches_opened_total (\d+)/;

/**
 * Opens a watch with `open` (which must start reading it) and waits until the broker has started
 * it. The open gauge is no sign of that: a watch of an earlier test that is still counted (one
 * over QUIC is released only when its connection closes) made a bare `>= 1` pass before this
 * watch was registered, so its first writes went unseen and the test hung. The opened counter
 * only grows.
 */
async function openWatch(broker: BrokerProcess, open: () => void): Promise<void> {
  const before = await metric(broker, WATCHES_OPENED);
  open();
  await waitFor(async () => (await metric(broker, WATCHES_OPENED)) > before, 'the watch');
}

/** Runs `before` against a durable broker, restarts it on the same data and ports, runs `after`. */
async function acrossRestart(
  extra: Partial<BrokerSpec>,
  before: (felix: FelixClient) => Promise<void>,
  after: (felix: FelixClient) => Promise<void>,
  how: 'stop' | 'kill' = 'stop',
): Promise<void> {
  const dir = await tempDir();
  try {
    const spec: BrokerSpec = { yaml: YAML, dir: dir.path, durable: true, ...extra };
    const first = await startBroker(spec);
    const a = await client(first);
    await before(a);
    await a.close();
    if (how === 'kill') await first.kill();
    else await first.stop();
    const second = await startBroker({ ...spec, port: first.port, httpPort: first.httpPort });
    const b = await client(second);
    try {
      await after(b);
    } finally {
      await b.close();
      await second.stop();
    }
  } finally {
    await dir.cleanup();
  }
}

for (const transport of ['tls', 'quic'] as const) {
  describe(`broker caches, counters, watches and groups over ${transport}`, () => {
    let shared: BrokerProcess;
    let felix: FelixClient;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      const dir = await tempDir();
      cleanup = dir.cleanup;
      shared = await startBroker({
        yaml: YAML,
        dir: dir.path,
        durable: true,
        env: {
          FELIX_BROKER_WATCH_QUEUE_CAPACITY: '8',
          FELIX_GROUP_MAX_IN_FLIGHT: '4',
          // No self-check inside a test's wait: a waiting poll answers early only when a
          // publish, a settle or a lapse wakes it, so the wake tests fail if a wake is lost.
          FELIX_GROUP_WAIT_RECHECK_MS: '600000',
        },
      });
      felix = await client(shared, transport);
    });
    afterAll(async () => {
      await felix?.close();
      await shared?.stop();
      await cleanup?.();
    });

    // ---- caches ----

    it('a_put_value_is_read_back_and_an_absent_key_reads_undefined', async () => {
      const users = felix.cache('users');
      await users.put('u-read', 'alice');
      expect(text(await users.get('u-read'))).toBe('alice');
      expect(await users.get('u-never-written')).toBeUndefined();
      const sharded = felix.cache('sharded');
      await Promise.all(Array.from({ length: 20 }, (_, i) => sharded.put(`k${i}`, `v${i}`)));
      const back = await Promise.all(Array.from({ length: 20 }, (_, i) => sharded.get(`k${i}`)));
      expect(back.map(text)).toEqual(Array.from({ length: 20 }, (_, i) => `v${i}`));
    });

    it('a_burst_of_requests_beyond_the_client_bound_is_answered_in_full', async () => {
      // 5,000 concurrent gets: more than the client keeps unanswered (4,096), so some wait.
      const users = felix.cache('users');
      await users.put('burst', 'b');
      const all = await Promise.all(Array.from({ length: 5000 }, () => users.get('burst')));
      expect(all.every((v) => text(v) === 'b')).toBe(true);
    });

    it('a_deleted_key_answers_with_its_removed_value', async () => {
      const users = felix.cache('users');
      await users.put('u-del', 'bob');
      expect(text(await users.delete('u-del'))).toBe('bob');
      expect(await users.get('u-del')).toBeUndefined();
      // Deleting an absent key is an answer, not a failure.
      expect(await users.delete('u-del')).toBeUndefined();
    });

    it('an_unknown_cache_is_refused_with_a_typed_error_and_counted', async () => {
      const before = await metric(
        shared,
        /felix_broker_bad_input_total\{reason="unknown_cache"\} (\d+)/,
      );
      await expect(felix.cache('nope').get('k')).rejects.toBeInstanceOf(NotFoundError);
      // The request stream stays usable after a refusal.
      await felix.cache('users').put('u-after', 'x');
      expect(text(await felix.cache('users').get('u-after'))).toBe('x');
      expect(
        await metric(shared, /felix_broker_bad_input_total\{reason="unknown_cache"\} (\d+)/),
      ).toBe(before + 1);
    });

    it('bad_cache_and_group_requests_get_typed_errors_and_the_broker_keeps_serving', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const { stream, next } = await rawAuthed(conn, 0x0fff_ffff);
      const scope = { tenant_id: 't1', namespace: 'default' };
      const group = { ...scope, stream: 'jobs', shard: 0, group: 'bad-input' };
      const bad: Array<[Parameters<typeof encodeMessage>[0], string]> = [
        [
          { type: 'cache_get', ...scope, cache: 'users', key: '', request_id: 1 },
          'invalid_request',
        ],
        [{ type: 'cache_get', ...scope, cache: 'ghost', key: 'k', request_id: 2 }, 'not_found'],
        [
          { type: 'counter_add', ...scope, cache: 'ghost', key: 'k', delta: 1n, request_id: 3 },
          'not_found',
        ],
        [
          {
            type: 'group_poll',
            ...group,
            shard: 9,
            max_records: 1,
            wait_ms: 0,
            request_id: 4,
            reclaim: false,
          },
          'invalid_request',
        ],
        [
          {
            type: 'group_poll',
            ...group,
            stream: 'memjobs',
            max_records: 1,
            wait_ms: 0,
            request_id: 5,
            reclaim: false,
          },
          'invalid_request',
        ],
        [
          {
            type: 'group_poll',
            ...group,
            max_records: 0,
            wait_ms: 0,
            request_id: 6,
            reclaim: false,
          },
          'invalid_request',
        ],
        [
          { type: 'group_ack', ...group, group: 'never-seen', offset: 0, request_id: 7 },
          'invalid_request',
        ],
        [{ type: 'group_ack', ...group, offset: 2 ** 50, request_id: 8 }, 'invalid_request'],
        [
          { type: 'cache_watch', ...scope, cache: 'users', key: 'k', prefix: 'k', retained: false },
          'invalid_request',
        ],
      ];
      for (const [msg, code] of bad) {
        await stream.write(encodeMessage(msg));
        const answer = (await next()) as { type: string; code?: string };
        expect(
          answer.type,
          JSON.stringify(msg, (_k, v) => (typeof v === 'bigint' ? `${v}` : v)),
        ).toBe('error');
        // never-seen group with an offset at/after the tail is refused for the offset first
        if (code !== 'invalid_request') expect(answer.code).toBe(code);
      }
      await stream.write(
        encodeMessage({
          type: 'cache_watch',
          ...scope,
          cache: 'users',
          key: 'k',
          from_offset: 0,
          retained: true,
        }),
      );
      expect(await next()).toMatchObject({ type: 'error', code: 'invalid_request' });
      await stream.write(
        encodeMessage({
          type: 'cache_get',
          ...scope,
          cache: 'users',
          key: 'u-read',
          request_id: 99,
        }),
      );
      expect(await next()).toMatchObject({ type: 'cache_value', request_id: 99 });
      await conn.close();
    });

    // ---- counters ----

    it('an_add_answers_with_the_sum_including_it', async () => {
      const hits = felix.counter('users');
      expect(await hits.get('page:/')).toBeUndefined();
      expect(await hits.add('page:/', 1n)).toBe(1n);
      expect(await hits.add('page:/', 41n)).toBe(42n);
      expect(await hits.add('page:/', -50n)).toBe(-8n);
      expect(await hits.get('page:/')).toBe(-8n);
      const sums = await Promise.all(Array.from({ length: 10 }, () => hits.add('page:/c', 2n)));
      expect([...sums].sort((a, b) => Number(a - b))).toEqual(
        Array.from({ length: 10 }, (_, i) => BigInt(2 * (i + 1))),
      );
    });

    it('a_counter_and_a_cache_value_with_one_key_are_unrelated', async () => {
      await felix.cache('users').put('shared-key', 'cached');
      expect(await felix.counter('users').add('shared-key', 5n)).toBe(5n);
      expect(text(await felix.cache('users').get('shared-key'))).toBe('cached');
    });

    it('a_cache_watch_does_not_see_counter_changes', async () => {
      const alerts = felix.cache('alerts');
      const watch = alerts.watch({ prefix: 'cw-' })[Symbol.asyncIterator]();
      // The watch is registered once the broker counts it.
      let first!: Promise<IteratorResult<CacheWatchEvent>>;
      await openWatch(shared, () => {
        first = watch.next();
      });
      await felix.counter('alerts').add('cw-1', 7n);
      await felix.counter('alerts').add('cw-2', 7n);
      await alerts.put('cw-marker', 'm');
      const ev = (await first).value as CacheWatchEvent;
      // The first change the watch sees is the put: the counter adds before it never reach it.
      expect(ev).toMatchObject({ type: 'put', key: 'cw-marker' });
      await watch.return?.();
    });

    // ---- watches ----

    it('a_broker_watch_resumes_gaplessly_by_offset', async () => {
      const alerts = felix.cache('alerts');
      const ac = new AbortController();
      const w1 = alerts.watch({ prefix: 'gap-' }, { signal: ac.signal })[Symbol.asyncIterator]();
      let firstEv!: Promise<IteratorResult<CacheWatchEvent>>;
      await openWatch(shared, () => {
        firstEv = w1.next();
      });
      for (let i = 0; i < 5; i++) await alerts.put(`gap-${i}`, `v${i}`);
      const part = [(await firstEv).value as CacheWatchEvent, ...(await take(w1, 2))];
      ac.abort();
      const last = part[part.length - 1] as { offset: number };
      // Writes made while nobody watched, then a resume from the offset after the last one seen.
      for (let i = 5; i < 8; i++) await alerts.put(`gap-${i}`, `v${i}`);
      await alerts.delete('gap-0');
      const w2 = alerts
        .watch({ prefix: 'gap-' }, { fromOffset: last.offset + 1 })
        [Symbol.asyncIterator]();
      const rest = await take(w2, 6);
      await w2.return?.();
      const keys = [...part, ...rest].map((e) => `${e.type}:${(e as { key: string }).key}`);
      expect(keys).toEqual([
        ...Array.from({ length: 8 }, (_, i) => `put:gap-${i}`),
        'delete:gap-0',
      ]);
      const offsets = [...part, ...rest].map((e) => (e as { offset: number }).offset);
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      expect(new Set(offsets).size).toBe(offsets.length);
    });

    it('a_watch_the_client_closes_is_released_by_the_broker', async () => {
      const alerts = felix.cache('alerts');
      const open = await metric(shared, WATCHES);
      const it = alerts.watch({ prefix: 'released-' })[Symbol.asyncIterator]();
      let first!: Promise<IteratorResult<CacheWatchEvent>>;
      await openWatch(shared, () => {
        first = it.next();
      });
      await alerts.put('released-a', 'x');
      expect((await first).value).toMatchObject({ type: 'put', key: 'released-a' });
      await it.return?.();
      // Nothing written matches the prefix any more: the broker must see the close itself.
      await waitFor(async () => (await metric(shared, WATCHES)) <= open, 'the watch released');
    });

    it('a_retained_watch_on_an_empty_key_reports_zero_retained', async () => {
      const it = felix
        .cache('users')
        .watch({ key: 'nobody-here' }, { retained: true })
        [Symbol.asyncIterator]();
      const first = (await it.next()).value as CacheWatchEvent;
      expect(first).toMatchObject({ type: 'state_complete', retainedCount: 0 });
      await it.return?.();
    });

    it('a_retained_watch_yields_current_values_then_state_complete_then_changes', async () => {
      const users = felix.cache('users');
      await users.put('ret-a', '1');
      await users.put('ret-b', '2');
      await users.put('ret-b', '3');
      await users.put('ret-c', 'gone');
      await users.delete('ret-c');
      const it = users.watch({ prefix: 'ret-' }, { retained: true })[Symbol.asyncIterator]();
      const head = await take(it, 3);
      expect(
        head.map((e) => [
          e.type,
          (e as { key?: string }).key,
          text((e as { value?: Uint8Array }).value),
        ]),
      ).toEqual([
        ['put', 'ret-a', '1'],
        ['put', 'ret-b', '3'],
        ['state_complete', undefined, undefined],
      ]);
      expect(head[2]).toMatchObject({ retainedCount: 2 });
      await users.put('ret-d', '4');
      expect((await it.next()).value).toMatchObject({ type: 'put', key: 'ret-d' });
      await it.return?.();
    });

    it('a_lagging_watch_is_ended_with_the_first_missed_offset', async () => {
      const alerts = felix.cache('alerts');
      const it = alerts.watch({ prefix: 'lag-' })[Symbol.asyncIterator]();
      let first!: Promise<IteratorResult<CacheWatchEvent>>;
      await openWatch(shared, () => {
        first = it.next();
      });
      // Large values fill the transport while the watcher reads nothing, so the broker's writer
      // stalls and the watcher's queue (8 changes) overflows: far more is written than fits.
      const big = new Uint8Array(256 * 1024).fill(1);
      for (let i = 0; i < 80; i++) await alerts.put(`lag-${i}`, big);
      const events: CacheWatchEvent[] = [(await first).value as CacheWatchEvent];
      while (events[events.length - 1]!.type !== 'lagged') events.push((await it.next()).value);
      const lagged = events.pop() as { type: 'lagged'; resumeFrom: number };
      const lastSeen = events[events.length - 1] as { offset: number };
      // Every write matched the prefix, so the first missed offset follows the last one delivered.
      expect(lagged.resumeFrom).toBe(lastSeen.offset + 1);
      // And the watch carries on from there without a gap.
      const after = (await it.next()).value as { type: string; offset: number };
      expect(after.offset).toBe(lagged.resumeFrom);
      await it.return?.();
    });

    // ---- consumer groups ----

    async function freshGroup(name: string, opts = {}) {
      const g = felix.group('jobs', name, { shard: 0, ...opts });
      await g.seek('latest');
      return g;
    }

    async function publishJobs(n: number, tag: string): Promise<number[]> {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await felix.publish('jobs', `${tag}-${i}`)).offset!);
      return out;
    }

    /** A group's scope as a raw request names it. */
    const rawGroup = (group: string) => ({
      tenant_id: 't1',
      namespace: 'default',
      stream: 'jobs',
      shard: 0,
      group,
    });

    /** A fresh group holding `n` new jobs from one poll, and its scope for raw requests. */
    async function heldJobs(name: string, n: number) {
      const g = await freshGroup(name);
      const offsets = await publishJobs(n, name);
      const held = await g.poll({ max: n, waitMs: 5_000 });
      expect(held.map((m) => m.offset)).toEqual(offsets);
      return { g, offsets, group: rawGroup(name) };
    }

    /** A raw session that offers every low feature, the extended word and `hi`. */
    async function extendedRaw(hi: number) {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const raw = await rawAuthed(conn, (0x0fff_ffff | FEATURE_EXTENDED) >>> 0, hi);
      return { conn, ...raw };
    }

    it('an_offset_in_flight_is_not_handed_out_again', async () => {
      const g = await freshGroup('inflight');
      const offsets = await publishJobs(2, 'inflight');
      const a = await g.poll({ max: 1, waitMs: 5_000 });
      expect(a.map((m) => m.offset)).toEqual([offsets[0]]);
      const b = await g.poll({ max: 4, waitMs: 0 });
      expect(b.map((m) => m.offset)).toEqual([offsets[1]]);
      expect(await g.poll({ max: 4, waitMs: 0 })).toEqual([]);
      await Promise.all([...a, ...b].map((m) => m.ack()));
    });

    it('a_lapsed_claim_is_handed_out_again', async () => {
      const g = await freshGroup('lapse');
      const [offset] = await publishJobs(1, 'lapse');
      const first = await g.poll({ max: 1, waitMs: 5_000, visibilityMs: 50 });
      expect(first[0]).toMatchObject({ offset, attempts: 1 });
      // Nobody settles it; a later poll gets it again once the claim lapses.
      const again = await g.poll({ max: 1, waitMs: 10_000 });
      expect(again[0]).toMatchObject({ offset, attempts: 2 });
      // The first delivery's claim no longer stands.
      await expect(first[0]!.nack()).rejects.toBeInstanceOf(StaleClaimError);
      await again[0]!.ack();
    });

    it('the_cursor_does_not_advance_over_a_gap', async () => {
      const g = await freshGroup('gap');
      const offsets = await publishJobs(3, 'gap');
      const msgs = await g.poll({ max: 3, waitMs: 5_000 });
      expect(msgs.map((m) => m.offset)).toEqual(offsets);
      await msgs[1]!.ack();
      await msgs[2]!.ack();
      expect((await g.describe()).committed).toBe(offsets[0]);
      await msgs[0]!.ack();
      expect((await g.describe()).committed).toBe(offsets[2]! + 1);
    });

    it('a_batched_ack_names_stale_offsets_and_finishes_the_rest', async () => {
      const g = await freshGroup('ack-batch');
      const offsets = await publishJobs(2, 'ack-batch');
      const old = await g.poll({ max: 2, waitMs: 5_000 });
      expect(old.map((m) => m.offset)).toEqual(offsets);
      // A seek voids both claims; the first record is handed out again, the second is not.
      await g.seek({ offset: offsets[0]! });
      const again = await g.poll({ max: 1, waitMs: 5_000 });
      expect(again.map((m) => m.offset)).toEqual([offsets[0]]);
      const batches = () =>
        metric(shared, /felix_broker_projection_requests_total\{type="group_ack_batch"\} (\d+)/);
      const before = await batches();
      // Both acks are made in one turn, so they travel as one group_ack_batch.
      const settled = await Promise.all(
        old.map((m) =>
          m.ack().then(
            () => 'acked',
            (err: unknown) => err,
          ),
        ),
      );
      expect(settled[0]).toBe('acked');
      expect(settled[1]).toBeInstanceOf(StaleClaimError);
      expect(await batches()).toBe(before + 1);
      expect((await g.describe()).committed).toBe(offsets[0]! + 1);
    });

    it('an_ack_batch_is_refused_unless_negotiated_and_plain_acks_still_serve', async () => {
      const { g, offsets, group } = await heldJobs('ack-batch-raw', 2);
      const plain = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const a = await rawAuthed(plain, 0x0fff_ffff);
      await a.stream.write(
        encodeMessage({ type: 'group_ack_batch', ...group, offsets: [offsets[0]!], request_id: 1 }),
      );
      expect(await a.next()).toMatchObject({ type: 'error', code: 'invalid_request' });
      await a.stream.write(
        encodeMessage({ type: 'group_ack', ...group, offset: offsets[0]!, request_id: 2 }),
      );
      expect(await a.next()).toMatchObject({ type: 'cache_ok', request_id: 2 });
      await plain.close();
      const b = await extendedRaw(FEATURE_HI_GROUP_ACK_BATCH);
      // One offset past the tail refuses the whole batch: the valid one is not settled either.
      await b.stream.write(
        encodeMessage({
          type: 'group_ack_batch',
          ...group,
          offsets: [offsets[1]!, 2 ** 50],
          request_id: 3,
        }),
      );
      expect(await b.next()).toMatchObject({ type: 'error', code: 'invalid_request' });
      expect((await g.describe()).committed).toBe(offsets[1]);
      await b.stream.write(
        encodeMessage({ type: 'group_ack_batch', ...group, offsets: [offsets[1]!], request_id: 4 }),
      );
      expect(await b.next()).toEqual({ type: 'group_acked', stale: [], request_id: 4 });
      expect((await g.describe()).committed).toBe(offsets[1]! + 1);
      await b.conn.close();
    });

    /** Requests of `type` the broker has counted. */
    const requests = (type: string) =>
      metric(
        shared,
        new RegExp(`felix_broker_projection_requests_total\\{type="${type}"\\} (\\d+)`),
      );

    it('a_batched_nack_names_stale_offsets_and_hands_the_rest_back', async () => {
      const g = await freshGroup('nack-batch');
      const offsets = await publishJobs(2, 'nack-batch');
      const [kept] = await g.poll({ max: 1, waitMs: 5_000 });
      const [lapsing] = await g.poll({ max: 1, waitMs: 5_000, visibilityMs: 50 });
      expect([kept?.offset, lapsing?.offset]).toEqual(offsets);
      // The second claim lapses and its record goes out again: the first delivery's claim is gone.
      const again = await g.poll({ max: 1, waitMs: 10_000 });
      expect(again.map((m) => [m.offset, m.attempts])).toEqual([[offsets[1], 2]]);
      const batchesBefore = await requests('group_nack_batch');
      const nacksBefore = await requests('group_nack');
      const settled = await Promise.all(
        g.handBack([kept!, lapsing!]).map((p) =>
          p.then(
            () => 'handed back',
            (err: unknown) => err,
          ),
        ),
      );
      expect(settled[0]).toBe('handed back');
      expect(settled[1]).toBeInstanceOf(StaleClaimError);
      expect(await requests('group_nack_batch')).toBe(batchesBefore + 1);
      expect(await requests('group_nack')).toBe(nacksBefore);
      // The record handed back goes out again; the other's second delivery still stands.
      const redelivered = await g.poll({ max: 4, waitMs: 5_000 });
      expect(redelivered.map((m) => [m.offset, m.attempts])).toEqual([[offsets[0], 2]]);
      await Promise.all([...redelivered, ...again].map((m) => m.ack()));
      expect((await g.describe()).committed).toBe(offsets[1]! + 1);
    });

    it('nacks_made_in_one_turn_go_as_one_batch_and_each_fails_as_its_own_nack_would', async () => {
      const g = await freshGroup('nack-turn');
      const offsets = await publishJobs(3, 'nack-turn');
      const held = await g.poll({ max: 2, waitMs: 5_000 });
      const [lapsing] = await g.poll({ max: 1, waitMs: 5_000, visibilityMs: 50 });
      expect([...held, lapsing].map((m) => m?.offset)).toEqual(offsets);
      // The third claim lapses and goes out again: its first delivery is no longer the one that
      // stands, which a single nack refuses as a fatal stale_claim.
      const again = await g.poll({ max: 1, waitMs: 10_000 });
      expect(again.map((m) => [m.offset, m.attempts])).toEqual([[offsets[2], 2]]);
      const single = await g.settle('group_nack', offsets[2]!, { attempts: 1 }).catch((e) => e);
      expect(single).toBeInstanceOf(StaleClaimError);
      const batchesBefore = await requests('group_nack_batch');
      const nacksBefore = await requests('group_nack');
      const settled = await Promise.all(
        [held[0]!, held[1]!, lapsing!].map((m) =>
          m.nack().then(
            () => 'handed back',
            (err: unknown) => err,
          ),
        ),
      );
      expect(settled.slice(0, 2)).toEqual(['handed back', 'handed back']);
      expect(settled[2]).toBeInstanceOf(StaleClaimError);
      expect((settled[2] as StaleClaimError).retry).toBe((single as StaleClaimError).retry);
      expect(await requests('group_nack_batch')).toBe(batchesBefore + 1);
      expect(await requests('group_nack')).toBe(nacksBefore);
      const redelivered = await g.poll({ max: 4, waitMs: 5_000 });
      expect(redelivered.map((m) => [m.offset, m.attempts])).toEqual([
        [offsets[0], 2],
        [offsets[1], 2],
      ]);
      await Promise.all([...redelivered, ...again].map((m) => m.ack()));
      expect((await g.describe()).committed).toBe(offsets[2]! + 1);
    });

    it('a_nack_batch_is_refused_unless_negotiated_and_a_bad_one_changes_nothing', async () => {
      const { g, offsets, group } = await heldJobs('nack-batch-raw', 2);
      const nackBatch = (request_id: number, offsets: number[], more = {}) =>
        encodeMessage({ type: 'group_nack_batch', ...group, offsets, request_id, ...more });
      const a = await extendedRaw(FEATURE_HI_GROUP_ACK_BATCH);
      await a.stream.write(nackBatch(1, [offsets[0]!]));
      expect(await a.next()).toMatchObject({ type: 'error', code: 'invalid_request' });
      await a.conn.close();
      const b = await extendedRaw(FEATURE_HI_GROUP_NACK_BATCH);
      // An empty list, one past the bound, an offset past the tail and an attempts list of
      // another length each refuse the whole batch: the valid offsets are not handed back.
      const bad = [
        nackBatch(2, []),
        nackBatch(
          3,
          Array.from({ length: 1001 }, () => offsets[0]!),
        ),
        nackBatch(4, [offsets[0]!, 2 ** 50]),
        nackBatch(5, offsets, { attempts: [1] }),
      ];
      for (const frame of bad) {
        await b.stream.write(frame);
        expect(await b.next()).toMatchObject({ type: 'error', code: 'invalid_request' });
      }
      expect(await g.describe()).toMatchObject({ inFlight: 2, owed: 0 });
      // The first goes back now; the second is delayed, so it stays in flight meanwhile.
      await b.stream.write(nackBatch(6, [offsets[0]!], { attempts: [1] }));
      expect(await b.next()).toEqual({ type: 'group_nacked', stale: [], request_id: 6 });
      await b.stream.write(nackBatch(7, [offsets[1]!], { attempts: [1], delay_ms: 600_000 }));
      expect(await b.next()).toEqual({ type: 'group_nacked', stale: [], request_id: 7 });
      expect(await g.describe()).toMatchObject({ inFlight: 1, owed: 1 });
      const again = await g.poll({ max: 4, waitMs: 0 });
      expect(again.map((m) => [m.offset, m.attempts])).toEqual([[offsets[0], 2]]);
      // Naming the first delivery again: its claim no longer stands, and another delivery's does
      // (`superseded`: a single nack would refuse it as fatal).
      await b.stream.write(nackBatch(8, [offsets[0]!], { attempts: [1] }));
      expect(await b.next()).toEqual({
        type: 'group_nacked',
        stale: [offsets[0]],
        superseded: [offsets[0]],
        request_id: 8,
      });
      await b.conn.close();
      await again[0]!.ack();
    });

    it('a_consume_loop_that_stops_hands_its_batch_back_in_one_request', async () => {
      const g = await freshGroup('nack-batch-loop');
      const offsets = await publishJobs(4, 'nack-batch-loop');
      const capped = () => metric(shared, /felix_group_polls_capped_total (\d+)/);
      const cappedBefore = await capped();
      const batchesBefore = await requests('group_nack_batch');
      const nacksBefore = await requests('group_nack');
      // The first poll takes all four (the group's in-flight cap), so the poll made ahead is
      // answered empty; only then does the loop stop, with three records never yielded.
      let first: GroupMessage | undefined;
      for await (const m of g.consume({ max: 4, waitMs: 0 })) {
        first = m;
        await waitFor(async () => (await capped()) > cappedBefore, 'the poll ahead is answered');
        break;
      }
      expect(first?.offset).toBe(offsets[0]);
      await waitFor(async () => (await g.describe()).owed === 3, 'the rest is handed back');
      expect(await requests('group_nack_batch')).toBe(batchesBefore + 1);
      expect(await requests('group_nack')).toBe(nacksBefore);
      const again = await g.poll({ max: 4, waitMs: 5_000 });
      expect(again.map((m) => [m.offset, m.attempts])).toEqual(offsets.slice(1).map((o) => [o, 2]));
      await Promise.all([first!, ...again].map((m) => m.ack()));
    });

    it('a_poll_is_answered_in_binary_only_when_the_client_offered_it', async () => {
      await freshGroup('binary-records');
      const offsets = await publishJobs(3, 'binary-records');
      const group = rawGroup('binary-records');
      const poll = (request_id: number) =>
        encodeMessage({
          type: 'group_poll',
          ...group,
          max_records: 1,
          wait_ms: 5_000,
          request_id,
          reclaim: false,
        });
      // Every low feature but RECORD_TIMESTAMPS (0x400_0000): records with times go as JSON.
      const low = ((0x0fff_ffff & ~0x0400_0000) | FEATURE_EXTENDED) >>> 0;
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      // Both the flag and the feature bit: the answer is a binary frame.
      const both = await rawAuthed(
        conn,
        low,
        FEATURE_HI_GROUP_RECORDS_BINARY,
        0x1fff | FLAG_BINARY_GROUP_RECORDS,
      );
      await both.stream.write(poll(1));
      const bin = (await both.next()) as {
        binary?: boolean;
        request_id: number;
        records: { offset: number; attempts: number; payload: Uint8Array }[];
      };
      expect(bin.binary).toBe(true);
      expect(bin.request_id).toBe(1);
      expect(bin.records.map((r) => [r.offset, r.attempts, text(r.payload)])).toEqual([
        [offsets[0], 1, 'binary-records-0'],
      ]);
      // The feature bit without the flag, and the flag without the feature bit: JSON.
      const noFlag = await rawAuthed(conn, low, FEATURE_HI_GROUP_RECORDS_BINARY);
      await noFlag.stream.write(poll(2));
      const a = (await noFlag.next()) as { binary?: boolean; records: { offset: number }[] };
      expect(a.binary).toBeUndefined();
      expect(a.records.map((r) => r.offset)).toEqual([offsets[1]]);
      const noBit = await rawAuthed(
        conn,
        0x0fff_ffff,
        undefined,
        0x1fff | FLAG_BINARY_GROUP_RECORDS,
      );
      await noBit.stream.write(poll(3));
      const b = (await noBit.next()) as { binary?: boolean; records: { offset: number }[] };
      expect(b.binary).toBeUndefined();
      expect(b.records.map((r) => r.offset)).toEqual([offsets[2]]);
      await conn.close();
    });

    it('owed_records_go_out_before_new_ones', async () => {
      const g = await freshGroup('owed');
      const offsets = await publishJobs(2, 'owed');
      const [first] = await g.poll({ max: 1, waitMs: 5_000 });
      await first!.nack();
      await publishJobs(1, 'owed-later');
      const next = await g.poll({ max: 2, waitMs: 0 });
      expect(next.map((m) => [m.offset, m.attempts])).toEqual([
        [offsets[0], 2],
        [offsets[1], 1],
      ]);
      await Promise.all(next.map((m) => m.ack()));
    });

    it('a_record_is_given_up_on_after_the_attempt_bound', async () => {
      const g = await freshGroup('poison');
      const [poison] = await publishJobs(1, 'poison');
      for (let attempt = 1; attempt <= 5; attempt++) {
        const [m] = await g.poll({ max: 1, waitMs: 5_000 });
        expect(m).toMatchObject({ offset: poison, attempts: attempt });
        await m!.nack();
      }
      const [after] = await publishJobs(1, 'poison-after');
      // The sixth hand-out would pass the bound: the record is a dead letter and the group moves on.
      const next = await g.poll({ max: 1, waitMs: 5_000 });
      expect(next.map((m) => m.offset)).toEqual([after]);
      expect(await g.deadLetters()).toEqual([poison]);
      await next[0]!.ack();
      expect((await g.describe()).committed).toBe(after! + 1);
    });

    it('a_waiting_poll_is_woken_by_a_publish', async () => {
      const g = await freshGroup('wake');
      // The poll may wait 30 s and the broker never re-checks on its own inside that (see
      // FELIX_GROUP_WAIT_RECHECK_MS above): only the publish's wake can answer it within 15 s.
      const waiting = g.poll({ max: 1, waitMs: 30_000 });
      const [offset] = await publishJobs(1, 'wake');
      const got = await withDeadline(waiting, 15_000, 'the publish to wake the waiting poll');
      expect(got.map((m) => m.offset)).toEqual([offset]);
      await got[0]!.ack();
    });

    it('a_group_at_its_in_flight_cap_gets_nothing_more', async () => {
      const g = await freshGroup('cap');
      await publishJobs(6, 'cap');
      const held = await g.poll({ max: 10, waitMs: 5_000 });
      expect(held).toHaveLength(4);
      expect(await g.poll({ max: 10, waitMs: 0 })).toEqual([]);
      expect((await g.describe()).inFlight).toBe(4);
      await Promise.all(held.map((m) => m.ack()));
      const rest = await g.poll({ max: 10, waitMs: 0 });
      expect(rest).toHaveLength(2);
      await Promise.all(rest.map((m) => m.ack()));
    });

    it('a_poll_at_the_cap_is_woken_by_an_ack', async () => {
      const g = await freshGroup('cap-wake');
      const offsets = await publishJobs(5, 'capwake');
      const held = await g.poll({ max: 4, waitMs: 5_000 });
      expect(held).toHaveLength(4);
      const waiting = g.poll({ max: 4, waitMs: 30_000 });
      await held[0]!.ack();
      const got = await withDeadline(waiting, 15_000, 'the ack to wake the poll at the cap');
      expect(got.map((m) => m.offset)).toEqual([offsets[4]]);
      await Promise.all([...held.slice(1), ...got].map((m) => m.ack()));
    });

    it('an_extend_keeps_a_claim_and_a_dead_letter_can_be_redriven_and_discarded', async () => {
      const g = await freshGroup('admin');
      const [a, b] = await publishJobs(2, 'admin');
      const msgs = await g.poll({ max: 2, waitMs: 5_000, visibilityMs: 60_000 });
      expect(await msgs[0]!.extend(120_000)).toBe(120_000);
      await msgs[0]!.deadLetter();
      await msgs[1]!.deadLetter();
      expect(await g.deadLetters()).toEqual([a, b]);
      await g.discard(b!);
      await g.redrive(a!);
      expect(await g.deadLetters()).toEqual([]);
      const [again] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(again).toMatchObject({ offset: a, attempts: 1 });
      await again!.ack();
      await expect(g.discard(b!)).rejects.toBeInstanceOf(InvalidRequestError);
      expect(await g.delete()).toBe(true);
      await expect(g.describe()).rejects.toBeInstanceOf(NotFoundError);
    });

    it('a_seek_voids_standing_claims_so_their_settles_are_stale', async () => {
      const g = await freshGroup('seek');
      const [offset] = await publishJobs(1, 'seek');
      const [m] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(m!.offset).toBe(offset);
      const pos = await g.seek('latest');
      expect(pos).toEqual({ offset: offset! + 1, moved: true });
      await expect(m!.extend(1_000)).rejects.toBeInstanceOf(StaleClaimError);
      expect(await g.seek('earliest', { ifNew: true })).toEqual({
        offset: offset! + 1,
        moved: false,
      });
      expect((await g.describe()).inFlight).toBe(0);
    });

    it('polls_reuse_their_stream_so_a_long_consume_loop_never_exhausts_the_connection', async () => {
      // The TLS multiplexer allows 4096 concurrent bidi streams per connection; a stream per
      // poll that was never retired used to end the connection after ~4096 polls.
      const g = await freshGroup('many-polls');
      const polls = transport === 'tls' ? 4200 : 1100; // QUIC: 1024 concurrent streams each way
      for (let i = 0; i < polls; i++) expect(await g.poll({ max: 1, waitMs: 0 })).toEqual([]);
      const [offset] = await publishJobs(1, 'many-polls');
      const [m] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(m!.offset).toBe(offset);
      await m!.ack();
    });

    // ---- named consumers (FEATURE_GROUP_CONSUMER) ----

    it('a_named_consumer_on_a_new_connection_gets_its_claims_back_at_once', async () => {
      const g = await freshGroup('reclaim', { consumer: 'worker-1' });
      const offsets = await publishJobs(2, 'reclaim');
      // Claims that would stand for a minute: only a reclaim can hand them out again now.
      const held = await g.poll({ max: 2, waitMs: 5_000, visibilityMs: 60_000 });
      expect(held.map((m) => m.offset)).toEqual(offsets);
      const anon = felix.group('jobs', 'reclaim', { shard: 0 });
      expect(await anon.poll({ max: 2, waitMs: 0 })).toEqual([]);
      // The same worker, restarted: a new connection under the same name.
      const restarted = await client(shared, transport);
      try {
        const again = await restarted
          .group('jobs', 'reclaim', { shard: 0, consumer: 'worker-1' })
          .poll({ max: 4, waitMs: 0 });
        expect(again.map((m) => [m.offset, m.attempts])).toEqual(offsets.map((o) => [o, 2]));
        // The first delivery's claims no longer stand.
        await expect(held[0]!.nack()).rejects.toBeInstanceOf(StaleClaimError);
        await Promise.all(again.map((m) => m.ack()));
        expect((await g.describe()).committed).toBe(offsets[1]! + 1);
      } finally {
        await restarted.close();
      }
    });

    it('a_reclaim_takes_only_its_own_names_claims', async () => {
      const mine = await freshGroup('reclaim-own', { consumer: 'w-a' });
      const [a, b] = await publishJobs(2, 'reclaim-own');
      const [ma] = await mine.poll({ max: 1, waitMs: 5_000, visibilityMs: 60_000 });
      const theirs = felix.group('jobs', 'reclaim-own', { shard: 0, consumer: 'w-b' });
      const [mb] = await theirs.poll({ max: 1, waitMs: 5_000, visibilityMs: 60_000 });
      expect([ma!.offset, mb!.offset]).toEqual([a, b]);
      const other = await client(shared, transport);
      try {
        const got = await other
          .group('jobs', 'reclaim-own', { shard: 0, consumer: 'w-a' })
          .poll({ max: 4, waitMs: 0 });
        expect(got.map((m) => m.offset)).toEqual([a]);
        await got[0]!.ack();
        await mb!.ack(); // w-b's claim was left alone
      } finally {
        await other.close();
      }
    });

    it('reclaimed_records_beyond_one_poll_go_to_the_reclaiming_connection_first', async () => {
      const g = await freshGroup('reclaim-rest', { consumer: 'w-r' });
      const offsets = await publishJobs(3, 'reclaim-rest');
      const held = await g.poll({ max: 3, waitMs: 5_000, visibilityMs: 60_000 });
      expect(held).toHaveLength(3);
      const [fresh] = await publishJobs(1, 'reclaim-rest-new');
      const other = await client(shared, transport);
      try {
        const og = other.group('jobs', 'reclaim-rest', { shard: 0, consumer: 'w-r' });
        const first = await og.poll({ max: 2, waitMs: 0 });
        expect(first.map((m) => m.offset)).toEqual(offsets.slice(0, 2));
        // The group is at its cap of 4 with the new record not yet handed out; the third
        // reclaimed record still comes, ahead of the new one, then the new one.
        const second = await og.poll({ max: 4, waitMs: 0 });
        expect(second.map((m) => [m.offset, m.attempts])).toEqual([
          [offsets[2], 2],
          [fresh, 1],
        ]);
        await Promise.all([...first, ...second].map((m) => m.ack()));
      } finally {
        await other.close();
      }
    });

    it('a_consumer_name_is_checked_and_reclaim_needs_one', async () => {
      expect(() => felix.group('jobs', 'names', { consumer: '' })).toThrow(InvalidArgumentError);
      expect(() => felix.group('jobs', 'names', { consumer: 'x'.repeat(129) })).toThrow(
        InvalidArgumentError,
      );
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const { stream, next } = await rawAuthed(conn, 0x0fff_ffff);
      const group = {
        tenant_id: 't1',
        namespace: 'default',
        stream: 'jobs',
        shard: 0,
        group: 'names',
        max_records: 1,
        wait_ms: 0,
      };
      const cases: Array<[Parameters<typeof encodeMessage>[0], string]> = [
        [
          { type: 'group_poll', ...group, request_id: 1, reclaim: true },
          'reclaim_without_consumer',
        ],
        [
          { type: 'group_poll', ...group, request_id: 2, reclaim: false, consumer: 'é'.repeat(65) },
          'a consumer name',
        ],
      ];
      for (const [msg, words] of cases) {
        await stream.write(encodeMessage(msg));
        const answer = (await next()) as { type: string; code?: string; message?: string };
        expect(answer).toMatchObject({ type: 'error', code: 'invalid_request' });
        if (words !== 'reclaim_without_consumer') expect(answer.message).toContain(words);
      }
      await stream.write(
        encodeMessage({
          type: 'group_poll',
          ...group,
          request_id: 3,
          reclaim: false,
          consumer: 'ok',
        }),
      );
      expect(await next()).toMatchObject({ type: 'group_records', request_id: 3 });
      await conn.close();
    });

    it('a_group_on_an_in_memory_stream_is_refused', async () => {
      await expect(felix.group('memjobs', 'x').poll({ waitMs: 0 })).rejects.toBeInstanceOf(
        InvalidRequestError,
      );
    });
  });
}

describe('a consumer group behind retention', () => {
  it('a_record_after_a_retention_skip_reports_how_many_were_skipped', async () => {
    const dir = await tempDir();
    const broker = await startBroker({
      yaml: `
durable: { segment_bytes: 4096, retention_check_interval_ms: 50 }
streams:
  - { tenant: t1, name: trimmed, durable: true, fsync: none, retention: { max_bytes: 8192 } }
`,
      dir: dir.path,
      durable: true,
    });
    const felix = await client(broker);
    try {
      const g = felix.group('trimmed', 'behind', { shard: 0 });
      await g.seek('earliest');
      const first = (await felix.publish('trimmed', 'first')).offset;
      const [m] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(m).toMatchObject({ offset: first, skippedBefore: 0 });
      await m!.ack();
      // Publish until retention has removed records the group never reached.
      const payload = new Uint8Array(512).fill(7);
      const next = first! + 1;
      const available = await waitFor(
        async () => {
          await felix.publishBatch(
            'trimmed',
            Array.from({ length: 10 }, () => payload),
          );
          const it = felix.subscribe('trimmed', { from: next, shard: 0 })[Symbol.asyncIterator]();
          try {
            await it.next();
            await it.return?.();
            return null;
          } catch (e) {
            return e instanceof CursorTooOldError ? e.available : null;
          }
        },
        'retention to trim past the group',
        20_000,
      );
      const [after] = await g.poll({ max: 1, waitMs: 5_000 });
      expect(after!.offset).toBeGreaterThanOrEqual(available);
      expect(after!.skippedBefore).toBe(after!.offset - next);
      expect(after!.skippedBefore).toBeGreaterThan(0);
      await after!.ack();
      const [later] = await g.poll({ max: 1, waitMs: 5_000 });
      // Retention may trim once more after the last publish (its pass runs every 50 ms): what
      // it removed since is reported on `later`, and nothing is reported twice.
      expect(later!.offset).toBe(after!.offset + 1 + later!.skippedBefore);
      expect(await metric(broker, /^felix_group_records_skipped_total (\d+)/m)).toBe(
        after!.skippedBefore + later!.skippedBefore,
      );
    } finally {
      await felix.close();
      await broker.stop();
      await dir.cleanup();
    }
  });
});

describe('broker projections across restarts', () => {
  it('a_cache_survives_a_broker_restart', async () => {
    await acrossRestart(
      {},
      async (f) => {
        await f.cache('users').put('keep', 'kept');
        await f.cache('users').put('drop', 'x');
        await f.cache('users').delete('drop');
      },
      async (f) => {
        expect(text(await f.cache('users').get('keep'))).toBe('kept');
        expect(await f.cache('users').get('drop')).toBeUndefined();
      },
      'kill',
    );
  });

  it('a_counter_survives_a_restart', async () => {
    await acrossRestart(
      {},
      async (f) => {
        await f.counter('users').add('visits', 40n);
        await f.counter('users').add('visits', 2n);
      },
      async (f) => {
        expect(await f.counter('users').get('visits')).toBe(42n);
        expect(await f.counter('users').add('visits', 1n)).toBe(43n);
      },
      'kill',
    );
  });

  it('a_group_position_survives_a_broker_restart', async () => {
    let offsets: number[] = [];
    await acrossRestart(
      {},
      async (f) => {
        for (let i = 0; i < 3; i++) offsets.push((await f.publish('jobs', `p${i}`)).offset!);
        const g = f.group('jobs', 'restart');
        const msgs = await g.poll({ max: 3, waitMs: 5_000 });
        await msgs[0]!.ack();
        await msgs[1]!.ack();
        // msgs[2] stays in flight: in-memory state, gone with the process.
      },
      async (f) => {
        const g = f.group('jobs', 'restart');
        expect((await g.describe()).committed).toBe(offsets[2]);
        const again = await g.poll({ max: 3, waitMs: 5_000 });
        expect(again.map((m) => m.offset)).toEqual([offsets[2]]);
      },
      'kill',
    );
    offsets = [];
  });

  it('a_redriven_record_is_still_owed_after_a_restart', async () => {
    let target = -1;
    await acrossRestart(
      {},
      async (f) => {
        target = (await f.publish('jobs', 'redrive-me')).offset!;
        await f.publish('jobs', 'other');
        const g = f.group('jobs', 'redrive');
        const [m, other] = await g.poll({ max: 2, waitMs: 5_000 });
        await m!.deadLetter();
        await other!.ack();
        await g.redrive(target);
      },
      async (f) => {
        const g = f.group('jobs', 'redrive');
        const got = await g.poll({ max: 2, waitMs: 5_000 });
        expect(got.map((m) => m.offset)).toEqual([target]);
      },
    );
  });

  it('a_finished_redrive_is_not_redelivered_after_a_restart', async () => {
    let after = -1;
    await acrossRestart(
      {},
      async (f) => {
        await f.publish('jobs', 'finish-me');
        const g = f.group('jobs', 'finished');
        const [m] = await g.poll({ max: 1, waitMs: 5_000 });
        await m!.deadLetter();
        await g.redrive(m!.offset);
        const [again] = await g.poll({ max: 1, waitMs: 5_000 });
        expect(again!.offset).toBe(m!.offset);
        await again!.ack();
      },
      async (f) => {
        after = (await f.publish('jobs', 'next')).offset!;
        const g = f.group('jobs', 'finished');
        const got = await g.poll({ max: 2, waitMs: 5_000 });
        expect(got.map((m) => m.offset)).toEqual([after]);
        expect(await g.deadLetters()).toEqual([]);
      },
    );
  });

  it('an_in_memory_broker_serves_caches_but_not_counters_or_groups', async () => {
    const dir = await tempDir();
    const broker = await startBroker({
      yaml: 'caches:\n  - { tenant: t1, name: users }\nstreams:\n  - { tenant: t1, name: memjobs }\n',
      dir: dir.path,
    });
    const f = await client(broker);
    try {
      await f.cache('users').put('k', 'v', { ttlMs: 60_000 });
      expect(text(await f.cache('users').get('k'))).toBe('v');
      expect(text(await f.cache('users').delete('k'))).toBe('v');
      await expect(f.counter('users').add('k', 1n)).rejects.toBeInstanceOf(FeatureUnsupportedError);
      await expect(f.group('memjobs', 'g').poll()).rejects.toBeInstanceOf(FeatureUnsupportedError);
    } finally {
      await f.close();
      await broker.stop();
      await dir.cleanup();
    }
  });

  it('a_watch_resumes_by_offset_after_the_broker_restarts', async () => {
    const dir = await tempDir();
    const spec: BrokerSpec = { yaml: YAML, dir: dir.path, durable: true };
    let broker = await startBroker(spec);
    const f = await client(broker);
    try {
      const alerts = f.cache('alerts');
      const it = alerts.watch({ prefix: 'rs-' })[Symbol.asyncIterator]();
      const first = it.next();
      await waitFor(async () => (await metric(broker, WATCHES)) >= 1, 'a watch');
      for (let i = 0; i < 3; i++) await alerts.put(`rs-${i}`, `v${i}`);
      const before = [(await first).value as CacheWatchEvent, ...(await take(it, 2))];
      await broker.kill();
      broker = await startBroker({ ...spec, port: broker.port, httpPort: broker.httpPort });
      // The client reconnects on its own; these writes land while the watch is away or back.
      await alerts.put('rs-3', 'v3');
      await alerts.delete('rs-0');
      const after = await take(it, 3);
      await it.return?.();
      expect(after[0]).toMatchObject({
        type: 'resumed',
        resumeFrom: (before[2] as { offset: number }).offset + 1,
      });
      const seen = [...before, ...after.slice(1)].map(
        (e) => `${e.type}:${(e as { key: string }).key}`,
      );
      expect(seen).toEqual(['put:rs-0', 'put:rs-1', 'put:rs-2', 'put:rs-3', 'delete:rs-0']);
    } finally {
      await f.close();
      await broker.stop();
      await dir.cleanup();
    }
  });

  it('a_waiting_poll_is_answered_when_the_broker_drains', async () => {
    const dir = await tempDir();
    const broker = await startBroker({ yaml: YAML, dir: dir.path, durable: true });
    const f = await client(broker);
    try {
      const g = f.group('jobs', 'drain');
      await g.seek('latest');
      const waiting = g.poll({ max: 1, waitMs: 30_000 });
      await waitFor(
        async () =>
          (await metric(
            broker,
            /felix_broker_projection_requests_total\{type="group_poll"\} (\d+)/,
          )) >= 1,
        'the poll to reach the broker',
      );
      const stopping = broker.stop();
      expect(await waiting).toEqual([]);
      await stopping;
    } finally {
      await f.close();
      await dir.cleanup();
    }
  });
});
