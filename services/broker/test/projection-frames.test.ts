// Goal: the broker answers cache, counter, watch and group requests that the client never sends
// (or sends only after negotiating) as specified, over both transports: bad requests get typed
// errors and the broker keeps serving, batched settles are refused unless negotiated and a bad
// batch changes nothing, a group poll is answered in binary only when the client offered it (and
// as JSON when it carries record times), and consumer names are checked.
// Method: a real felix-broker process per transport, and one over TLS for the record times
// (@felix/testing-e2e starts them by path);
// @felix/client sets up state (groups holding records), raw authenticated streams send the
// requests under test and read every answer frame.
import { type FelixClient, InvalidArgumentError, connect } from '@felix/client';
import {
  type BrokerProcess,
  durableBrokerForSuite,
  rawAuthed,
  startBroker,
} from '@felix/testing-e2e';
import { take, tempDir } from '@felix/testing-harness';
import { dial } from '@felix/transport';
import {
  FEATURE_CONSUMER_GROUP,
  FEATURE_EXTENDED,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_NACK_BATCH,
  FEATURE_HI_GROUP_RELEASE,
  FEATURE_HI_GROUP_RECORDS_BINARY,
  FEATURE_RECORD_TIMESTAMPS,
  FLAG_BINARY_GROUP_RECORDS,
  encodeMessage,
} from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const YAML = `
streams:
  - { tenant: t1, name: jobs, durable: true, fsync: onCommit }
  - { tenant: t1, name: memjobs }
  - { tenant: t1, name: grouped, durable: true, fsync: onCommit }
caches:
  - { tenant: t1, name: users }
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

async function startProjectionsBroker(): Promise<{
  broker: BrokerProcess;
  cleanup: () => Promise<void>;
}> {
  const dir = await tempDir();
  const broker = await startBroker({
    yaml: YAML,
    dir: dir.path,
    durable: true,
    env: { FELIX_GROUP_MAX_IN_FLIGHT: '4', FELIX_GROUP_WAIT_RECHECK_MS: '600000' },
  });
  return { broker, cleanup: dir.cleanup };
}

for (const transport of ['tls', 'quic'] as const) {
  describe(`raw cache and group requests over ${transport}`, () => {
    let shared: BrokerProcess;
    let felix: FelixClient;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ broker: shared, cleanup } = await startProjectionsBroker());
      felix = await client(shared, transport);
    });
    afterAll(async () => {
      await felix?.close();
      await shared?.stop();
      await cleanup?.();
    });

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

    it('a_release_names_its_deliveries_takes_no_delay_and_gives_back_their_count', async () => {
      const { g, offsets, group } = await heldJobs('release-raw', 1);
      const b = await extendedRaw(FEATURE_HI_GROUP_NACK_BATCH | FEATURE_HI_GROUP_RELEASE);
      const release = (request_id: number, more = {}) =>
        encodeMessage({
          type: 'group_nack_batch',
          ...group,
          offsets: [offsets[0]!],
          request_id,
          release: true,
          ...more,
        });
      // Without the delivery it releases, a raw client could keep a record under its attempt
      // bound for ever by releasing another consumer's claim; with a delay it is not a release.
      for (const frame of [release(1), release(2, { attempts: [1], delay_ms: 10 })]) {
        await b.stream.write(frame);
        expect(await b.next()).toMatchObject({ type: 'error', code: 'invalid_request' });
      }
      await b.stream.write(release(3, { attempts: [1] }));
      expect(await b.next()).toEqual({ type: 'group_nacked', stale: [], request_id: 3 });
      const again = await g.poll({ max: 1, waitMs: 0 });
      expect(again.map((m) => [m.offset, m.attempts])).toEqual([[offsets[0], 1]]);
      await again[0]!.ack();
      await b.conn.close();
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
  });
}

describe('a group poll with record times', () => {
  const suite = durableBrokerForSuite(YAML);

  it('a_poll_that_carries_record_times_is_answered_as_json_even_when_binary_was_offered', async () => {
    const felix = await client(suite.broker);
    const sent = await felix.publish('grouped', 'raw');
    await felix.close();
    const conn = await dial(suite.broker.url('tls'), { fingerprint: suite.broker.fingerprint });
    const poll = (group: string) =>
      encodeMessage({
        type: 'group_poll',
        tenant_id: 't1',
        namespace: 'default',
        stream: 'grouped',
        shard: 0,
        group,
        max_records: 1000,
        wait_ms: 1_000,
        request_id: 1,
        reclaim: false,
      });
    const binary = 0x1fff | FLAG_BINARY_GROUP_RECORDS;
    const features = (FEATURE_CONSUMER_GROUP | FEATURE_EXTENDED) >>> 0;
    // The binary layout offered, and record times too: the answer goes as JSON with the times.
    const timed = await rawAuthed(
      conn,
      (features | FEATURE_RECORD_TIMESTAMPS) >>> 0,
      FEATURE_HI_GROUP_RECORDS_BINARY,
      binary,
    );
    await timed.stream.write(poll('raw-timed'));
    const json = (await timed.next()) as {
      binary?: boolean;
      records: { offset: number; timestamp_micros?: number }[];
    };
    expect(json.binary).toBeUndefined();
    const last = json.records[json.records.length - 1]!;
    expect(last.offset).toBe(sent.offset);
    expect(last.timestamp_micros).toBe(await recordTime(sent.offset!));
    // Without the feature: binary, and no times.
    const plain = await rawAuthed(conn, features, FEATURE_HI_GROUP_RECORDS_BINARY, binary);
    await plain.stream.write(poll('raw-plain'));
    const bin = (await plain.next()) as { binary?: boolean; records: object[] };
    expect(bin.binary).toBe(true);
    expect(bin.records.every((r) => !('timestamp_micros' in r))).toBe(true);
    await conn.close();
  });

  /** The append time of one record of 'grouped', as a timestamped subscription shows it. */
  async function recordTime(offset: number): Promise<number> {
    const felix = await client(suite.broker);
    const sub = felix
      .subscribe('grouped', { from: offset, shard: 0, timestamps: true })
      [Symbol.asyncIterator]();
    const [ev] = await take(sub, 1);
    await sub.return?.();
    await felix.close();
    return ev!.timestampMicros!;
  }
});
