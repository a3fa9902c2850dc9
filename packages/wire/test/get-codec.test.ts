// Goal: the hand-written cache_get request is exactly what the JSON codec writes, and the quick
// cache_value reader answers what the codec would, or declines so the codec decides.
// Method: compare against @felix/wire's encodeMessage/decodeMessage over awkward keys and
// values, then feed answers that differ from the common form in one way each.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FRAME_HEADER_BYTES,
  type Message,
  decodeMessage,
  encodeGetRequest,
  encodeMessage,
  getRequestPrefix,
  messageJson,
  readValueAnswer,
} from '../src/index.js';

const scope = { tenant_id: 't"1', namespace: 'n\\s', cache: 'câché' };
const prefix = getRequestPrefix(scope.tenant_id, scope.namespace, scope.cache);
const keys = ['k', 'a "quoted"\nkey', 'ключ', '😀\u0000\u001f'];
const values = [0, 1, 2, 3, 100, 4096].map((n) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff),
);
const utf8 = (s: string) => new TextEncoder().encode(s);

describe('cache get codec', () => {
  it('a_get_request_is_the_bytes_the_codec_writes', () => {
    for (const key of keys) {
      for (const id of [0, 9, 10, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
        const req = encodeGetRequest(prefix, key, id);
        const want = encodeMessage({ type: 'cache_get', ...scope, key, request_id: id });
        expect(Buffer.from(req.frame).equals(Buffer.from(want))).toBe(true);
      }
    }
  });

  it('a_get_request_for_any_key_and_id_is_the_bytes_the_codec_writes', () => {
    // Printable ASCII keys are written byte by byte, any other through JSON.stringify.
    const key = fc.oneof(
      fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) }),
      fc.string({ unit: 'binary' }),
      fc.constantFrom('k', '"', '\\', '\u007f', '~', ' ', 'ключ'),
    );
    const id = fc.oneof(fc.nat(), fc.constantFrom(0, 9, 10, 99, 100, 2 ** 53 - 1));
    fc.assert(
      fc.property(key, id, (k, i) => {
        const req = encodeGetRequest(prefix, k, i);
        const want = encodeMessage({ type: 'cache_get', ...scope, key: k, request_id: i });
        expect(Buffer.from(req.frame).equals(Buffer.from(want))).toBe(true);
        // The echo the answer reader compares is exactly `"tenant_id":…,"key":"…"`.
        const echo = Buffer.from(req.frame.subarray(req.echoFrom, req.echoTo)).toString();
        expect(echo).toBe(
          messageJson({ type: 'cache_value', ...scope, key: k }).slice(
            '{"type":"cache_value",'.length,
            -',"value":null}'.length,
          ),
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('a_common_cache_value_is_read_as_the_codec_reads_it', () => {
    for (const key of keys) {
      for (const value of [...values, undefined]) {
        const req = encodeGetRequest(prefix, key, 42);
        const answer: Message = { type: 'cache_value', ...scope, key, request_id: 42 };
        if (value !== undefined) answer.value = value;
        const payload = utf8(messageJson(answer));
        const quick = readValueAnswer(req, key, payload);
        expect(quick).toBeDefined();
        const full = decodeMessage(payload) as { value?: Uint8Array; request_id?: number };
        expect((quick as { value?: Uint8Array }).value).toEqual(full.value);
        expect((quick as { request_id?: number }).request_id).toBe(full.request_id);
      }
    }
  });

  it('an_unusual_cache_value_falls_back_to_the_codec', () => {
    const key = 'k1';
    const req = encodeGetRequest(prefix, key, 42);
    const base = messageJson({
      type: 'cache_value',
      ...scope,
      key,
      value: Uint8Array.of(1, 2, 3, 4),
      request_id: 42,
    });
    const declined = [
      // no echoed scope (the reference lets a broker omit it)
      messageJson({ type: 'cache_value', key, value: Uint8Array.of(1), request_id: 42 }),
      // another key, another cache
      base.replace('"key":"k1"', '"key":"k2"'),
      base.replace('"cache":"câché"', '"cache":"other"'),
      // another request id, or none
      base.replace('"request_id":42', '"request_id":43'),
      base.replace(',"request_id":42', ''),
      // a field after the request id, or whitespace
      base.replace('"request_id":42}', '"request_id":42,"version":7}'),
      base.replace('{"type"', '{ "type"'),
      // base64 the codec refuses: bad length, bad character, non-zero trailing bits
      base.replace('"AQIDBA=="', '"AQIDBA="'),
      base.replace('"AQIDBA=="', '"AQID*A=="'),
      base.replace('"AQIDBA=="', '"AQIDBB=="'),
      // an error answer
      messageJson({ type: 'error', message: 'no' }),
      // truncated
      base.slice(0, -1),
    ];
    for (const text of declined) {
      expect(readValueAnswer(req, key, utf8(text)), text).toBeUndefined();
    }
    expect(readValueAnswer(req, key, utf8(base))).toEqual({
      type: 'cache_value',
      key,
      request_id: 42,
      value: Uint8Array.of(1, 2, 3, 4),
    });
  });

  it('a_quickly_read_value_is_a_plain_uint8array_of_exactly_its_bytes_that_later_reads_leave_alone', () => {
    const key = 'k';
    const req = encodeGetRequest(prefix, key, 7);
    const read = (value: Uint8Array) => {
      const payload = encodeMessage({ type: 'cache_value', ...scope, key, value, request_id: 7 });
      const msg = readValueAnswer(req, key, payload.subarray(FRAME_HEADER_BYTES));
      if (msg?.type !== 'cache_value' || msg.value === undefined) throw new Error('declined');
      return msg.value;
    };
    const first = read(Uint8Array.of(1, 2, 3));
    const second = read(Uint8Array.of(9, 9, 9, 9));
    // A plain Uint8Array (no Buffer methods leak out), its own length, untouched by the next read.
    expect(Object.getPrototypeOf(first)).toBe(Uint8Array.prototype);
    expect(first.byteLength).toBe(3);
    expect([...first]).toEqual([1, 2, 3]);
    expect([...second]).toEqual([9, 9, 9, 9]);
  });
});
