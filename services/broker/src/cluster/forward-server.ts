/**
 * The owner's side of forwarding: a write another broker forwarded over the internal listener.
 * The owner trusts the sending broker for nothing but the bytes: it verifies the client's token
 * (the broker's Authenticator, as at a client's `auth`) and checks its permissions (the
 * connection grant's check, as at admission), then judges the route by generation
 * (@felix/router `judgeForward`): equal generation and serving → it does the write; the sender
 * behind, or this broker not the leader → `NotLeader` naming the leader it knows (a forward is
 * never relayed); this broker behind → `StaleRoute`. The write itself is the one a client's
 * request makes (the shard's publish, the cache requests' put, delete and counter add).
 */
import { judgeForward } from '@felix/router';
import {
  CACHE_OP,
  type ForwardCacheOpBody,
  type ForwardPublishBody,
  INTERNAL_ERROR,
  INTERNAL_KIND,
  type InternalFrame,
  type Message,
  type ShardRef,
  decodeInternalMessage,
  encodeInternalMessage,
} from '@felix/wire';
import type { Logger } from 'pino';
import { shardKey } from './feed-items.js';
import { cacheGet, cachePut } from '../caches/cache-requests.js';
import type { CacheService } from '../caches/cache-service.js';
import { FORWARD_TTL_NEVER_MS, readI64, writeI64 } from '../caches/forward.js';
import { ForwardRefusedError, QuorumAbandonedError, QuorumTimeoutError } from '../errors.js';
import { QUORUM_WAITING_BATCHES_MAX } from '../limits.js';
import { counterOp } from '../counters/handlers.js';
import type { BrokerMetrics } from '../metrics.js';
import { type Access, REQUEST_ACCESS } from '../session/access.js';
import type { Authenticator } from '../session/authenticator.js';
import { ConnectionGrant, type Principal } from '../session/grant.js';
import type { Negotiated } from '../session/negotiation.js';
import { Refusal } from '../session/refusal.js';
import type { StreamRuntime } from '../streams/shard.js';
import type { ShardKind } from './shard-table.js';

/** The internal kinds a forward arrives as (the rest are replication's). */
const FORWARD_KINDS: ReadonlySet<number> = new Set([
  INTERNAL_KIND.ForwardPublish,
  INTERNAL_KIND.ForwardCacheOp,
  INTERNAL_KIND.AuthorizedForwardPublish,
  INTERNAL_KIND.AuthorizedForwardCacheOp,
]);

export function isForwardKind(kind: number): boolean {
  return FORWARD_KINDS.has(kind);
}

export interface ForwardServerDeps {
  selfId: string;
  authenticator: Authenticator;
  /** What this broker knows of a shard (cluster/shard-table.ts `routeView`). */
  route: (
    kind: ShardKind,
    t: string,
    ns: string,
    name: string,
    shard: number,
  ) => { view: { leader: string; generation: number } | undefined; serving: boolean };
  /** Whether this broker's lease has lapsed (it stops writing: cluster/shard-table.ts). */
  /** Why this broker may not write shard `key` now (`lease_starting`, `lease_deposed`,
   *  `lease_lapsed`, `moving`: transfers.ts); null while its lease is held. */
  leaseGap: (key: string) => string | null;
  /** A node's internal address (named in `NotLeader`). */
  peerAddress: (nodeId: string) => string | undefined;
  streams: (t: string, ns: string, name: string) => StreamRuntime | undefined;
  caches: CacheService;
  metrics: BrokerMetrics;
  draining: () => boolean;
  log: Logger;
}

const TEXT = new TextDecoder();

export class ForwardServer {
  constructor(private readonly deps: ForwardServerDeps) {}

  /** Answers one forward frame (decoding failures throw: the listener resets the stream). */
  async handle(frame: InternalFrame): Promise<Uint8Array> {
    const m = decodeInternalMessage(frame);
    if (m.kind === 'AuthorizedForwardPublish' || m.kind === 'ForwardPublish')
      return this.answer(m, () => this.publish(m));
    if (m.kind === 'AuthorizedForwardCacheOp' || m.kind === 'ForwardCacheOp')
      return this.answer(m, () => this.cacheOp(m));
    throw new ForwardRefusedError(INTERNAL_ERROR.Malformed, `kind ${m.kind} is not a forward`);
  }

  /** Runs a forward; its refusal (or any failure) becomes the error answer of its kind. */
  private async answer(
    m: ForwardPublishBody | ForwardCacheOpBody,
    run: () => Promise<Uint8Array>,
  ): Promise<Uint8Array> {
    const publish = m.kind === 'AuthorizedForwardPublish' || m.kind === 'ForwardPublish';
    const kind = publish ? 'ForwardPublishError' : 'ForwardCacheError';
    try {
      return await run();
    } catch (err) {
      const e = internalErrorOf(err);
      if (e.code === INTERNAL_ERROR.StorageFailed)
        this.deps.log.warn({ err, shard: m.shard }, 'forwarded write failed');
      return encodeInternalMessage({ kind, correlationId: m.correlationId, ...e });
    }
  }

