// Goal: the binary group exchange (flag word 0x8002, a Felix extension) carries a poll, an ack
// batch and its answer exactly as their JSON forms decode, refuses a count beyond the bytes left
// before it allocates, reuses a stream's scope only while its bytes repeat, and throws nothing
// but WireErrors on any bytes.
// Method: encode and decode each kind against decodeMessage of the JSON form; hand-edited
// payloads; fast-check over arbitrary, mutated and cut frames.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FLAG_BINARY_GROUP,
  FieldRangeError,
  GroupFrameReader,
  InvalidEnumError,
  InvalidUtf8Error,
  type Message,
  TrailingBytesError,
  TruncatedError,
  WireError,
  decodeFrame,
  decodeFramePayload,
  decodeGroupAcked,
  decodeMessage,
  encodeGroupAck,
  encodeGroupAcked,
  encodeGroupPoll,
  encodeMessage,
  frameLayout,
  groupScopeBytes,
} from '../src/index.js';
import { errorOf } from './helpers.js';

const scope = groupScopeBytes('t1', 'default', 'jobs', 3, 'workers');
const where = { tenant_id: 't1', namespace: 'default', stream: 'jobs', shard: 3, group: 'workers' };

/** The payload of a frame an encoder wrote, after checking its header names the layout. */
function payloadOf(frame: Uint8Array): Uint8Array {
  const f = decodeFrame(frame);
  expect(f.flags).toBe(FLAG_BINARY_GROUP);
  return f.payload;
}

/** What the JSON form of `m` decodes to: the binary form must read the same. */
function viaJson(m: Message): Message {
  return decodeMessage(decodeFrame(encodeMessage(m)).payload);
}

