// Goal: the broker's quick read of a `cache_get` (src/fast/cache-get.ts) never answers anything
// the general decoder would not: on any bytes it either declines (undefined, and the session
// decodes them with @felix/wire) or answers exactly the message `decodeMessage` gives, and it
// never throws. Method: fast-check, over requests in the client's exact form with hostile
// strings (quotes, backslashes, control characters, U+FEFF, U+2028, astral characters) and
// request ids around the safe-integer bound; over those requests mutated (bytes inserted,
// dropped or replaced, whitespace, repeated and extra fields, other field orders, escapes);
// and over arbitrary bytes behind the request's opening. One reader serves every run, so its
// memo of the last scope is exercised across changing scopes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GetRequestReader, type Message, decodeMessage, encodeMessage } from '../src/index.js';

const FRAME_HEADER_BYTES = 12;
const UTF8 = new TextEncoder();

const payloadOf = (msg: Message) => encodeMessage(msg).subarray(FRAME_HEADER_BYTES);

/** The general decoder's verdict: the message, or the error it throws. */
function general(p: Uint8Array): { msg: Message } | { err: unknown } {
  try {
    return { msg: decodeMessage(p) };
  } catch (err) {
    return { err };
  }
}

/** The reader declines or agrees with the general decoder; it never throws. */
function agrees(reader: GetRequestReader, p: Uint8Array): boolean {
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
  '\ufeffk',
  '\u2028',
  'ключ',
  '😀',
  '"key":"x',
  '","request_id":1}',
);
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  tricky,
  fc.array(tricky, { maxLength: 3 }).map((xs) => xs.join('')),
);
const requestId = fc.oneof(
  fc.constant(undefined),
  fc.nat({ max: 1000 }),
  fc.constantFrom(0, 10 ** 14, 10 ** 15 - 1, 10 ** 15, 2 ** 53 - 1),
  fc.nat(),
);
const getRequest = fc
  .record({ tenant_id: text, namespace: text, cache: text, key: text, request_id: requestId })
  .map(({ request_id, ...rest }): Message => {
    const msg: Message = { type: 'cache_get', ...rest };
    if (request_id !== undefined) msg.request_id = request_id;
    return msg;
  });

const junk = fc.constantFrom(
  ' ',
  '\n',
  '\t',
  ',',
  ':',
  '"',
  '\\',
  '\\"',
  '\\u0041',
  '{',
  '}',
  '0',
  '9',
  '-',
  '.5',
  'e3',
  'null',
  '"key":"z",',
  ',"key":"z"',
  ',"type":"cache_put"',
  ',"request_id":7',
  ',"extra":[1,{"a":2}]',
  '\ufeff',
  '\u00e9',
);

/** One edit of a payload: insert text, drop a byte, or replace a byte, at a position. */
const edit = fc.record({
  kind: fc.constantFrom('insert', 'drop', 'replace'),
  at: fc.nat(),
  what: fc.oneof(
    junk.map((s) => UTF8.encode(s)),
    fc.uint8Array({ minLength: 1, maxLength: 3 }),
  ),
});

function mutate(p: Uint8Array, edits: Array<{ kind: string; at: number; what: Uint8Array }>) {
  let out: Uint8Array = Uint8Array.from(p);
  for (const e of edits) {
    const at = out.length === 0 ? 0 : e.at % (out.length + 1);
    const before = out.subarray(0, at);
    if (e.kind === 'insert') out = concat(before, e.what, out.subarray(at));
    else if (e.kind === 'drop') out = concat(before, out.subarray(at + 1));
    else out = concat(before, e.what.subarray(0, 1), out.subarray(at + 1));
  }
  return out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

describe('get request reader', () => {
  it('the_get_reader_agrees_with_the_codec_on_arbitrary_and_mutated_frames', () => {
    const reader = new GetRequestReader();
    // The client's exact form: taken whenever no string needs an escape, and always agreeing.
    fc.assert(
      fc.property(getRequest, (msg) => {
        const p = payloadOf(msg);
        const got = reader.read(p);
        const m = msg as Extract<Message, { type: 'cache_get' }>;
        const plain = [m.tenant_id, m.namespace, m.cache, m.key].every(
          (s) => JSON.stringify(s) === `"${s}"`,
        );
        if (plain && (m.request_id === undefined || m.request_id < 10 ** 15)) {
          expect(got).toStrictEqual(decodeMessage(p));
        }
        return agrees(reader, p);
      }),
      { numRuns: 3000 },
    );
    // Mutated requests: declined or read exactly as the codec reads them.
    fc.assert(
      fc.property(getRequest, fc.array(edit, { minLength: 1, maxLength: 4 }), (msg, edits) =>
        agrees(reader, mutate(payloadOf(msg), edits)),
      ),
      { numRuns: 5000 },
    );
    // Arbitrary bytes behind the opening of a get.
    const open = UTF8.encode('{"type":"cache_get","tenant_id":"');
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (tail) => agrees(reader, concat(open, tail))),
      { numRuns: 3000 },
    );
  });

  it('the_get_reader_declines_every_form_but_the_clients', () => {
    const reader = new GetRequestReader();
    const base = '{"type":"cache_get","tenant_id":"t","namespace":"n","cache":"c","key":"k"';
    const read = (s: string) => reader.read(UTF8.encode(s));
    expect(read(`${base},"request_id":7}`)).toStrictEqual({
      type: 'cache_get',
      tenant_id: 't',
      namespace: 'n',
      cache: 'c',
      key: 'k',
      request_id: 7,
    });
    expect(read(`${base}}`)).toStrictEqual({
      type: 'cache_get',
      tenant_id: 't',
      namespace: 'n',
      cache: 'c',
      key: 'k',
    });
    for (const other of [
      `${base},"request_id":7,"key":"other"}`, // a repeated field: the codec takes the last
      `${base},"type":"cache_put","request_id":7}`,
      `${base},"request_id":7,"extra":1}`,
      `${base} ,"request_id":7}`,
      `${base},"request_id": 7}`,
      `${base},"request_id":7}\n`,
      `${base},"request_id":7.0}`,
      `${base},"request_id":1e3}`,
      `${base},"request_id":07}`,
      `${base},"request_id":-1}`,
      `${base},"request_id":null}`,
      `${base},"request_id":1234567890123456}`,
      `${base},"request_id":"7"}`,
      `${base},"request_id":7`,
      '{"type":"cache_get","tenant_id":"t","namespace":"n","cache":"c","key":"k\\"x","request_id":7}',
      '{"type":"cache_get","tenant_id":"t","namespace":"n","cache":"c","key":"\\u006b","request_id":7}',
      '{"type":"cache_get","namespace":"n","tenant_id":"t","cache":"c","key":"k","request_id":7}',
      '{"type":"cache_get","tenant_id":"t","namespace":"n","cache":"c","key":7,"request_id":7}',
      '\ufeff{"type":"cache_get","tenant_id":"t","namespace":"n","cache":"c","key":"k"}',
    ]) {
      expect(read(other), other).toBeUndefined();
    }
    // Invalid UTF-8 inside a string is the codec's to report.
    const bad = UTF8.encode(`${base},"request_id":7}`);
    bad[bad.indexOf(0x6b, 60)] = 0xff;
    expect(reader.read(bad)).toBeUndefined();
    expect(general(bad)).toHaveProperty('err');
  });
});