  /** The principal of the forward's token, allowed `access` on `req` (as a client would be). */
  private async authorize(m: ForwardPublishBody | ForwardCacheOpBody): Promise<ConnectionGrant> {
    if (m.credential === undefined || m.credential.length === 0)
      throw new ForwardRefusedError(
        INTERNAL_ERROR.Unauthorized,
        "a forward must carry the client's token",
      );
    let principal: Principal;
    try {
      principal = await this.deps.authenticator.verify(TEXT.decode(m.credential), m.shard.tenantId);
    } catch (err) {
      throw new ForwardRefusedError(INTERNAL_ERROR.Unauthorized, (err as Error).message);
    }
    const grant = new ConnectionGrant(
      principal,
      () => undefined,
      (action) => this.deps.metrics.requestsForbidden.inc({ action }),
    );
    // Checked once, now: no timer may outlive this forward.
    grant.stop();
    return grant;
  }

  /** Throws the answer a forward gets when this broker must not do it (NotLeader, stale, …). */
  private judge(kind: ShardKind, ref: ShardRef, correlationId: number): Uint8Array | null {
    if (this.deps.draining()) throw new ForwardRefusedError(INTERNAL_ERROR.Unavailable, 'draining');
    const { view, serving } = this.deps.route(
      kind,
      ref.tenantId,
      ref.namespace,
      ref.stream,
      ref.shard,
    );
    const verdict = judgeForward(this.deps.selfId, view, serving, ref.generation);
    switch (verdict.kind) {
      case 'serve':
        return this.leaseGap(shardKey(kind, ref.tenantId, ref.namespace, ref.stream, ref.shard));
      case 'not_leader':
        return encodeInternalMessage({
          kind: 'NotLeader',
          correlationId,
          nodeId: verdict.leader,
          advertiseAddr: this.deps.peerAddress(verdict.leader) ?? '',
          generation: verdict.generation,
        });
      case 'stale_route':
        throw new ForwardRefusedError(
          INTERNAL_ERROR.StaleRoute,
          `generation ${ref.generation} is newer than ${verdict.known}, the one known here`,
        );
      default:
        throw new ForwardRefusedError(INTERNAL_ERROR.Unavailable, verdict.reason);
    }
  }

  /** Null while this broker holds its lease; else throws the refusal naming why it does not. */
  private leaseGap(key: string): null {
    const gap = this.deps.leaseGap(key);
    if (gap !== null) throw new ForwardRefusedError(INTERNAL_ERROR.Unavailable, gap);
    return null;
  }

  private async publish(m: ForwardPublishBody): Promise<Uint8Array> {
    const ref = m.shard;
    const grant = await this.authorize(m);
    const denied = grant.checkPublish(ref.tenantId, ref.namespace, ref.stream);
    if (denied !== null) throw denied;
    if (m.payloads.length === 0)
      throw new ForwardRefusedError(INTERNAL_ERROR.Malformed, 'no payloads');
    // From the verdict to the append without a turn in between: the shard cannot be let go
    // after it was judged served (as a client's publish checks and appends in one turn).
    const redirect = this.judge('stream', ref, m.correlationId);
    if (redirect !== null) return redirect;
    const stream = this.deps.streams(ref.tenantId, ref.namespace, ref.stream);
    const shard = stream?.shards[ref.shard];
    if (shard === undefined)
      throw new ForwardRefusedError(INTERNAL_ERROR.Unavailable, 'the stream is not served here');
    if (shard.quorumWaiting >= QUORUM_WAITING_BATCHES_MAX)
      throw new ForwardRefusedError(
        INTERNAL_ERROR.Overload,
        'too many batches wait for a majority',
      );
    let written: { first: number; next: number };
    try {
      written = await shard.publish(m.payloads, Date.now() * 1000);
    } catch (err) {
      // Both leave the record in the log (outcome unknown); the detail names the client's code.
      if (err instanceof QuorumTimeoutError || err instanceof QuorumAbandonedError) {
        const code = err instanceof QuorumTimeoutError ? 'quorum_timeout' : 'leadership_lost';
        throw new ForwardRefusedError(INTERNAL_ERROR.StorageFailed, `${code}: ${err.message}`);
      }
      throw new ForwardRefusedError(
        INTERNAL_ERROR.StorageFailed,
        `append failed: ${(err as Error).message}`,
      );
    }
    let bytes = 0;
    for (const p of m.payloads) bytes += p.byteLength;
    this.deps.metrics.publishedRecords.inc(m.payloads.length);
    this.deps.metrics.publishedBytes.inc(bytes);
    return encodeInternalMessage({
      kind: 'ForwardPublishOk',
      correlationId: m.correlationId,
      firstOffset: written.first,
      lastOffset: written.next - 1,
    });
  }

