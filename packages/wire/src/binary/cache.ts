/**
 * Binary cache exchange (flag word 0x8001, a Felix extension negotiated with
 * FEATURE_HI_CACHE_BINARY): `cache_get` and `cache_put` requests and their `cache_value` and
 * `cache_ok` answers without JSON text, base64 or the echoed scope. Layout, big-endian, after a
 * u8 kind:
 *
 *   1 get:   u64 request_id, scope, u16 key_len, key
 *   2 put:   u64 request_id, u8 has_ttl (0 or 1), [u64 ttl_ms], scope, u16 key_len, key,
 *            u32 value_len, value
 *   3 value: u64 request_id, u8 found (0 or 1), [u32 value_len, value]
 *   4 ok:    u64 request_id
 *
 * where scope is `u16 tenant_len, tenant, u16 namespace_len, namespace, u16 cache_len, cache`
 * (UTF-8). An answer names no key: the reader takes the key of the request it answers. Every
 * length is checked against the bytes left before anything is allocated, and a decoder throws
 * only WireErrors; a value is copied out of the frame, so nothing keeps the frame's chunk alive.
 */
import { copyBytes, ownBytes } from '@felix/common';
import { FieldRangeError, InvalidEnumError } from '../errors.js';
import { FLAG_BINARY_CACHE } from '../flags.js';
import { writeFrameHeader } from '../frame/header.js';
import {
  FrameCursor,
  checkU64,
  fieldBytes,
  putU16Bytes,
  putU32,
  putU64,
  sameBytes,
} from './cursor.js';
import type {
  CacheGetMessage,
  CacheOkMessage,
  CachePutMessage,
  CacheValueMessage,
} from '../json/message-types.js';
import {
  BINARY_STRING_BYTES_MAX,
  CACHE_SCOPE_MEMO_BYTES_MAX,
  FRAME_HEADER_BYTES,
} from '../limits.js';

export const CACHE_KIND_GET = 1;
export const CACHE_KIND_PUT = 2;
export const CACHE_KIND_VALUE = 3;
export const CACHE_KIND_OK = 4;

const WHAT = 'binary cache frame';
const UTF8 = new TextEncoder();
/** kind + request id, right after the frame header. */
const HEAD_BYTES = FRAME_HEADER_BYTES + 9;

export type CacheRequest = CacheGetMessage | CachePutMessage;
export type CacheAnswer = CacheValueMessage | CacheOkMessage;

/** The scope's three u16-prefixed strings, encoded once per cache and scope by the client. */
export function cacheScopeBytes(tenant: string, namespace: string, cache: string): Uint8Array {
  const parts = [tenant, namespace, cache].map((s, i) => fieldBytes(s, SCOPE_FIELDS[i]!));
  const out = new Uint8Array(parts.reduce((n, p) => n + 2 + p.length, 0));
  let at = 0;
  for (const p of parts) at = putU16Bytes(out, at, p);
  return out;
}

const SCOPE_FIELDS = ['tenant', 'namespace', 'cache'];

/** A binary `cache_get` frame (header included). */
export function encodeCacheGet(scope: Uint8Array, key: string, requestId: number): Uint8Array {
  const k = keyLength(key);
  const frame = ownBytes(HEAD_BYTES + scope.length + 2 + k);
  const at = head(frame, CACHE_KIND_GET, requestId);
  frame.set(scope, at);
  writeKey(frame, at + scope.length, key, k);
  return frame;
}

/** A binary `cache_put` frame (header included); `ttlMs` undefined means no expiry. */
export function encodeCachePut(
  scope: Uint8Array,
  key: string,
  value: Uint8Array,
  requestId: number,
  ttlMs?: number,
): Uint8Array {
  const k = keyLength(key);
  if (ttlMs !== undefined) checkU64(ttlMs, 'ttl_ms');
  if (value.length > 0xffff_ffff) throw new FieldRangeError('value', 'does not fit a u32 length');
  const ttlBytes = ttlMs === undefined ? 1 : 9;
  const size = HEAD_BYTES + ttlBytes + scope.length + 2 + k + 4 + value.length;
  // From Buffer's pool where it fits: the frame lives only until the transport has written it.
  const frame = ownBytes(size);
  let at = head(frame, CACHE_KIND_PUT, requestId);
  frame[at++] = ttlMs === undefined ? 0 : 1;
  if (ttlMs !== undefined) at = putU64(frame, at, ttlMs);
  frame.set(scope, at);
  at = writeKey(frame, at + scope.length, key, k);
  putU32(frame, at, value.length);
  frame.set(value, at + 4);
  return frame;
}

/** A binary `cache_value` frame: the value, or a miss when `value` is undefined. */
export function encodeCacheValue(requestId: number, value: Uint8Array | undefined): Uint8Array {
  const size = HEAD_BYTES + 1 + (value === undefined ? 0 : 4 + value.length);
  const frame = ownBytes(size);
  let at = head(frame, CACHE_KIND_VALUE, requestId);
  if (value === undefined) {
    frame[at] = 0;
    return frame;
  }
  frame[at++] = 1;
  putU32(frame, at, value.length);
  frame.set(value, at + 4);
  return frame;
}

/** A binary `cache_ok` frame. */
export function encodeCacheOk(requestId: number): Uint8Array {
  const frame = ownBytes(HEAD_BYTES);
  head(frame, CACHE_KIND_OK, requestId);
  return frame;
}

