// Goal: no encoder of this package turns a string holding a lone UTF-16 surrogate into other
// bytes. UTF-8 has none for one, and TextEncoder writes U+FFFD's (JSON.stringify an escape no
// UTF-8 peer keeps), so 'k\ud800' and 'k\ufffd' would reach the broker as one key. Each kind of
// encoder path (binary cache and group scopes and keys, binary publish strings, an event batch's
// publisher, the JSON codec, the quick cache codecs, internal frames) must throw
// LoneSurrogateError naming the field instead, and still write a well-formed non-ASCII string
// (U+FFFD itself, a surrogate pair) as it is. Method: call each encoder directly.
import { describe, expect, it } from 'vitest';
import {
  CacheFrameReader,
  LoneSurrogateError,
  type Message,
  WireError,
  cacheScopeBytes,
  decodeFrame,
  decodeMessage,
  encodeCacheGet,
  encodeCachePut,
  encodeEventBatch,
  encodeGetRequest,
  encodeGroupPoll,
  encodeInternalMessage,
  encodeMessage,
  encodeMessagePayload,
  encodePublishAck,
  encodePublishBatch,
  encodePutRequest,
  getRequestPrefix,
  groupScopeBytes,
  messageJson,
  putRequestPrefix,
} from '../src/index.js';

/** Lone surrogates: high and low, alone, at the end, and a pair's half cut off. */
const LONE = ['k\ud800', 'k\udbff', '\udc00', 'k\udfffx', 'k\ufffd\ud83d', '\ude00\ud83d'];
/** Well-formed strings that are not ASCII: U+FFFD itself and a surrogate pair. */
const WELL_FORMED = ['k\ufffd', 'k\ud83d\ude00'];

/** The refusal `encode` throws: LoneSurrogateError naming `what`, at the first lone one. */
function refused(encode: () => unknown, what: string, text: string): void {
  let err: unknown;
  try {
    encode();
  } catch (e) {
    err = e;
  }
  expect(err, `${what} ${JSON.stringify(text)}`).toBeInstanceOf(LoneSurrogateError);
  const e = err as LoneSurrogateError;
  expect(e).toBeInstanceOf(WireError);
  expect(e.code).toBe('FELIX_WIRE_LONE_SURROGATE');
  expect(e.what).toBe(what);
  expect(e.index).toBe(firstLone(text));
}

/** The UTF-16 index of the first lone surrogate: the first code point of one unit that is a
 *  surrogate (a string's iterator yields a pair as one code point of two units). */
function firstLone(text: string): number {
  let at = 0;
  for (const c of text) {
    if (c.length === 1 && c >= '\ud800' && c <= '\udfff') return at;
    at += c.length;
  }
  return -1;
}

