/**
 * A `cache_get` read without the general JSON decoder, when it is in the exact form the client's
 * encoder writes (packages/client/src/projections/get-codec.ts):
 *
 *   {"type":"cache_get","tenant_id":S,"namespace":S,"cache":S,"key":S,"request_id":N}
 *
 * or the same without `,"request_id":N`: no whitespace, these fields once each in this order,
 * every string S without escapes or control characters (valid UTF-8), N a plain integer of at
 * most 15 digits. Anything else (another order, an extra or repeated field, whitespace, an
 * escape, a long or odd number, bad UTF-8, a truncated frame) answers undefined, and the session
 * decodes the frame with @felix/wire's decoder, which keeps every check and typed error. What
 * this reads is therefore exactly what `decodeMessage` answers for the same bytes
 * (`the_get_reader_agrees_with_the_codec_on_arbitrary_and_mutated_frames`).
 *
 * It never throws and reads each byte at most twice (one scan, one decode), so its cost is
 * bounded by the frame, which the frame reader already bounded.
 */
import { type Message, asciiBytes as ascii, bytesStartWith as startsWith } from '@felix/wire';
import { GET_SCOPE_MEMO_BYTES_MAX } from '../limits.js';

export type GetRequest = Extract<Message, { type: 'cache_get' }>;

const OPEN = ascii('{"type":"cache_get","tenant_id":"');
const NAMESPACE = ascii('","namespace":"');
const CACHE = ascii('","cache":"');
const KEY = ascii('","key":"');
const RID = ascii('","request_id":');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const CLOSE = 0x7d;
/** Digits of a request id taken here: 15 always fit a safe integer (the codec's u64 bound). */
const RID_DIGITS_MAX = 15;

// ignoreBOM: a string that starts with U+FEFF keeps it, as it does inside the whole payload.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice: unknown }).latin1Slice as (
  this: Uint8Array,
  start: number,
  end: number,
) => string;

/**
 * Reads get requests on one stream. The scope (tenant, namespace, cache) of consecutive gets is
 * usually the same bytes: it is decoded once and its strings reused while the bytes match.
 */
export class GetRequestReader {
  private scope: Uint8Array | null = null;
  private tenant = '';
  private namespace = '';
  private cache = '';

  /** The request, or undefined when the payload is not in the exact form (see above). */
  read(p: Uint8Array): GetRequest | undefined {
    if (!startsWith(p, 0, OPEN)) return undefined;
    const tenantAt = OPEN.length;
    const tenantEnd = stringEnd(p, tenantAt);
    if (tenantEnd < 0 || !startsWith(p, tenantEnd, NAMESPACE)) return undefined;
    const namespaceAt = tenantEnd + NAMESPACE.length;
    const namespaceEnd = stringEnd(p, namespaceAt);
    if (namespaceEnd < 0 || !startsWith(p, namespaceEnd, CACHE)) return undefined;
    const cacheAt = namespaceEnd + CACHE.length;
    const cacheEnd = stringEnd(p, cacheAt);
    if (cacheEnd < 0 || !startsWith(p, cacheEnd, KEY)) return undefined;
    const keyAt = cacheEnd + KEY.length;
    const keyEnd = stringEnd(p, keyAt);
    if (keyEnd < 0) return undefined;
    let requestId: number | undefined;
    if (keyEnd + 2 === p.length && p[keyEnd + 1] === CLOSE) {
      requestId = undefined;
    } else {
      if (!startsWith(p, keyEnd, RID)) return undefined;
      requestId = digitsValue(p, keyEnd + RID.length, p.length - 1);
      if (requestId === undefined || p[p.length - 1] !== CLOSE) return undefined;
    }
    const key = text(p, keyAt, keyEnd);
    if (key === undefined) return undefined;
    if (!this.readScope(p, tenantAt, tenantEnd, namespaceAt, namespaceEnd, cacheAt, cacheEnd))
      return undefined;
    const msg: GetRequest = {
      type: 'cache_get',
      tenant_id: this.tenant,
      namespace: this.namespace,
      cache: this.cache,
      key,
    };
    if (requestId !== undefined) msg.request_id = requestId;
    return msg;
  }

  /** Sets tenant, namespace and cache (reused while their bytes repeat); false on bad UTF-8. */
  private readScope(
    p: Uint8Array,
    tenantAt: number,
    tenantEnd: number,
    namespaceAt: number,
    namespaceEnd: number,
    cacheAt: number,
    cacheEnd: number,
  ): boolean {
    const memo = this.scope;
    if (memo !== null && memo.length === cacheEnd - tenantAt && startsWith(p, tenantAt, memo)) {
      return true;
    }
    const tenant = text(p, tenantAt, tenantEnd);
    const namespace = text(p, namespaceAt, namespaceEnd);
    const cache = text(p, cacheAt, cacheEnd);
    if (tenant === undefined || namespace === undefined || cache === undefined) return false;
    this.tenant = tenant;
    this.namespace = namespace;
    this.cache = cache;
    this.scope =
      cacheEnd - tenantAt <= GET_SCOPE_MEMO_BYTES_MAX ? p.slice(tenantAt, cacheEnd) : null;
    return true;
  }
}

/**
 * Where the string starting at `at` (just after its opening quote) ends: the index of its
 * closing quote, or -1 when it holds an escape or a control character or is unterminated.
 */
function stringEnd(p: Uint8Array, at: number): number {
  for (let i = at; i < p.length; i++) {
    const c = p[i]!;
    if (c === QUOTE) return i;
    if (c === BACKSLASH || c < 0x20) return -1;
  }
  return -1;
}

/** p[from, to) as a string: ASCII directly, anything else through strict UTF-8. */
function text(p: Uint8Array, from: number, to: number): string | undefined {
  for (let i = from; i < to; i++) {
    if (p[i]! >= 0x80) {
      try {
        return UTF8.decode(p.subarray(from, to));
      } catch {
        return undefined; // the codec reports the invalid UTF-8
      }
    }
  }
  return latin1Slice.call(p, from, to);
}

/** The integer written in p[from, to) as plain digits (no sign, no leading zero), else undefined. */
function digitsValue(p: Uint8Array, from: number, to: number): number | undefined {
  const n = to - from;
  if (n < 1 || n > RID_DIGITS_MAX || (n > 1 && p[from] === 0x30)) return undefined;
  let v = 0;
  for (let i = from; i < to; i++) {
    const d = p[i]! - 0x30;
    if (d < 0 || d > 9) return undefined;
    v = v * 10 + d;
  }
  return v;
}