/**
 * Reads binary cache frames on one stream. The scope bytes of the last request and their
 * strings are kept: a stream names the same cache again and again, and comparing some dozens of
 * bytes costs less than decoding three strings.
 */
export class CacheFrameReader {
  private scopeBytes: Uint8Array | null = null;
  private tenant = '';
  private namespace = '';
  private cache = '';

  /** A request (the broker's side); anything else is a WireError. */
  request(p: Uint8Array): CacheRequest {
    const c = new FrameCursor(p, WHAT);
    const kind = c.u8('kind');
    if (kind !== CACHE_KIND_GET && kind !== CACHE_KIND_PUT) {
      throw new InvalidEnumError(`${WHAT} request kind`, kind);
    }
    const requestId = c.u64('request_id');
    let ttl: number | undefined;
    if (kind === CACHE_KIND_PUT) {
      const hasTtl = c.u8('has_ttl');
      if (hasTtl > 1) throw new InvalidEnumError(`${WHAT} has_ttl`, hasTtl);
      if (hasTtl === 1) ttl = c.u64('ttl_ms');
    }
    this.scope(c);
    const key = c.text('key');
    if (kind === CACHE_KIND_GET) {
      c.end();
      const get: CacheGetMessage = {
        type: 'cache_get',
        tenant_id: this.tenant,
        namespace: this.namespace,
        cache: this.cache,
        key,
        request_id: requestId,
      };
      return get;
    }
    const len = c.u32('value_len');
    // Its own allocation: the cache keeps the value.
    const value = copyBytes(c.bytes(len, 'value'));
    c.end();
    const msg: CachePutMessage = {
      type: 'cache_put',
      tenant_id: this.tenant,
      namespace: this.namespace,
      cache: this.cache,
      key,
      value,
      request_id: requestId,
    };
    if (ttl !== undefined) msg.ttl_ms = ttl;
    return msg;
  }

  /** Reads the scope, reusing the last one's strings when its bytes are the same. */
  private scope(c: FrameCursor): void {
    const from = c.at;
    c.skipU16Bytes('tenant');
    c.skipU16Bytes('namespace');
    c.skipU16Bytes('cache');
    const bytes = c.p.subarray(from, c.at);
    const memo = this.scopeBytes;
    if (memo !== null && sameBytes(memo, bytes)) return;
    const r = new FrameCursor(bytes, WHAT);
    const tenant = r.text('tenant');
    const namespace = r.text('namespace');
    const cache = r.text('cache');
    this.tenant = tenant;
    this.namespace = namespace;
    this.cache = cache;
    this.scopeBytes = bytes.length <= CACHE_SCOPE_MEMO_BYTES_MAX ? copyBytes(bytes) : null;
  }
}

/**
 * An answer (the client's side) to the request on `key`: `cache_value` carrying `key`, or
 * `cache_ok`. Anything else is a WireError.
 */
export function decodeCacheAnswer(p: Uint8Array, key: string): CacheAnswer {
  const c = new FrameCursor(p, WHAT);
  const kind = c.u8('kind');
  const requestId = c.u64('request_id');
  if (kind === CACHE_KIND_OK) {
    c.end();
    return { type: 'cache_ok', request_id: requestId };
  }
  if (kind !== CACHE_KIND_VALUE) throw new InvalidEnumError(`${WHAT} answer kind`, kind);
  const found = c.u8('found');
  if (found > 1) throw new InvalidEnumError(`${WHAT} found`, found);
  const msg: CacheValueMessage = { type: 'cache_value', key, request_id: requestId };
  if (found === 1) {
    const view = c.bytes(c.u32('value_len'), 'value');
    // Room from Buffer's pool where there is one: the caller owns the value.
    const value = ownBytes(view.length);
    value.set(view);
    msg.value = value;
  }
  c.end();
  return msg;
}

/** The key's UTF-8 length: its length when it is ASCII, else its encoding's (checked to fit and
 *  to hold no lone surrogate, so `writeKey`'s encoder writes it as it is). */
function keyLength(key: string): number {
  for (let i = 0; i < key.length; i++) {
    if (key.charCodeAt(i) >= 0x80) return fieldBytes(key, 'key').length;
  }
  if (key.length > BINARY_STRING_BYTES_MAX) fieldBytes(key, 'key');
  return key.length;
}

/** Writes the u16-prefixed key of `length` UTF-8 bytes: ASCII code by code (no array of its
 *  own per request), anything else through the encoder. */
function writeKey(frame: Uint8Array, at: number, key: string, length: number): number {
  frame[at] = length >>> 8;
  frame[at + 1] = length & 0xff;
  at += 2;
  if (length === key.length) {
    for (let i = 0; i < length; i++) frame[at + i] = key.charCodeAt(i);
  } else {
    UTF8.encodeInto(key, frame.subarray(at, at + length));
  }
  return at + length;
}

/** Writes the frame header, kind and request id; returns where the body goes on. */
function head(frame: Uint8Array, kind: number, requestId: number): number {
  checkU64(requestId, 'request_id');
  writeFrameHeader(frame, 0, FLAG_BINARY_CACHE, frame.length - FRAME_HEADER_BYTES);
  frame[FRAME_HEADER_BYTES] = kind;
  return putU64(frame, FRAME_HEADER_BYTES + 1, requestId);
}
