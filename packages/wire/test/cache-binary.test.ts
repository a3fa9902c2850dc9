// Goal: the binary cache exchange (flag word 0x8001, a Felix extension) carries a get, a put and
// their answers exactly, refuses a length beyond the bytes left before it allocates, reuses a
// stream's scope only while its bytes repeat, decodes a key to exactly its bytes (bytes that are
// not UTF-8, an encoded lone surrogate among them, are InvalidUtf8Error, never U+FFFD), and
// throws nothing but WireErrors on any bytes.
// Method: encode and decode each kind; hand-built payloads; fast-check over arbitrary and
// mutated frames.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CacheFrameReader,
  FLAG_BINARY_CACHE,
  FieldRangeError,
  InvalidEnumError,
  InvalidUtf8Error,
  TrailingBytesError,
  TruncatedError,
  WireError,
  cacheScopeBytes,
  decodeCacheAnswer,
  decodeFrame,
  decodeFramePayload,
  encodeCacheGet,
  encodeCacheOk,
  encodeCachePut,
  encodeCacheValue,
  frameLayout,
} from '../src/index.js';
import { errorOf } from './helpers.js';

const scope = cacheScopeBytes('t1', 'default', 'users');
const bytes = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * seed) & 0xff);

/** The payload of a frame an encoder wrote, after checking its header names the layout. */
function payloadOf(frame: Uint8Array): Uint8Array {
  const f = decodeFrame(frame);
  expect(f.flags).toBe(FLAG_BINARY_CACHE);
  return f.payload;
}

