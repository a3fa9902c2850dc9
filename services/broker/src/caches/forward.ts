/**
 * The `forward` half of the cache and counter write handlers (session/handler.ts): a
 * `cache_put`, `cache_delete` or `counter_add` whose shard another broker leads is sent there
 * (cluster/forwarder.ts, through the session's ForwardingSlot) and answered, in request order, with the message the owner's result
 * stands for (`cache_ok`, `cache_value` with the deleted value, `counter_value`). Without a
 * forwarder (no internal listener) the request is refused `not_leader`, naming the leader.
 */
import { CACHE_OP, type Message } from '@felix/wire';
import type { ProjectionAnswers } from './answers.js';
import { cacheValueOf } from './cache-requests.js';
import type { ForwardingSlot } from '../session/context.js';
import type { Outcome, RequestContext } from '../session/handler.js';
import { type NotLeaderRefusal, checkTenant } from '../session/refusal.js';

type Msg<T extends Message['type']> = Extract<Message, { type: T }>;
export type ForwardedWrite = Msg<'cache_put'> | Msg<'cache_delete'> | Msg<'counter_add'>;

/**
 * The `forward` of a cache or counter write handler, answering through `answers`.
 * `hasDefaultTtl` says whether a put's cache gives puts without a TTL a default one (this
 * broker's catalog): only there does an explicit `ttl_ms: 0` differ from none given.
 */
export function forwardCacheWrite<M extends ForwardedWrite>(
  slot: ForwardingSlot,
  answers: ProjectionAnswers,
  hasDefaultTtl: (msg: Msg<'cache_put'>) => boolean = () => false,
): (msg: M, rc: RequestContext, to: NotLeaderRefusal) => Outcome | Promise<Outcome> {
  return (msg, rc, to) =>
    answers.queue(rc, msg, (m, r) => sendCacheWrite(slot, m, r, to, hasDefaultTtl));
}

/**
 * A forwarded put's TTL that says "never expires" (the client's explicit `ttl_ms: 0`). The
 * internal frame's `ttl_ms` reads 0 as none given (the reference's meaning), for which the owner
 * applies the cache's `default_ttl_ms`, so on a cache with a default an explicit 0 travels as
 * this value, which no put may name (CACHE_TTL_MS_MAX is 2^45). Elsewhere it travels as 0: an
 * owner of an older release, which refuses this value, then stores the put as meant.
 */
export const FORWARD_TTL_NEVER_MS = Number.MAX_SAFE_INTEGER;

/** The forwarded `ttl_ms` of a put that gave `ttl` (undefined: none given). */
export function forwardedTtl(ttl: number | undefined, hasDefault: boolean): number {
  if (ttl === undefined) return 0;
  if (ttl === 0) return hasDefault ? FORWARD_TTL_NEVER_MS : 0;
  return ttl;
}

async function sendCacheWrite(
  slot: ForwardingSlot,
  msg: ForwardedWrite,
  rc: RequestContext,
  to: NotLeaderRefusal,
  hasDefaultTtl: (msg: Msg<'cache_put'>) => boolean,
): Promise<Message> {
  checkTenant(rc.auth, msg.tenant_id);
  const forwarder = slot.current;
  if (forwarder === null) throw to;
  const op =
    msg.type === 'cache_put'
      ? {
          op: CACHE_OP.Put,
          key: msg.key,
          ttlMs: forwardedTtl(msg.ttl_ms, hasDefaultTtl(msg)),
          value: msg.value,
        }
      : msg.type === 'cache_delete'
        ? { op: CACHE_OP.Delete, key: msg.key, ttlMs: 0, value: new Uint8Array(0) }
        : { op: CACHE_OP.CounterAdd, key: msg.key, ttlMs: 0, value: writeI64(msg.delta) };
  const value = await forwarder.cacheOp(to, op, rc.grant.token, rc.answers);
  return answerOf(msg, value);
}

/** The client's answer to a forwarded write, as the owner would have answered it. */
function answerOf(msg: ForwardedWrite, value: Uint8Array | undefined): Message {
  if (msg.type === 'cache_put') {
    return msg.request_id === undefined
      ? { type: 'ok' }
      : { type: 'cache_ok', request_id: msg.request_id };
  }
  if (msg.type === 'counter_add') {
    return {
      type: 'counter_value',
      ...(value !== undefined && value.byteLength === 8 ? { value: readI64(value) } : {}),
      request_id: msg.request_id,
    };
  }
  return cacheValueOf(msg, value);
}

/** A counter value or delta as a forward carries it: i64, big-endian. */
export function writeI64(v: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, v);
  return out;
}

export function readI64(b: Uint8Array): bigint {
  return new DataView(b.buffer, b.byteOffset, b.byteLength).getBigInt64(0);
}
