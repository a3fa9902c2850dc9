// Goal: JSON messages encode byte-identically to the reference (type first, declared field
// order, absent optionals omitted, nullable fields written as null) and decode strictly.
// Method: reference texts written out by hand, plus targeted malformed payloads.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeMessageByTable, messageJsonByTable } from '../src/json/message-codec.js';
import {
  FieldRangeError,
  InvalidJsonError,
  InvalidMessageError,
  InvalidUtf8Error,
  type Message,
  OffsetOutOfRangeError,
  PUBLISH_BATCH_RECORDS_MAX,
  decodeMessage,
  encodeMessage,
  messageJson,
} from '../src/index.js';
import { hex, utf8 } from './helpers.js';

const REFERENCE_TEXTS = [
  '{"type":"publish","tenant_id":"t1","namespace":"default","stream":"demo","payload":"aGVsbG8="}',
  '{"type":"subscribe","tenant_id":"t1","namespace":"default","stream":"demo"}',
  '{"type":"cache_put","tenant_id":"t1","namespace":"default","cache":"primary","key":"demo-key","value":"Y2FjaGVk","ttl_ms":1000}',
  '{"type":"ok"}',
  '{"type":"error","message":"oops"}',
  '{"type":"auth","tenant_id":"t1","token":"demo-token","client_flags":25}',
  '{"type":"auth_ok","server_flags":25,"server_features":2147483649,"server_features_hi":1}',
];

/** Standard padded base64, written out here so the test does not share the codec's. */
function b64(bytes: Uint8Array): string {
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += abc[n >> 18]! + abc[(n >> 12) & 63]!;
    out += i + 1 < bytes.length ? abc[(n >> 6) & 63]! : '=';
    out += i + 2 < bytes.length ? abc[n & 63]! : '=';
  }
  return out;
}

