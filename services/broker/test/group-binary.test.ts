// Goal: the binary group exchange (flag word 0x8002, FEATURE_HI_GROUP_BINARY) is used only when
// negotiated: a client that offered the bit has its binary polls and ack batches served exactly
// as their JSON forms (the same records, the same stale offsets) and its ack batches answered in
// binary, whichever form they came in; refusals stay JSON errors; a client that did not offer it
// gets JSON and a binary request from it ends its stream with a typed refusal.
// Method: a real durable broker over TLS; @felix/client publishes the jobs; raw request streams
// that offer the bit or not write both forms and read every answer frame.
import { type FelixClient, connect } from '@felix/client';
import { type BrokerProcess, rawAuthed, startBroker } from '@felix/testing-e2e';
import { tempDir } from '@felix/testing-harness';
import { type Connection, dial } from '@felix/transport';
import {
  FEATURE_EXTENDED,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_BINARY,
  FEATURE_HI_GROUP_RECORDS_BINARY,
  FLAG_BINARY_GROUP_RECORDS,
  encodeGroupAck,
  encodeGroupPoll,
  encodeMessage,
  groupScopeBytes,
} from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const YAML = `
streams:
  - { tenant: t1, name: jobs, durable: true, group_cursor_fsync: periodic }
`;

/** Every low feature but RECORD_TIMESTAMPS (records with times go as JSON), and the marker. */
const LOW = ((0x0fff_ffff & ~0x0400_0000) | FEATURE_EXTENDED) >>> 0;
const HI = FEATURE_HI_GROUP_ACK_BATCH | FEATURE_HI_GROUP_RECORDS_BINARY;
const FLAGS = 0x1fff | FLAG_BINARY_GROUP_RECORDS;
const one = { maxRecords: 1, waitMs: 5_000, reclaim: false };
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe('binary group exchange', () => {
  let broker: BrokerProcess;
  let felix: FelixClient;
  let conn: Connection;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml: YAML, dir: dir.path, durable: true });
    felix = await connect({
      servers: [broker.url('tls')],
      tenant: 't1',
      tls: { fingerprint: broker.fingerprint },
    });
    conn = await dial(broker.url('tls'), { fingerprint: broker.fingerprint });
  });
  afterAll(async () => {
    await conn?.close();
    await felix?.close();
    await broker?.stop();
    await cleanup?.();
  });

  /** A fresh group at the tail, then `n` new jobs; their offsets. */
  async function jobs(group: string, n: number): Promise<number[]> {
    await felix.group('jobs', group, { shard: 0 }).seek('latest');
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await felix.publish('jobs', `${group}-${i}`)).offset!);
    return out;
  }

  it('a_client_that_negotiated_binary_group_requests_has_its_polls_and_acks_served_in_binary', async () => {
    const offsets = await jobs('bin', 3);
    const scope = groupScopeBytes('t1', 'default', 'jobs', 0, 'bin');
    const { stream, next } = await rawAuthed(conn, LOW, HI | FEATURE_HI_GROUP_BINARY, FLAGS);
    await stream.write(encodeGroupPoll(scope, { ...one, maxRecords: 2 }, 1));
    const got = (await next()) as {
      binary: boolean;
      records: { offset: number; payload: Uint8Array }[];
    };
    expect(got.binary).toBe(true);
    expect(got.records.map((r) => [r.offset, text(r.payload)])).toEqual([
      [offsets[0], 'bin-0'],
      [offsets[1], 'bin-1'],
    ]);
    await stream.write(encodeGroupAck(scope, [offsets[0]!], 2));
    expect(await next()).toStrictEqual({
      type: 'group_acked',
      stale: [],
      request_id: 2,
      binary: true,
    });
    // One not handed out yet: no claim stands on it, named stale as the JSON answer would.
    await stream.write(encodeGroupAck(scope, [offsets[1]!, offsets[2]!], 3));
    expect(await next()).toStrictEqual({
      type: 'group_acked',
      stale: [offsets[2]],
      request_id: 3,
      binary: true,
    });
    // A JSON ack batch on the same stream is answered in binary too: the answer follows
    // negotiation.
    await stream.write(encodeGroupPoll(scope, one, 4));
    expect(await next()).toMatchObject({ records: [{ offset: offsets[2] }] });
    const where = { tenant_id: 't1', namespace: 'default', stream: 'jobs', shard: 0, group: 'bin' };
    await stream.write(
      encodeMessage({ type: 'group_ack_batch', ...where, offsets: [offsets[2]!], request_id: 5 }),
    );
    expect(await next()).toStrictEqual({
      type: 'group_acked',
      stale: [],
      request_id: 5,
      binary: true,
    });
    // A refusal stays a JSON error and the stream goes on serving.
    await stream.write(encodeGroupPoll(groupScopeBytes('t1', 'default', 'jobs', 9, 'bin'), one, 6));
    expect(await next()).toMatchObject({ type: 'error', code: 'invalid_request' });
    await stream.write(encodeGroupAck(scope, [], 7));
    expect(await next()).toMatchObject({ type: 'error', code: 'invalid_request' });
    expect(await felix.group('jobs', 'bin', { shard: 0 }).describe()).toMatchObject({
      inFlight: 0,
    });
    expect(await Promise.all([next(), stream.end()])).toEqual([null, undefined]);
  });

  it('a_client_that_did_not_negotiate_binary_group_requests_gets_json_and_its_binary_request_is_refused', async () => {
    const offsets = await jobs('json', 1);
    const where = {
      tenant_id: 't1',
      namespace: 'default',
      stream: 'jobs',
      shard: 0,
      group: 'json',
    };
    const { stream, next } = await rawAuthed(conn, LOW, HI, FLAGS);
    await stream.write(
      encodeMessage({
        type: 'group_poll',
        ...where,
        max_records: 1,
        wait_ms: 5_000,
        request_id: 1,
        reclaim: false,
      }),
    );
    expect(await next()).toMatchObject({ binary: true, records: [{ offset: offsets[0] }] });
    await stream.write(
      encodeMessage({ type: 'group_ack_batch', ...where, offsets: [offsets[0]!], request_id: 2 }),
    );
    expect(await next()).toStrictEqual({ type: 'group_acked', stale: [], request_id: 2 });
    const scope = groupScopeBytes('t1', 'default', 'jobs', 0, 'json');
    await stream.write(encodeGroupAck(scope, [offsets[0]!], 3));
    expect(await next()).toMatchObject({
      type: 'error',
      message: 'binary group frames were not negotiated',
      code: 'invalid_request',
    });
    expect(await next()).toBeNull();
  });
});