describe('binary cache exchange', () => {
  it('each_binary_cache_kind_decodes_to_what_its_json_form_decodes_to', () => {
    expect(frameLayout(FLAG_BINARY_CACHE)).toBe('cache');
    const r = new CacheFrameReader();
    expect(r.request(payloadOf(encodeCacheGet(scope, 'ключ 😀', 2 ** 40)))).toStrictEqual({
      type: 'cache_get',
      tenant_id: 't1',
      namespace: 'default',
      cache: 'users',
      key: 'ключ 😀',
      request_id: 2 ** 40,
    });
    const value = bytes(1024, 7);
    expect(r.request(payloadOf(encodeCachePut(scope, 'k', value, 3)))).toStrictEqual({
      type: 'cache_put',
      tenant_id: 't1',
      namespace: 'default',
      cache: 'users',
      key: 'k',
      value,
      request_id: 3,
    });
    const other = cacheScopeBytes('t2', 'ns', 'sessions');
    expect(r.request(payloadOf(encodeCachePut(other, '', new Uint8Array(0), 4, 0)))).toMatchObject({
      tenant_id: 't2',
      namespace: 'ns',
      cache: 'sessions',
      key: '',
      ttl_ms: 0,
      request_id: 4,
    });
    expect(decodeCacheAnswer(payloadOf(encodeCacheValue(5, value)), 'k')).toStrictEqual({
      type: 'cache_value',
      key: 'k',
      value,
      request_id: 5,
    });
    expect(decodeCacheAnswer(payloadOf(encodeCacheValue(6, undefined)), 'k')).toStrictEqual({
      type: 'cache_value',
      key: 'k',
      request_id: 6,
    });
    expect(decodeCacheAnswer(payloadOf(encodeCacheOk(7)), 'k')).toStrictEqual({
      type: 'cache_ok',
      request_id: 7,
    });
    // A client frame through the one entry point reads as the request.
    const any = decodeFramePayload(decodeFrame(encodeCacheGet(scope, 'k', 8)));
    expect(any).toMatchObject({ layout: 'cache', message: { type: 'cache_get', key: 'k' } });
  });

  it('a_decoded_value_is_a_copy_the_frame_can_be_reused_under', () => {
    const value = bytes(64, 3);
    const frame = encodeCacheValue(1, value);
    const got = decodeCacheAnswer(payloadOf(frame), 'k') as { value: Uint8Array };
    const put = new CacheFrameReader().request(payloadOf(encodeCachePut(scope, 'k', value, 2)));
    frame.fill(0);
    expect(got.value).toStrictEqual(value);
    expect((put as { value: Uint8Array }).value).toStrictEqual(value);
  });

  it('a_request_read_from_a_node_buffer_keeps_no_view_of_it', () => {
    // A Buffer's slice() is a view: the reader's copies must not be, or rewriting the memory
    // the frame arrived in would change a kept value and the remembered scope.
    const reader = new CacheFrameReader();
    const frame = Buffer.from(payloadOf(encodeCachePut(scope, 'k', bytes(64, 3), 1)));
    const put = reader.request(frame) as { value: Uint8Array };
    const other = payloadOf(
      encodeCachePut(cacheScopeBytes('t1', 'default', 'other'), 'k', bytes(64, 5), 2),
    );
    frame.set(other.subarray(0, frame.length));
    expect(put.value).toStrictEqual(bytes(64, 3));
    expect(Buffer.isBuffer(put.value)).toBe(false);
    // The memo still holds the first scope's bytes, so a frame naming `other` is read afresh.
    expect(reader.request(Buffer.from(other))).toMatchObject({ cache: 'other' });
  });

  it('a_binary_cache_length_beyond_the_bytes_left_is_refused_before_allocating', () => {
    // A 4 GiB value declared in a few bytes: refused from the length alone.
    const answer = Uint8Array.from([3, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 9]);
    expect(errorOf(() => decodeCacheAnswer(answer, 'k'))).toBe(TruncatedError);
    const put = payloadOf(encodeCachePut(scope, 'k', bytes(8), 1));
    put.set([0xff, 0xff, 0xff, 0xff], put.length - 12);
    expect(errorOf(() => new CacheFrameReader().request(put))).toBe(TruncatedError);
    const longKey = payloadOf(encodeCacheGet(scope, 'k', 1));
    longKey[longKey.length - 3] = 0xff;
    expect(errorOf(() => new CacheFrameReader().request(longKey))).toBe(TruncatedError);
  });

  it('a_binary_cache_frame_with_a_bad_kind_flag_or_tail_gets_its_typed_error', () => {
    const get = payloadOf(encodeCacheGet(scope, 'k', 1));
    const reader = new CacheFrameReader();
    // An answer sent as a request, and a request read as an answer.
    expect(errorOf(() => reader.request(payloadOf(encodeCacheOk(1))))).toBe(InvalidEnumError);
    expect(errorOf(() => decodeCacheAnswer(get, 'k'))).toBe(InvalidEnumError);
    const badTtl = payloadOf(encodeCachePut(scope, 'k', bytes(1), 1));
    badTtl[9] = 2;
    expect(errorOf(() => reader.request(badTtl))).toBe(InvalidEnumError);
    const badFound = payloadOf(encodeCacheValue(1, undefined));
    badFound[9] = 2;
    expect(errorOf(() => decodeCacheAnswer(badFound, 'k'))).toBe(InvalidEnumError);
    const trailing = new Uint8Array(get.length + 1);
    trailing.set(get);
    expect(errorOf(() => reader.request(trailing))).toBe(TrailingBytesError);
    const badKey = payloadOf(encodeCacheGet(scope, 'kk', 1));
    badKey[badKey.length - 1] = 0xff;
    expect(errorOf(() => reader.request(badKey))).toBe(InvalidUtf8Error);
    expect(errorOf(() => encodeCacheGet(scope, 'k', -1))).toBe(FieldRangeError);
    expect(errorOf(() => encodeCacheGet(scope, 'k'.repeat(70_000), 1))).toBe(FieldRangeError);
  });

  it('a_scope_is_reused_only_while_its_bytes_repeat', () => {
    const reader = new CacheFrameReader();
    const first = reader.request(payloadOf(encodeCacheGet(scope, 'k', 1)));
    // The same length, one byte changed: read afresh, not taken from the memo.
    const near = cacheScopeBytes('t1', 'default', 'usert');
    const second = reader.request(payloadOf(encodeCacheGet(near, 'k', 2)));
    const bad = payloadOf(encodeCacheGet(near, 'k', 3));
    bad[9 + 2 + 2 + 2 + 7 + 2] = 0xff;
    expect(first).toMatchObject({ cache: 'users' });
    expect(second).toMatchObject({ cache: 'usert' });
    expect(errorOf(() => reader.request(bad))).toBe(InvalidUtf8Error);
    // A failed read left the memo as it was.
    expect(reader.request(payloadOf(encodeCacheGet(near, 'k', 4)))).toMatchObject({
      cache: 'usert',
    });
  });

  it('a_binary_cache_key_decodes_to_exactly_its_bytes_or_to_the_typed_utf8_error', () => {
    // Never U+FFFD in place of bytes that are not UTF-8: that would make two keys one.
    const reader = new CacheFrameReader();
    const getWithKey = (key: Uint8Array) => {
      const p = payloadOf(encodeCacheGet(scope, 'x'.repeat(key.length), 1)).slice();
      p.set(key, p.length - key.length); // a get ends with its key
      return p;
    };
    // An encoded lone surrogate (CESU-8's way of writing one) is not UTF-8.
    for (const bad of [
      [0xed, 0xa0, 0x80],
      [0xed, 0xbf, 0xbf],
      [0x6b, 0xff],
      [0xc0, 0x80],
    ]) {
      expect(errorOf(() => reader.request(getWithKey(Uint8Array.from(bad))))).toBe(
        InvalidUtf8Error,
      );
    }
    const fragment = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 3 }).map((t) => new TextEncoder().encode(t)),
      fc.constantFrom([0xed, 0xa0, 0x80], [0xed, 0xb0, 0x80], [0x80], [0xff], [0xe2, 0x82]),
      fc.uint8Array({ maxLength: 3 }),
    );
    const keys = fc
      .array(fragment, { maxLength: 5 })
      .map((parts) => Uint8Array.from(parts.flatMap((b) => Array.from(b))));
    fc.assert(
      fc.property(keys, (key) => {
        let decoded: string;
        try {
          decoded = (reader.request(getWithKey(key)) as { key: string }).key;
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidUtf8Error);
          return;
        }
        expect(new TextEncoder().encode(decoded)).toEqual(key);
      }),
      { numRuns: 2000 },
    );
  });

  it('binary_cache_decoders_throw_only_wire_errors_on_arbitrary_and_mutated_bytes', () => {
    const valid = fc
      .tuple(
        fc.string({ maxLength: 8 }),
        fc.string({ maxLength: 8 }),
        fc.uint8Array({ maxLength: 40 }),
        fc.nat({ max: 2 ** 40 }),
        fc.option(fc.nat({ max: 2 ** 40 }), { nil: undefined }),
      )
      .chain(([key, cache, value, rid, ttl]) => {
        const s = cacheScopeBytes('t1', 'default', cache);
        return fc.constantFrom(
          encodeCacheGet(s, key, rid),
          encodeCachePut(s, key, value, rid, ttl),
          encodeCacheValue(rid, value),
          encodeCacheValue(rid, undefined),
          encodeCacheOk(rid),
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
    const reader = new CacheFrameReader();
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), valid, mutated, cut), (p) => {
        for (const decode of [() => reader.request(p), () => decodeCacheAnswer(p, 'k')]) {
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