describe('json messages', () => {
  it('a_message_frame_holds_its_text_as_utf8_whether_ascii_or_not', () => {
    for (const key of ['plain-key', 'ключ', 'k\u00e9y-\u{1F600}']) {
      const msg: Message = {
        type: 'cache_get',
        tenant_id: 't1',
        namespace: 'default',
        cache: 'users',
        key,
        request_id: 7,
      };
      const payload = utf8(messageJson(msg));
      const frame = encodeMessage(msg);
      expect(hex(frame.subarray(12))).toBe(hex(payload));
      expect(new DataView(frame.buffer, frame.byteOffset).getUint32(8)).toBe(payload.length);
      expect(decodeMessage(frame.subarray(12))).toEqual(msg);
    }
  });

  it('group_records_take_the_short_path_to_the_same_bytes_and_values', () => {
    const record = fc.record({
      offset: fc.nat({ max: Number.MAX_SAFE_INTEGER }),
      payload: fc.uint8Array({ maxLength: 200 }),
      attempts: fc.nat({ max: 0xffff_ffff }),
      skipped_before: fc.constant(0),
    });
    fc.assert(
      fc.property(fc.array(record, { maxLength: 20 }), fc.nat(), (records, request_id) => {
        const msg: Message = { type: 'group_records', records, request_id };
        // The table path's text: fields in declared order, skipped_before omitted when 0.
        const text = JSON.stringify({
          type: 'group_records',
          records: records.map((r) => ({
            offset: r.offset,
            payload: b64(r.payload),
            attempts: r.attempts,
          })),
          request_id,
        });
        expect(messageJson(msg)).toBe(text);
        expect(decodeMessage(utf8(text))).toEqual(msg);
      }),
    );
    // Shapes the short path leaves to the table: still decoded, or refused typed.
    const withPublisher =
      '{"type":"group_records","records":[{"offset":1,"payload":"YQ==","attempts":1,"publisher":"p"}],"request_id":2}';
    expect(messageJson(decodeMessage(utf8(withPublisher)))).toBe(withPublisher);
    const badPayload =
      '{"type":"group_records","records":[{"offset":1,"payload":"YQ="}],"request_id":2}';
    expect(() => decodeMessage(utf8(badPayload))).toThrow(InvalidMessageError);
    const longBad = `{"type":"group_records","records":[{"offset":1,"payload":"${'A'.repeat(67)}*"}],"request_id":2}`;
    expect(() => decodeMessage(utf8(longBad))).toThrow(InvalidMessageError);
    const hugeOffset =
      '{"type":"group_records","records":[{"offset":18446744073709551615,"payload":"YQ=="}],"request_id":2}';
    expect(() => decodeMessage(utf8(hugeOffset))).toThrow(OffsetOutOfRangeError);
    const retyped = '{"type":"group_records","records":[],"request_id":2,"type":"cache_ok"}';
    expect(decodeMessage(utf8(retyped)).type).toBe('cache_ok');
    const noOffset = '{"type":"group_records","records":[{"payload":"YQ=="}],"request_id":2}';
    expect(() => decodeMessage(utf8(noOffset))).toThrow(InvalidMessageError);
  });

  it('cache_events_take_the_short_path_to_the_same_bytes', () => {
    const event = fc.record(
      {
        key: fc.string({ unit: 'binary', maxLength: 40 }),
        value: fc.uint8Array({ maxLength: 200 }),
        offset: fc.nat({ max: Number.MAX_SAFE_INTEGER }),
        expires_at_millis: fc.nat({ max: Number.MAX_SAFE_INTEGER }),
      },
      { requiredKeys: ['key', 'offset', 'expires_at_millis'] },
    );
    fc.assert(
      fc.property(event, (e) => {
        const msg = { type: 'cache_event', ...e } as Message;
        expect(messageJson(msg)).toBe(messageJsonByTable(msg));
        expect(decodeMessage(utf8(messageJson(msg)))).toEqual(msg);
      }),
    );
    // A shape the short path leaves to the table is still refused there, typed.
    const bad = {
      type: 'cache_event',
      key: 'k',
      value: 'not bytes',
      offset: 1,
    } as unknown as Message;
    expect(() => messageJson(bad)).toThrow(FieldRangeError);
  });

  it('cache_events_are_read_by_the_short_path_as_the_table_reads_them', () => {
    // Field values the short path must take exactly as the table does, or leave to it.
    const num = fc.oneof(
      fc.nat({ max: Number.MAX_SAFE_INTEGER }).map(String),
      fc.constantFrom('-0', '-1', '1.5', '1e3', '9007199254740993', '18446744073709551615', '0'),
    );
    const jsonish = fc.oneof(
      num,
      fc.string({ unit: 'binary', maxLength: 12 }).map((x) => JSON.stringify(x)),
      fc
        .uint8Array({ maxLength: 30 })
        .map((b) => JSON.stringify(Buffer.from(b).toString('base64'))),
      fc.constantFrom('null', 'true', '[]', '{}', '"YQ="', '"YQ=="', '"Y Q=="', '"YR=="'),
    );
    const field = (name: string) =>
      fc.option(
        jsonish.map((v) => `"${name}":${v}`),
        { nil: undefined },
      );
    const text = fc
      .tuple(
        field('key'),
        field('value'),
        field('offset'),
        field('expires_at_millis'),
        fc.option(fc.constantFrom('"type":"cache_ok"', '"extra":1', '"key":"again"'), {
          nil: undefined,
        }),
      )
      .map((fields) => `{"type":"cache_event",${fields.filter((f) => f !== undefined).join(',')}}`)
      .map((t) => t.replace(',}', '}'));
    const outcome = (f: () => Message): unknown => {
      try {
        return f();
      } catch (err) {
        return (err as Error).constructor.name;
      }
    };
    fc.assert(
      fc.property(text, (t) => {
        const payload = utf8(t);
        expect(outcome(() => decodeMessage(payload))).toEqual(
          outcome(() => decodeMessageByTable(payload)),
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('reference_texts_survive_a_decode_and_re_encode_unchanged', () => {
    for (const text of REFERENCE_TEXTS) {
      expect(messageJson(decodeMessage(utf8(text)))).toBe(text);
    }
  });

  it('a_cache_put_without_ttl_writes_ttl_as_null_after_request_id', () => {
    const msg: Message = {
      type: 'cache_put',
      tenant_id: 't',
      namespace: 'n',
      cache: 'c',
      key: 'k',
      value: new Uint8Array([1]),
      request_id: 4,
    };
    expect(messageJson(msg)).toBe(
      '{"type":"cache_put","tenant_id":"t","namespace":"n","cache":"c","key":"k","value":"AQ==","request_id":4,"ttl_ms":null}',
    );
  });

  it('a_cache_miss_is_written_with_a_null_value', () => {
    const msg: Message = { type: 'cache_value', key: 'k', request_id: 1 };
    expect(messageJson(msg)).toBe('{"type":"cache_value","key":"k","value":null,"request_id":1}');
    expect(decodeMessage(utf8(messageJson(msg)))).toEqual(msg);
  });

  it('an_unknown_type_decodes_to_the_unknown_variant_with_its_request_id', () => {
    const decoded = decodeMessage(utf8('{"type":"shard_inspect","request_id":12,"x":[1]}'));
    expect(decoded).toMatchObject({
      type: 'unknown',
      request_type: 'shard_inspect',
      request_id: 12,
    });
  });

  it('unknown_fields_are_ignored', () => {
    expect(decodeMessage(utf8('{"type":"ok","future":{"a":1}}'))).toEqual({ type: 'ok' });
  });

  it('a_producer_id_above_two_to_the_53_survives_exactly', () => {
    const msg: Message = {
      type: 'producer_init_ok',
      request_id: 1,
      producer_id: 18446744073709551615n,
    };
    const text = messageJson(msg);
    expect(text).toBe(
      '{"type":"producer_init_ok","request_id":1,"producer_id":18446744073709551615}',
    );
    expect(decodeMessage(utf8(text))).toEqual(msg);
  });

  it('an_offset_beyond_the_safe_integer_range_is_a_typed_error', () => {
    const text = '{"type":"publish_ok","request_id":1,"offset":9007199254740993}';
    expect(() => decodeMessage(utf8(text))).toThrow(OffsetOutOfRangeError);
  });

  it('a_missing_required_field_names_the_field', () => {
    expect(() => decodeMessage(utf8('{"type":"publish_ok"}'))).toThrow(InvalidMessageError);
    expect(() => decodeMessage(utf8('{"type":"publish_ok"}'))).toThrow(/request_id/);
  });

  it('malformed_json_and_bad_utf8_are_typed_errors', () => {
    expect(() => decodeMessage(utf8('{"type":"ok"'))).toThrow(InvalidJsonError);
    expect(() => decodeMessage(new Uint8Array([0x7b, 0xff, 0x7d]))).toThrow(InvalidUtf8Error);
    expect(() => decodeMessage(utf8('[1]'))).toThrow(InvalidMessageError);
    expect(() =>
      decodeMessage(
        utf8('{"type":"event","tenant_id":"t","namespace":"n","stream":"s","payload":"a"}'),
      ),
    ).toThrow(InvalidMessageError);
  });

  it('start_positions_and_refusal_reasons_use_their_reference_spellings', () => {
    const sub: Message = {
      type: 'subscribe',
      tenant_id: 't',
      namespace: 'n',
      stream: 's',
      start: { offset: 5 },
      shard: 2,
    };
    expect(messageJson(sub)).toBe(
      '{"type":"subscribe","tenant_id":"t","namespace":"n","stream":"s","start":{"offset":5},"shard":2}',
    );
    const refused: Message = {
      type: 'publish_refused',
      request_id: 3,
      reason: { sequence_gap: { expected: 9 } },
      message: 'gap',
    };
    expect(messageJson(refused)).toBe(
      '{"type":"publish_refused","request_id":3,"reason":{"sequence_gap":{"expected":9}},"message":"gap"}',
    );
    expect(decodeMessage(utf8(messageJson(refused)))).toEqual(refused);
  });

  it('an_encoded_message_is_a_flags_zero_frame', () => {
    expect(hex(encodeMessage({ type: 'ok' }).subarray(0, 12))).toBe('464c5831000100000000000d');
  });
});

describe('json parser', () => {
  it('the_fast_and_exact_json_paths_agree', async () => {
    const { parseJson, parseJsonFast } = await import('../src/json/parse.js');
    const texts = [
      '{"a":[1,2.5,-3e2,true,null,"x\\u00e9\\n"],"b":{"c":{}}}',
      '{"big":123456789012345678901,"neg":-9223372036854775808}',
      ' [ ] ',
    ];
    for (const text of texts) expect(parseJsonFast(text)).toEqual(parseJson(text));
    expect(parseJsonFast('{"big":18446744073709551615}')).toEqual({ big: 18446744073709551615n });
  });

  it('nesting_beyond_the_bound_is_refused_by_the_exact_parser', async () => {
    const { parseJson } = await import('../src/json/parse.js');
    expect(() => parseJson(`${'['.repeat(100)}${']'.repeat(100)}`)).toThrow(InvalidJsonError);
  });
});

describe('base64', () => {
  it('native_and_table_base64_agree_and_refuse_non_canonical_text', async () => {
    const { base64Decode, base64Encode } = await import('../src/json/base64.js');
    const fc = (await import('fast-check')).default;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const text = base64Encode(bytes);
        expect(text).toBe(Buffer.from(bytes).toString('base64'));
        expect(base64Decode(text)).toEqual(bytes);
      }),
    );
    const long = base64Encode(new Uint8Array(100).fill(255));
    expect(base64Decode(`${long.slice(0, -2)}/=`)).toBeUndefined();
    expect(base64Decode(`${long.slice(0, -4)}A===`)).toBeUndefined();
    expect(base64Decode(`${long.slice(0, -4)} AA=`)).toBeUndefined();
    expect(base64Decode('Zh==')).toBeUndefined();
    expect(base64Decode('Zg==')).toEqual(new Uint8Array([0x66]));
  });
});

describe('json encoder guards', () => {
  it('the_encoder_refuses_values_its_fields_cannot_carry', async () => {
    const { FieldRangeError } = await import('../src/index.js');
    const bad: unknown[] = [
      { type: 'auth_ok', server_flags: 0x1_0000 },
      { type: 'publish_ok', request_id: -1 },
      { type: 'publish_ok', request_id: 1.5 },
      { type: 'publish_ok' },
      {
        type: 'counter_add',
        tenant_id: 't',
        namespace: 'n',
        cache: 'c',
        key: 'k',
        delta: 2n ** 63n,
        request_id: 1,
      },
      { type: 'subscribe_cursor_error', reason: 'sideways', requested: 1, available: 2 },
      { type: 'unknown', request_type: 'x', raw: {} },
      { type: 'no_such_type' },
    ];
    for (const msg of bad) expect(() => messageJson(msg as Message)).toThrow(FieldRangeError);
  });

  it('a_not_leader_answer_names_its_generation_and_one_without_it_still_decodes', () => {
    const detail = { reason: 'not_leader', node_id: 'n2', addr: '10.0.0.2:7000', generation: 9 };
    const error: Message = { type: 'error', message: 'led by n2', code: 'not_leader', detail };
    expect(messageJson(error)).toBe(
      '{"type":"error","message":"led by n2","code":"not_leader","detail":{"reason":"not_leader","node_id":"n2","addr":"10.0.0.2:7000","generation":9}}',
    );
    expect(decodeMessage(utf8(messageJson(error)))).toEqual(error);
    const refused: Message = {
      type: 'publish_refused',
      request_id: 4,
      reason: { not_leader: { node_id: 'n2', addr: '10.0.0.2:7000', generation: 9 } },
      message: 'led by n2',
    };
    expect(decodeMessage(utf8(messageJson(refused)))).toEqual(refused);
    // Frames of brokers that do not send the generation yet.
    const old = decodeMessage(
      utf8(
        '{"type":"publish_refused","request_id":4,"reason":{"not_leader":{"node_id":"n2"}},"message":"m"}',
      ),
    ) as Extract<Message, { type: 'publish_refused' }>;
    expect(old.reason).toEqual({ not_leader: { node_id: 'n2' } });
    const plain = decodeMessage(
      utf8('{"type":"error","message":"m","code":"not_leader","detail":{"reason":"not_leader"}}'),
    );
    expect(plain).toEqual({
      type: 'error',
      message: 'm',
      code: 'not_leader',
      detail: { reason: 'not_leader' },
    });
  });
});

describe('json list bound', () => {
  it('a_json_list_longer_than_the_publish_batch_bound_is_refused_before_its_items_are_decoded', () => {
    const text = (n: number) =>
      `{"type":"publish_batch","tenant_id":"t1","namespace":"n","stream":"s","payloads":[${'"",'.repeat(n - 1)}""]}`;
    const at = decodeMessage(utf8(text(PUBLISH_BATCH_RECORDS_MAX))) as { payloads: unknown[] };
    expect(at.payloads).toHaveLength(PUBLISH_BATCH_RECORDS_MAX);
    expect(() => decodeMessage(utf8(text(PUBLISH_BATCH_RECORDS_MAX + 1)))).toThrow(
      InvalidMessageError,
    );
    const offsets = `[${'0,'.repeat(PUBLISH_BATCH_RECORDS_MAX)}0]`;
    expect(() =>
      decodeMessage(
        utf8(
          `{"type":"group_ack_batch","tenant_id":"t1","namespace":"n","stream":"s","shard":0,"group":"g","offsets":${offsets},"request_id":1}`,
        ),
      ),
    ).toThrow(InvalidMessageError);
  });
});