describe('binary group exchange', () => {
  it('a_binary_poll_ack_and_acked_decode_to_what_their_json_forms_decode_to', () => {
    expect(frameLayout(FLAG_BINARY_GROUP)).toBe('group');
    const r = new GroupFrameReader();
    const plain = { maxRecords: 1, waitMs: 5000, reclaim: false };
    expect(r.request(payloadOf(encodeGroupPoll(scope, plain, 2 ** 40)))).toStrictEqual(
      viaJson({
        type: 'group_poll',
        ...where,
        max_records: 1,
        wait_ms: 5000,
        request_id: 2 ** 40,
        reclaim: false,
      }),
    );
    const named = { ...plain, reclaim: true, visibilityMs: 30_000, consumer: 'рабочий 😀' };
    expect(r.request(payloadOf(encodeGroupPoll(scope, named, 7)))).toStrictEqual(
      viaJson({
        type: 'group_poll',
        ...where,
        max_records: 1,
        wait_ms: 5000,
        request_id: 7,
        consumer: 'рабочий 😀',
        reclaim: true,
        visibility_ms: 30_000,
      }),
    );
    const offsets = [0, 1, 2 ** 53 - 1];
    expect(r.request(payloadOf(encodeGroupAck(scope, offsets, 8)))).toStrictEqual(
      viaJson({ type: 'group_ack_batch', ...where, offsets, request_id: 8 }),
    );
    expect(decodeGroupAcked(payloadOf(encodeGroupAcked(9, [])))).toStrictEqual(
      viaJson({ type: 'group_acked', stale: [], request_id: 9 }),
    );
    expect(decodeGroupAcked(payloadOf(encodeGroupAcked(10, [4, 5])))).toStrictEqual({
      type: 'group_acked',
      stale: [4, 5],
      request_id: 10,
    });
    // A client frame through the one entry point reads as the request.
    const any = decodeFramePayload(decodeFrame(encodeGroupAck(scope, [1], 11)));
    expect(any).toMatchObject({ layout: 'group', message: { type: 'group_ack_batch' } });
  });

  it('a_binary_group_count_or_length_beyond_the_bytes_left_is_refused_before_allocating', () => {
    // 65,535 stale offsets declared in a few bytes: refused from the count alone.
    const acked = Uint8Array.from([3, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0, 0, 0, 0]);
    expect(errorOf(() => decodeGroupAcked(acked))).toBe(TruncatedError);
    const ack = payloadOf(encodeGroupAck(scope, [1], 1));
    ack[ack.length - 9] = 0xff; // the count's low byte
    expect(errorOf(() => new GroupFrameReader().request(ack))).toBe(TruncatedError);
    const poll = payloadOf(encodeGroupPoll(scope, { maxRecords: 1, waitMs: 0, reclaim: false }, 1));
    poll[22] = 0xff; // the tenant's length
    expect(errorOf(() => new GroupFrameReader().request(poll))).toBe(TruncatedError);
  });

  it('a_binary_group_frame_with_a_bad_kind_option_or_tail_gets_its_typed_error', () => {
    const reader = new GroupFrameReader();
    const poll = payloadOf(encodeGroupPoll(scope, { maxRecords: 1, waitMs: 0, reclaim: false }, 1));
    // An answer sent as a request, and a request read as an answer.
    expect(errorOf(() => reader.request(payloadOf(encodeGroupAcked(1, []))))).toBe(
      InvalidEnumError,
    );
    expect(errorOf(() => decodeGroupAcked(poll))).toBe(InvalidEnumError);
    const badOption = poll.slice();
    badOption[21] = 8;
    expect(errorOf(() => reader.request(badOption))).toBe(InvalidEnumError);
    const trailing = new Uint8Array(poll.length + 1);
    trailing.set(poll);
    expect(errorOf(() => reader.request(trailing))).toBe(TrailingBytesError);
    const badGroup = payloadOf(encodeGroupAck(groupScopeBytes('t1', 'd', 's', 0, 'gg'), [1], 1));
    badGroup[badGroup.length - 11] = 0xff; // the group's last byte
    expect(errorOf(() => reader.request(badGroup))).toBe(InvalidUtf8Error);
    expect(errorOf(() => encodeGroupAck(scope, [-1], 1))).toBe(FieldRangeError);
    expect(errorOf(() => groupScopeBytes('t1', 'd', 's', -1, 'g'))).toBe(FieldRangeError);
    expect(errorOf(() => groupScopeBytes('t1', 'd', 's', 0, 'g'.repeat(70_000)))).toBe(
      FieldRangeError,
    );
  });

  it('a_binary_group_scope_is_reused_only_while_its_bytes_repeat', () => {
    const reader = new GroupFrameReader();
    const first = reader.request(payloadOf(encodeGroupAck(scope, [1], 1)));
    // The same length, the shard changed: read afresh, not taken from the memo.
    const near = groupScopeBytes('t1', 'default', 'jobs', 4, 'workers');
    const second = reader.request(payloadOf(encodeGroupAck(near, [1], 2)));
    expect(first).toMatchObject({ shard: 3, group: 'workers' });
    expect(second).toMatchObject({ shard: 4, group: 'workers' });
    const bad = payloadOf(
      encodeGroupAck(groupScopeBytes('t1', 'default', 'jobs', 4, 'workerz'), [1], 3),
    );
    bad[bad.length - 11] = 0xff;
    expect(errorOf(() => reader.request(bad))).toBe(InvalidUtf8Error);
    // A failed read left the memo as it was.
    expect(reader.request(payloadOf(encodeGroupAck(near, [1], 4)))).toMatchObject({ shard: 4 });
  });

  it('a_group_scope_read_from_a_node_buffer_is_not_changed_by_rewriting_that_buffer', () => {
    // A Buffer's slice() is a view: a memo kept with it would follow the memory the frame
    // arrived in and take other bytes written there for the scope it remembers.
    const reader = new GroupFrameReader();
    const frame = Buffer.from(payloadOf(encodeGroupAck(scope, [1], 1)));
    expect(reader.request(frame)).toMatchObject({ shard: 3 });
    const near = groupScopeBytes('t1', 'default', 'jobs', 4, 'workers');
    const other = payloadOf(encodeGroupAck(near, [1], 1));
    frame.set(other);
    expect(reader.request(Buffer.from(other))).toMatchObject({ shard: 4 });
  });

  it('binary_group_decoders_throw_only_wire_errors_on_arbitrary_and_mutated_bytes', () => {
    const valid = fc
      .tuple(
        fc.string({ maxLength: 8 }),
        fc.nat({ max: 2 ** 32 - 1 }),
        fc.array(fc.nat({ max: 2 ** 40 }), { maxLength: 6 }),
        fc.nat({ max: 2 ** 40 }),
        fc.option(fc.nat({ max: 2 ** 40 }), { nil: undefined }),
        fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
      )
      .chain(([group, shard, offsets, rid, visibility, consumer]) => {
        const s = groupScopeBytes('t1', 'default', 'jobs', shard, group);
        const ask = { maxRecords: shard, waitMs: rid, reclaim: consumer !== undefined };
        return fc.constantFrom(
          encodeGroupPoll(s, { ...ask, visibilityMs: visibility, consumer }, rid),
          encodeGroupAck(s, offsets, rid),
          encodeGroupAcked(rid, offsets),
        );
      })
      .map((frame) => frame.subarray(12));
    const mutated = fc
      .tuple(
        valid,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
      )
      .map(([p, edits]) => {
        const out = p.slice();
        for (const [at, b] of edits) if (out.length > 0) out[at % out.length] = b;
        return out;
      });
    const cut = fc
      .tuple(valid, fc.nat())
      .map(([p, n]) => p.subarray(0, p.length === 0 ? 0 : n % p.length));
    const reader = new GroupFrameReader();
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), valid, mutated, cut), (p) => {
        for (const decode of [() => reader.request(p), () => decodeGroupAcked(p)]) {
          try {
            decode();
          } catch (err) {
            expect(err).toBeInstanceOf(WireError);
          }
        }
      }),
      { numRuns: 3000 },
    );
  });
});
