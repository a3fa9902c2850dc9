// Goal: a group's polls and ack batches go in binary (flag word 0x8002) only on a connection that
// negotiated FEATURE_HI_GROUP_BINARY, and as JSON otherwise, naming the same group, options and
// offsets; an ack batch's answer is read in either form (and a refusal by the general decoder).
// Method: a Group over a stand-in host whose connection records what is written and answers
// each request as the test says; the frames are decoded with @felix/wire.
import {
  FEATURE_CONSUMER_GROUP,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_BINARY,
  FLAG_BINARY_GROUP,
  FieldRangeError,
  GroupFrameReader,
  type Message,
  decodeFrame,
  decodeMessage,
  encodeGroupAcked,
  encodeMessage,
} from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { Group } from '../src/projections/group.js';
import type { ProjectionHost } from '../src/projections/host.js';
import type { BrokerConnection } from '../src/protocol/broker-connection.js';
import type { InFrame } from '../src/protocol/frame-stream.js';
import type { Prepared } from '../src/protocol/request-lane.js';
import { REQUEST_TIMEOUT_MS_DEFAULT } from '../src/limits.js';
import { CheckTicks } from '../src/util/check-ticks.js';

/** A stand-in connection: polls answered with one record, ack batches by `ackAnswer`. */
function standIn(
  featuresHi: number,
  ackAnswer: (rid: number) => Uint8Array,
  name = 'workers',
  stream = 'jobs',
) {
  const polls: Uint8Array[] = [];
  const acks: Uint8Array[] = [];
  const turn: Array<() => void> = [];
  const bc = {
    server: 'stand-in',
    scope: { tenant: 't1', namespace: 'default' },
    negotiated: { flags: 0, features: FEATURE_CONSUMER_GROUP, featuresHi, window: 1 },
    // The connection's check of overdue answers, which no test here runs.
    ticks: new CheckTicks(),
    requestTimeoutMs: REQUEST_TIMEOUT_MS_DEFAULT,
    watchDue: () => undefined,
    unwatchDue: () => undefined,
    turn: {
      atTurnEnd: (f: () => void) => {
        turn.push(f);
        queueMicrotask(() => turn.shift()?.());
      },
    },
    openStream: async () => {
      let onFrame: (f: InFrame) => void = () => undefined;
      return {
        stream: {
          // Each poll is answered with one record, after its write (as over a connection).
          write: async (b: Uint8Array) => {
            polls.push(b);
            const rid = polls.length;
            const records = [
              { offset: 40 + rid, payload: new Uint8Array([rid]), attempts: 1, skipped_before: 0 },
            ];
            const msg: Message = { type: 'group_records', records, request_id: rid };
            queueMicrotask(() => onFrame({ flags: 0, payload: payloadOf(encodeMessage(msg)) }));
          },
          reset: () => undefined,
          end: async () => undefined,
        },
        frames: {
          forEachFrame: (each: (f: InFrame) => void) => {
            onFrame = each;
          },
          release: async () => undefined,
        },
      };
    },
    requests: {
      requestPrepared(prepare: (id: number) => Prepared<unknown>) {
        const rid = acks.length + 1;
        const p = prepare(rid);
        acks.push(p.bytes);
        const answer = decodeFrame(ackAnswer(rid));
        const msg = p.quick?.(answer.payload, answer.flags) ?? decodeMessage(answer.payload);
        // As the request lane: an error answer rejects, else the request resolves with `finish`.
        if (msg.type === 'error') return Promise.reject(new Error(msg.message));
        try {
          return Promise.resolve(p.finish === undefined ? msg : p.finish(msg));
        } catch (err) {
          return Promise.reject(err);
        }
      },
    },
  } as unknown as BrokerConnection;
  const host = { connection: async () => bc, live: () => bc, closed: false } as ProjectionHost;
  return { group: new Group(host, stream, name, { shard: 2 }), polls, acks };
}

function payloadOf(frame: Uint8Array): Uint8Array {
  return decodeFrame(frame).payload;
}

/** What a request frame asks, whichever form it came in. */
function read(frame: Uint8Array): Message {
  const f = decodeFrame(frame);
  return f.flags === FLAG_BINARY_GROUP
    ? new GroupFrameReader().request(f.payload)
    : decodeMessage(f.payload);
}

const ackedJson = (rid: number) =>
  encodeMessage({ type: 'group_acked', stale: [], request_id: rid });

describe('group requests in binary', () => {
  it('a_group_polls_and_acks_in_binary_only_on_a_connection_that_negotiated_it', async () => {
    for (const binary of [false, true]) {
      const hi = FEATURE_HI_GROUP_ACK_BATCH | (binary ? FEATURE_HI_GROUP_BINARY : 0);
      const answer = binary ? (rid: number) => encodeGroupAcked(rid, []) : ackedJson;
      const { group, polls, acks } = standIn(hi, answer);
      const [m] = await group.poll({ max: 1, waitMs: 250 });
      await m!.ack();
      const flags = [...polls, ...acks].map((b) => decodeFrame(b).flags);
      expect(flags).toEqual(binary ? [FLAG_BINARY_GROUP, FLAG_BINARY_GROUP] : [0, 0]);
      const where = {
        tenant_id: 't1',
        namespace: 'default',
        stream: 'jobs',
        shard: 2,
        group: 'workers',
      };
      expect(read(polls[0]!)).toStrictEqual({
        type: 'group_poll',
        ...where,
        max_records: 1,
        wait_ms: 250,
        request_id: 1,
        reclaim: false,
      });
      expect(read(acks[0]!)).toStrictEqual({
        type: 'group_ack_batch',
        ...where,
        offsets: [m!.offset],
        request_id: 1,
      });
    }
  });

  it('an_ack_batch_answer_is_read_in_binary_or_json_and_a_stale_offset_rejects_its_ack', async () => {
    const stale = (rid: number) => encodeGroupAcked(rid, [41]);
    const { group } = standIn(FEATURE_HI_GROUP_ACK_BATCH | FEATURE_HI_GROUP_BINARY, stale);
    const [m] = await group.poll({ max: 1 });
    await expect(m!.ack()).rejects.toMatchObject({ brokerCode: 'stale_claim' });
    // A connection that negotiated it still reads a JSON refusal through the general decoder.
    const refused = (_rid: number) =>
      encodeMessage({ type: 'error', code: 'invalid_request', message: 'no' });
    const other = standIn(FEATURE_HI_GROUP_ACK_BATCH | FEATURE_HI_GROUP_BINARY, refused);
    const [n] = await other.group.poll({ max: 1 });
    await expect(n!.ack()).rejects.toThrow();
  });

  it('an_ack_whose_group_scope_the_binary_layout_cannot_carry_rejects_instead_of_throwing', async () => {
    const hi = FEATURE_HI_GROUP_ACK_BATCH | FEATURE_HI_GROUP_BINARY;
    // A stream name past the layout's u16 length (a group name that long is refused at
    // `felix.group()` now).
    const long = 'j'.repeat(70_000);
    const { group, acks } = standIn(hi, (rid) => encodeGroupAcked(rid, []), 'workers', long);
    await expect(group.poll({ max: 1 })).rejects.toBeInstanceOf(FieldRangeError);
    await expect(group.ack(5)).rejects.toBeInstanceOf(FieldRangeError);
    expect(acks).toEqual([]);
  });
});
