// Goal: the quick `cache_put` codec (src/fast/cache-put.ts) is the general codec, faster: the
// client's request is byte for byte what `encodeMessage` writes; the broker's reader either
// declines (undefined, and the session decodes the frame with `decodeMessage`) or answers
// exactly what `decodeMessage` answers, and never throws; the `cache_ok` answer is the codec's
// bytes and the client's read of it takes only that answer. Method: fast-check over requests
// with hostile strings (quotes, backslashes, control characters, U+FEFF, astral characters),
// values of every base64 padding, request ids and ttls around the bounds; over those requests
// mutated (bytes inserted, dropped or replaced, whitespace, extra and repeated fields, broken
// base64); and over arbitrary bytes behind the opening. One reader serves every run, so its
// memo of the last scope is exercised across changing scopes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Message,
  PutRequestReader,
  decodeMessage,
  encodeMessage,
  encodePutRequest,
  okAnswerFrame,
  putRequestPrefix,
  readOkAnswer,
} from '../src/index.js';

const FRAME_HEADER_BYTES = 12;
const UTF8 = new TextEncoder();
type Put = Extract<Message, { type: 'cache_put' }>;

const payloadOf = (msg: Message) => encodeMessage(msg).subarray(FRAME_HEADER_BYTES);

function general(p: Uint8Array): { msg: Message } | { err: unknown } {
  try {
    return { msg: decodeMessage(p) };
  } catch (err) {
    return { err };
  }
}

/** The reader declines or agrees with the general decoder; it never throws. */
function agrees(reader: PutRequestReader, p: Uint8Array): boolean {
  const got = reader.read(p);
  if (got === undefined) return true;
  const want = general(p);
  expect(want).toHaveProperty('msg');
  expect(got).toStrictEqual((want as { msg: Message }).msg);
  return true;
}

const tricky = fc.constantFrom(
  '',
  'k',
  '"',
  '\\',
  '\u0000',
  '\u001f',
  '\u007f',
  '\ufeff',
  '\u2028',
  'ключ',
  '😀',
  '","value":"',
  '"ttl_ms":null}',
);
const text = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.string({ unit: 'grapheme', maxLength: 5 }),
  fc.string({ unit: 'binary', maxLength: 5 }),
  tricky,
);
const bound = fc.oneof(
  fc.constant(undefined),
  fc.nat({ max: 1000 }),
  fc.constantFrom(0, 10 ** 15 - 1, 10 ** 15, 2 ** 53 - 1),
  fc.nat(),
);
const putRequest = fc
  .record({
    tenant_id: text,
    namespace: text,
    cache: text,
    key: text,
    value: fc.oneof(fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 200 })),
    request_id: fc.oneof(fc.nat(), fc.constantFrom(0, 10 ** 15 - 1, 2 ** 53 - 1)),
    ttl_ms: bound,
  })
  .map(({ ttl_ms, ...rest }): Put => {
    const msg: Put = { type: 'cache_put', ...rest };
    if (ttl_ms !== undefined) msg.ttl_ms = ttl_ms;
    return msg;
  });

const junk = fc.constantFrom(
  ' ',
  '\n',
  ',',
  ':',
  '"',
  '\\',
  '\\u0041',
  '{',
  '}',
  '0',
  '-',
  '.5',
  'e3',
  'null',
  '=',
  '==',
  'A',
  '/',
  '+',
  '-_',
  ',"key":"z"',
  ',"ttl_ms":5',
  ',"request_id":7',
  ',"extra":[1]',
  '\ufeff',
  '\u00e9',
);
const edit = fc.record({
  kind: fc.constantFrom('insert', 'drop', 'replace'),
  at: fc.nat(),
  what: fc.oneof(
    junk.map((s) => UTF8.encode(s)),
    fc.uint8Array({ minLength: 1, maxLength: 3 }),
  ),
});

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function mutate(p: Uint8Array, edits: Array<{ kind: string; at: number; what: Uint8Array }>) {
  let out: Uint8Array = Uint8Array.from(p);
  for (const e of edits) {
    const at = e.at % (out.length + 1);
    if (e.kind === 'insert') out = concat(out.subarray(0, at), e.what, out.subarray(at));
    else if (e.kind === 'drop') out = concat(out.subarray(0, at), out.subarray(at + 1));
    else out = concat(out.subarray(0, at), e.what.subarray(0, 1), out.subarray(at + 1));
  }
  return out;
}