  private async cacheOp(m: ForwardCacheOpBody): Promise<Uint8Array> {
    const ref = m.shard;
    const grant = await this.authorize(m);
    const msg = cacheMessage(m);
    const denied = grant.check(REQUEST_ACCESS[msg.type] as Access, msg);
    if (denied !== null) throw denied;
    const svc = this.deps.caches;
    // The shard the key belongs to, as the owner computes it (unknown cache: not_found).
    const cfg = svc.lookup(ref.tenantId, ref.namespace, ref.stream);
    if (svc.shardOf(cfg, m.key) !== ref.shard)
      throw new ForwardRefusedError(
        INTERNAL_ERROR.Malformed,
        `key ${m.key} is not in shard ${ref.shard}`,
      );
    const redirect = this.judge('cache', ref, m.correlationId);
    if (redirect !== null) return redirect;
    const auth: Negotiated = {
      tenant: ref.tenantId,
      flags: 0,
      features: 0,
      featuresHi: 0,
      negotiating: false,
    };
    const done =
      msg.type === 'cache_put'
        ? await cachePut(svc, auth, msg)
        : msg.type === 'cache_delete'
          ? await cacheGet(svc, auth, msg)
          : await counterOp(svc, auth, msg);
    return encodeInternalMessage({
      kind: 'ForwardCacheOk',
      correlationId: m.correlationId,
      ...answerValue(done),
    });
  }
}

/** The client request a forwarded cache op stands for (its answer's request id is unused). */
function cacheMessage(
  m: ForwardCacheOpBody,
): Extract<Message, { type: 'cache_put' | 'cache_delete' | 'counter_add' }> {
  const scope = {
    tenant_id: m.shard.tenantId,
    namespace: m.shard.namespace,
    cache: m.shard.stream,
    key: m.key,
    request_id: 0,
  };
  switch (m.op) {
    case CACHE_OP.Put:
      return {
        type: 'cache_put',
        ...scope,
        value: m.value,
        // 0: none given (the cache's default applies); FORWARD_TTL_NEVER_MS: an explicit 0.
        ...(m.ttlMs === 0 ? {} : { ttl_ms: m.ttlMs === FORWARD_TTL_NEVER_MS ? 0 : m.ttlMs }),
      };
    case CACHE_OP.Delete:
      return { type: 'cache_delete', ...scope };
    case CACHE_OP.CounterAdd:
      if (m.value.byteLength !== 8)
        throw new ForwardRefusedError(INTERNAL_ERROR.Malformed, 'a counter delta is 8 bytes');
      return { type: 'counter_add', ...scope, delta: readI64(m.value) };
    default:
      // Reads are answered by a redirect to the leader, never forwarded.
      throw new ForwardRefusedError(INTERNAL_ERROR.Malformed, `cache op ${m.op} is not forwarded`);
  }
}

/** The value a forwarded cache op answers: a delete's old value, a counter's new one. */
function answerValue(done: Message | null): { value?: Uint8Array } {
  if (done?.type === 'cache_value') return done.value === undefined ? {} : { value: done.value };
  if (done?.type === 'counter_value')
    return done.value === undefined ? {} : { value: writeI64(done.value) };
  return {};
}

/** The internal error a failed forward answers, from the refusal a client would have heard. */
function internalErrorOf(err: unknown): { code: number; detail: string } {
  if (err instanceof ForwardRefusedError) return { code: err.internalCode, detail: err.message };
  if (!(err instanceof Refusal))
    return { code: INTERNAL_ERROR.StorageFailed, detail: (err as Error).message };
  const byCode: Record<string, number> = {
    forbidden: INTERNAL_ERROR.Unauthorized,
    unauthenticated: INTERNAL_ERROR.Unauthorized,
    invalid_request: INTERNAL_ERROR.Malformed,
    limit_exceeded: INTERNAL_ERROR.Malformed,
    not_found: INTERNAL_ERROR.Unavailable,
    shard_unavailable: INTERNAL_ERROR.Unavailable,
    draining: INTERNAL_ERROR.Unavailable,
    overloaded: INTERNAL_ERROR.Overload,
  };
  // A quorum wait that ended keeps its code in the detail (the forwarder reads it back).
  const waited = err.wireCode === 'quorum_timeout' || err.wireCode === 'leadership_lost';
  const detail = waited ? `${err.wireCode}: ${err.message}` : err.message;
  return { code: byCode[err.wireCode] ?? INTERNAL_ERROR.StorageFailed, detail };
}

/** Answers a forward frame arriving before this broker serves forwards: `Unavailable`. */
export function refuseForwardFrame(frame: InternalFrame, detail: string): Uint8Array {
  const m = decodeInternalMessage(frame);
  const kind =
    m.kind === 'ForwardCacheOp' || m.kind === 'AuthorizedForwardCacheOp'
      ? 'ForwardCacheError'
      : 'ForwardPublishError';
  return encodeInternalMessage({
    kind,
    correlationId: m.correlationId,
    code: INTERNAL_ERROR.Unavailable,
    detail,
  });
}