describe('lone surrogates in encoded strings', () => {
  it('a_binary_cache_frame_refuses_a_key_or_name_with_a_lone_surrogate', () => {
    const scope = cacheScopeBytes('t1', 'default', 'kv');
    for (const s of LONE) {
      refused(() => encodeCacheGet(scope, s, 1), 'key', s);
      refused(() => encodeCachePut(scope, s, new Uint8Array(1), 1), 'key', s);
      refused(() => cacheScopeBytes(s, 'default', 'kv'), 'tenant', s);
      refused(() => cacheScopeBytes('t1', 'default', s), 'cache', s);
    }
    const reader = new CacheFrameReader();
    for (const key of WELL_FORMED) {
      const { payload } = decodeFrame(encodeCacheGet(scope, key, 7));
      expect(reader.request(payload)).toMatchObject({ type: 'cache_get', key, request_id: 7 });
    }
  });

  it('a_binary_group_scope_refuses_a_name_with_a_lone_surrogate', () => {
    const scope = groupScopeBytes('t1', 'default', 's', 0, 'g');
    const ask = { maxRecords: 1, waitMs: 0, reclaim: false };
    for (const s of LONE) {
      refused(() => groupScopeBytes('t1', 'default', s, 0, 'g'), 'stream', s);
      refused(() => groupScopeBytes('t1', 'default', 's', 0, s), 'group', s);
      refused(() => encodeGroupPoll(scope, { ...ask, consumer: s }, 1), 'consumer', s);
    }
    for (const name of WELL_FORMED)
      expect(() => groupScopeBytes('t1', 'd', 's', 0, name)).not.toThrow();
  });

  it('a_binary_publish_batch_or_ack_refuses_a_string_with_a_lone_surrogate', () => {
    const batch = { tenantId: 't1', namespace: 'default', stream: 's', payloads: [] };
    for (const s of LONE) {
      refused(() => encodePublishBatch({ ...batch, stream: s }), 'stream', s);
      refused(() => encodePublishBatch({ ...batch, tenantId: s }), 'tenant', s);
      refused(() => encodePublishAck({ status: 'error', requestId: 1, message: s }), 'message', s);
      const owner = { nodeId: s, generation: 1 };
      refused(
        () => encodePublishAck({ status: 'ok', requestId: 1, message: '', owner }),
        'owner node_id',
        s,
      );
    }
    for (const stream of WELL_FORMED) {
      expect(() => encodePublishBatch({ ...batch, stream })).not.toThrow();
    }
  });

  it('an_event_batch_refuses_a_publisher_with_a_lone_surrogate', () => {
    for (const s of LONE)
      refused(() => encodeEventBatch({ payloads: [], publisher: s }), 'publisher', s);
    for (const publisher of WELL_FORMED) {
      expect(() => encodeEventBatch({ payloads: [], publisher })).not.toThrow();
    }
  });

  it('the_json_codec_refuses_a_name_with_a_lone_surrogate', () => {
    const subscribe = (stream: string) =>
      ({ type: 'subscribe', tenant_id: 't1', namespace: 'default', stream }) as Message;
    for (const s of LONE) {
      for (const encode of [messageJson, encodeMessage, encodeMessagePayload]) {
        refused(() => encode(subscribe(s)), 'subscribe.stream', s);
        // cache_event has a fast path of its own.
        const event = { type: 'cache_event', key: s, offset: 1 } as Message;
        refused(() => encode(event), 'cache_event.key', s);
        const refusal = { not_leader: { node_id: s } };
        const refusedMsg = { type: 'publish_refused', request_id: 1, reason: refusal, message: '' };
        refused(() => encode(refusedMsg as Message), 'publish_refused.reason.node_id', s);
        // An extension body's strings and keys, however deep.
        for (const body of [{ a: [s] }, { [s]: 1 }]) {
          const ext = { type: 'extension', name: 'x', body } as Message;
          refused(() => encode(ext), 'extension.body', s);
        }
      }
    }
    for (const stream of WELL_FORMED) {
      const payload = decodeFrame(encodeMessage(subscribe(stream))).payload;
      expect(decodeMessage(payload)).toMatchObject({ stream });
    }
  });

  it('the_quick_cache_get_and_put_refuse_a_key_or_scope_with_a_lone_surrogate', () => {
    const get = getRequestPrefix('t1', 'default', 'kv');
    const put = putRequestPrefix('t1', 'default', 'kv');
    const scope = { tenant_id: 't1', namespace: 'default', cache: 'kv' };
    const value = new Uint8Array(1);
    for (const s of LONE) {
      refused(() => encodeGetRequest(get, s, 1), 'cache_get.key', s);
      refused(() => encodePutRequest(put, scope, s, value, 1), 'cache_put.key', s);
      refused(() => getRequestPrefix('t1', s, 'kv'), 'cache_get.namespace', s);
      refused(() => putRequestPrefix('t1', 'default', s), 'cache_put.cache', s);
    }
    for (const key of WELL_FORMED) {
      const sent = decodeFrame(encodeGetRequest(get, key, 3).frame).payload;
      expect(decodeMessage(sent)).toMatchObject({ type: 'cache_get', key });
      const putSent = decodeFrame(encodePutRequest(put, scope, key, value, 3)).payload;
      expect(decodeMessage(putSent)).toMatchObject({ type: 'cache_put', key });
    }
  });

  it('an_internal_frame_refuses_an_identifier_with_a_lone_surrogate', () => {
    const shard = { tenantId: 't1', namespace: 'default', stream: 's', shard: 0, generation: 1 };
    const base = { kind: 'ForwardPublish' as const, correlationId: 1, ack: 0, payloads: [] };
    for (const s of LONE) {
      const hello = {
        kind: 'HelloCapable',
        correlationId: 1,
        nodeId: s,
        capabilities: 0n,
      } as const;
      refused(() => encodeInternalMessage(hello), 'node_id', s);
      refused(
        () => encodeInternalMessage({ ...base, shard: { ...shard, stream: s } }),
        'stream',
        s,
      );
    }
    for (const stream of WELL_FORMED) {
      expect(() => encodeInternalMessage({ ...base, shard: { ...shard, stream } })).not.toThrow();
    }
  });
});