function clientBytes(m: Put): Uint8Array {
  const prefix = putRequestPrefix(m.tenant_id, m.namespace, m.cache);
  return encodePutRequest(prefix, m, m.key, m.value, m.request_id!, m.ttl_ms);
}

describe('put request codec', () => {
  it('a_put_request_is_the_bytes_the_codec_writes', () => {
    fc.assert(
      fc.property(putRequest, (m) => {
        expect(Buffer.from(clientBytes(m)).equals(Buffer.from(encodeMessage(m)))).toBe(true);
      }),
      { numRuns: 3000 },
    );
    // What the codec refuses, the quick encoder refuses with the codec's error.
    const m: Put = {
      type: 'cache_put',
      tenant_id: 't',
      namespace: 'n',
      cache: 'c',
      key: 'k',
      value: new Uint8Array(1),
      request_id: 1,
      ttl_ms: -1,
    };
    expect(() => clientBytes(m)).toThrow(/ttl_ms/);
  });

  it('the_put_reader_agrees_with_the_codec_on_arbitrary_and_mutated_frames', () => {
    const reader = new PutRequestReader();
    // The client's exact form: taken whenever no string needs an escape, and always agreeing.
    fc.assert(
      fc.property(putRequest, (m) => {
        const p = payloadOf(m);
        const plain = [m.tenant_id, m.namespace, m.cache, m.key].every(
          (s) => JSON.stringify(s) === `"${s}"`,
        );
        const short = [m.request_id, m.ttl_ms].every((n) => n === undefined || n < 10 ** 15);
        if (plain && short) expect(reader.read(p)).toStrictEqual(decodeMessage(p));
        return agrees(reader, p);
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(putRequest, fc.array(edit, { minLength: 1, maxLength: 4 }), (m, edits) =>
        agrees(reader, mutate(payloadOf(m), edits)),
      ),
      { numRuns: 6000 },
    );
    const open = UTF8.encode(
      '{"type":"cache_put","tenant_id":"t","namespace":"n","cache":"c","key":"k","value":"',
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 60 }), (tail) => agrees(reader, concat(open, tail))),
      { numRuns: 3000 },
    );
    const base64ish = fc.string({ unit: fc.constantFrom(...'AQgw/+=z9"'), maxLength: 12 });
    fc.assert(
      fc.property(base64ish, fc.constantFrom('', ',"request_id":3'), (b, rid) =>
        agrees(reader, concat(open, UTF8.encode(`${b}"${rid},"ttl_ms":null}`))),
      ),
      { numRuns: 3000 },
    );
  });

  it('a_long_put_value_is_taken_only_in_the_canonical_base64_the_codec_takes', () => {
    // Values of kilobytes go through Node's lenient native decoder: every way its text can
    // differ from the canonical form must still be declined where the codec refuses it.
    const reader = new PutRequestReader();
    const open =
      '{"type":"cache_put","tenant_id":"t","namespace":"n","cache":"c","key":"k","value":"';
    const frame = (b64: string) => UTF8.encode(`${open}${b64}","request_id":7,"ttl_ms":null}`);
    const value = Uint8Array.from({ length: 1024 }, (_, i) => (i * 37) & 0xff);
    const good = Buffer.from(value).toString('base64');
    expect(reader.read(frame(good))).toStrictEqual(decodeMessage(frame(good)));
    const declined = [
      good.replace(/\+/, '-').replace(/\//, '_'), // URL-safe alphabet
      `${good.slice(0, 100)} ${good.slice(101)}`, // a space in place of one character
      `${good.slice(0, 100)}*${good.slice(101)}`, // a character outside the alphabet
      `${good.slice(0, 100)}\u00e9${good.slice(102)}`, // not ASCII
      `${good.slice(0, -4)}AAB=`, // non-zero bits past the last byte
      `${good.slice(0, -4)}AA==`.slice(0, -1), // bad padding
      `${good.slice(0, -4)}A=A=`, // padding in the middle of a quantum
      `${good.slice(0, 96)}====${good.slice(100)}`, // padding inside the text
    ];
    for (const b64 of declined) {
      expect(reader.read(frame(b64)), b64.slice(90, 110)).toBeUndefined();
      expect(agrees(reader, frame(b64))).toBe(true);
    }
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 48, maxLength: 2048 }), fc.array(edit), (v, edits) => {
        const b64 = Buffer.from(v).toString('base64');
        return agrees(reader, mutate(frame(b64), edits));
      }),
      { numRuns: 2000 },
    );
  });

  it('the_put_reader_declines_every_form_but_the_clients', () => {
    const reader = new PutRequestReader();
    const head =
      '{"type":"cache_put","tenant_id":"t","namespace":"n","cache":"c","key":"k","value":"AQI="';
    const read = (s: string) => reader.read(UTF8.encode(s));
    const want: Put = {
      type: 'cache_put',
      tenant_id: 't',
      namespace: 'n',
      cache: 'c',
      key: 'k',
      value: Uint8Array.of(1, 2),
    };
    expect(read(`${head},"request_id":7,"ttl_ms":null}`)).toStrictEqual({ ...want, request_id: 7 });
    expect(read(`${head},"ttl_ms":0}`)).toStrictEqual({ ...want, ttl_ms: 0 });
    for (const other of [
      `${head},"request_id":7}`, // no ttl_ms: the codec always writes it
      `${head},"request_id":7,"ttl_ms":null,"key":"x"}`,
      `${head},"ttl_ms":null,"request_id":7}`,
      `${head},"request_id":7,"ttl_ms":null }`,
      `${head},"request_id":07,"ttl_ms":null}`,
      `${head},"request_id":7,"ttl_ms":1e3}`,
      `${head},"request_id":7,"ttl_ms":-1}`,
      `${head},"request_id":7,"ttl_ms":1234567890123456}`,
      '{"type":"cache_put","tenant_id":"t","namespace":"n","cache":"c","key":"k","value":"AQJ=","ttl_ms":null}',
      '{"type":"cache_put","tenant_id":"t","namespace":"n","cache":"c","key":"k","value":"AQI","ttl_ms":null}',
      '{"type":"cache_put","tenant_id":"t","namespace":"n","cache":"c","key":"k","value":"AQ-_","ttl_ms":null}',
      '{"type":"cache_put","tenant_id":"t","namespace":"n","cache":"c","key":"k","value":null,"ttl_ms":null}',
      '{"type":"cache_put","tenant_id":"t","namespace":"n","cache":"c","key":"\\u006b","value":"","ttl_ms":null}',
    ]) {
      expect(read(other), other).toBeUndefined();
    }
  });

  it('a_cache_ok_answer_is_the_bytes_the_codec_writes_and_only_it_reads_quickly', () => {
    fc.assert(
      fc.property(fc.oneof(fc.nat(), fc.constantFrom(0, 9, 10, 2 ** 53 - 1)), (rid) => {
        const ok: Message = { type: 'cache_ok', request_id: rid };
        const frame = encodeMessage(ok);
        expect(Buffer.from(okAnswerFrame(rid)).equals(Buffer.from(frame))).toBe(true);
        const p = frame.subarray(FRAME_HEADER_BYTES);
        expect(readOkAnswer(rid, p)).toStrictEqual(decodeMessage(p));
        expect(readOkAnswer(rid + 1, p)).toBeUndefined();
        expect(readOkAnswer(rid, concat(p, UTF8.encode(' ')))).toBeUndefined();
        expect(readOkAnswer(rid, payloadOf({ type: 'ok' }))).toBeUndefined();
      }),
      { numRuns: 2000 },
    );
  });
});
