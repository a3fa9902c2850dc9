/**
 * The ingress side of forwarding: a write (publish, cache put or delete, counter add) that
 * reaches a broker not leading its shard is sent to the leader over the one internal link to it
 * (peer-pool.ts), as `AuthorizedForwardPublish` / `AuthorizedForwardCacheOp` carrying the shard
 * generation this broker believes in and the client's bearer token (the owner verifies both).
 * The client is answered from the owner's answer only: its offsets on `ForwardPublishOk`, or the
 * refusal its error stands for. A forward is sent once and never again: one that times out or
 * whose link fails after sending is `unacknowledged` (outcome unknown, the owner may have done
 * it); one that could not be sent at all is `shard_unavailable` (nothing was done).
 *
 * Forwarded publishes from one client stream to one shard go one at a time, in request order,
 * so the owner appends them in the order the client sent them (separate internal streams could
 * overtake each other). Forwards in flight are bounded per peer and per broker; past a bound a
 * write is shed `overloaded` without being sent.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import {
  FORWARD_ACK,
  INTERNAL_ERROR,
  InternalFrameDecoder,
  type InternalMessage,
  type ShardRef,
  decodeInternalMessage,
  encodeInternalMessage,
} from '@felix/wire';
import { PeerUnreachableError } from '../errors.js';
import {
  FORWARDS_IN_FLIGHT_MAX,
  FORWARDS_IN_FLIGHT_PER_PEER_MAX,
  FORWARD_LINK_WAIT_MS,
  FORWARD_TIMEOUT_MS,
} from '../limits.js';
import { type NotLeaderRefusal, Refusal, type ShardOwner } from '../session/refusal.js';
import type { PeerPool } from './peer-pool.js';
import { notLeaderRefusal } from './shard-refs.js';

/** Outcomes of `felix_broker_forwards_total`. */
export type ForwardOutcome =
  | 'ok'
  | 'not_leader'
  | 'stale_route'
  | 'unavailable'
  | 'refused'
  | 'unreachable'
  | 'unknown'
  | 'shed';

export interface ForwarderDeps {
  selfId: string;
  pool: PeerPool;
  /** The client address of a node (named when the owner redirects). */
  clientAddress: (nodeId: string) => string | undefined;
  registry: Registry;
  log: Logger;
  /** `broker.publish_quorum_timeout_ms`: a forwarded publish or cache write may wait that long
   *  at the owner for a majority before the owner answers (the cluster's brokers share the setting). */
  quorumTimeoutMs: number;
}

/** What a forwarded cache op asks the owner (CACHE_OP's Put, Delete, CounterAdd). */
export interface CacheForward {
  op: number;
  key: string;
  /** 0: no TTL. */
  ttlMs: number;
  value: Uint8Array;
}

export class Forwarder {
  private inFlight = 0;
  private readonly perPeer = new Map<string, number>();
  private readonly chains = new WeakMap<object, Map<string, Promise<unknown>>>();
  private readonly outcomes: Counter<'outcome'>;
  private readonly correlation = { next: 1 };

  constructor(private readonly deps: ForwarderDeps) {
    this.outcomes = new Counter({
      name: 'felix_broker_forwards_total',
      help: 'Writes forwarded to the leader of their shard, by outcome (unknown: timed out or the link failed after sending; never resent)',
      labelNames: ['outcome'],
      registers: [deps.registry],
    });
  }

  /**
   * Forwards a publish; resolves with the owner's offsets (first and last), or throws the
   * Refusal to answer. `order` is the client stream: its publishes to one shard go in order.
   */
  publish(
    to: NotLeaderRefusal,
    payloads: Uint8Array[],
    token: string,
    order: object,
  ): Promise<{ first: number; last: number }> {
    return this.inOrder(order, to.owner, async () => {
      // The owner's own quorum wait, then the forward's margin: the owner's precise answer
      // (`quorum_timeout`) comes before this broker gives up on it.
      const timeoutMs = this.deps.quorumTimeoutMs + FORWARD_TIMEOUT_MS;
      const answer = await this.exchange(to, timeoutMs, {
        kind: 'AuthorizedForwardPublish',
        correlationId: this.nextCorrelation(),
        shard: refOf(to.owner),
        ack: FORWARD_ACK.OnAccept,
        payloads,
        credential: credentialOf(token),
      });
      if (answer.kind !== 'ForwardPublishOk') throw this.refusalOf(to, answer);
      this.outcomes.inc({ outcome: 'ok' });
      return { first: answer.firstOffset, last: answer.lastOffset };
    });
  }

  /**
   * Forwards a cache put, delete or counter add (in order with the stream's earlier ones to
   * that shard); resolves with the owner's value, if any.
   */
  cacheOp(
    to: NotLeaderRefusal,
    op: CacheForward,
    token: string,
    order: object,
  ): Promise<Uint8Array | undefined> {
    return this.inOrder(order, to.owner, async () => {
      // As a publish: a quorum cache's owner answers `quorum_timeout` before this gives up.
      const timeoutMs = this.deps.quorumTimeoutMs + FORWARD_TIMEOUT_MS;
      const answer = await this.exchange(to, timeoutMs, {
        kind: 'AuthorizedForwardCacheOp',
        correlationId: this.nextCorrelation(),
        shard: refOf(to.owner),
        ...op,
        credential: credentialOf(token),
      });
      if (answer.kind !== 'ForwardCacheOk') throw this.refusalOf(to, answer);
      this.outcomes.inc({ outcome: 'ok' });
      return answer.value;
    });
  }

  private nextCorrelation(): number {
    const id = this.correlation.next;
    this.correlation.next = id >= Number.MAX_SAFE_INTEGER ? 1 : id + 1;
    return id;
  }

  /** Runs `send` after the previous forward of `order` to the same shard has settled. */
  private inOrder<T>(order: object, owner: ShardOwner, send: () => Promise<T>): Promise<T> {
    let byShard = this.chains.get(order);
    if (byShard === undefined) {
      byShard = new Map();
      this.chains.set(order, byShard);
    }
    const key = `${owner.kind}\u0000${owner.tenant}\u0000${owner.namespace}\u0000${owner.name}\u0000${owner.shard}`;
    const before = byShard.get(key);
    // The next forward waits for this one to settle, whatever its outcome.
    const run = before === undefined ? send() : before.then(send, send);
    // Only its settling matters to the chain: its outcome is answered to its own request.
    const tail = run.catch(() => undefined);
    byShard.set(key, tail);
    void tail.then(() => {
      if (byShard.get(key) === tail) byShard.delete(key);
    });
    return run;
  }

  /** Sends one forward within the bounds and answers the owner's decoded answer. */
  private async exchange(
    to: NotLeaderRefusal,
    timeoutMs: number,
    message: InternalMessage,
  ): Promise<InternalMessage> {
    const peer = to.owner.nodeId;
    const atPeer = this.perPeer.get(peer) ?? 0;
    if (this.inFlight >= FORWARDS_IN_FLIGHT_MAX || atPeer >= FORWARDS_IN_FLIGHT_PER_PEER_MAX) {
      this.outcomes.inc({ outcome: 'shed' });
      throw new Refusal('overloaded', `too many writes in flight to node ${peer}`, 'overloaded');
    }
    this.inFlight++;
    this.perPeer.set(peer, atPeer + 1);
    try {
      const bytes = await this.deps.pool
        .link(peer)
        .request(encodeInternalMessage(message), timeoutMs, FORWARD_LINK_WAIT_MS);
      return decodeAnswer(bytes);
    } catch (err) {
      throw this.failure(to, err);
    } finally {
      this.inFlight--;
      const left = (this.perPeer.get(peer) ?? 1) - 1;
      if (left <= 0) this.perPeer.delete(peer);
      else this.perPeer.set(peer, left);
    }
  }

  /** A forward that got no answer: unsent (retryable) or outcome unknown (never resent). */
  private failure(to: NotLeaderRefusal, err: unknown): Refusal {
    const peer = to.owner.nodeId;
    if (err instanceof PeerUnreachableError) {
      this.outcomes.inc({ outcome: 'unreachable' });
      return new Refusal(
        'shard_unavailable',
        `the leader (node ${peer}) cannot be reached: ${err.message}`,
        'owner_unavailable',
        { cause: err, detail: { reason: 'owner_unavailable' } },
      );
    }
    this.outcomes.inc({ outcome: 'unknown' });
    this.deps.log.warn({ err, peer }, 'forwarded write unanswered: outcome unknown');
    return new Refusal(
      'unacknowledged',
      `forwarded to the leader (node ${peer}), which did not answer: it may or may not have been done`,
      'forward_unanswered',
      { cause: err },
    );
  }

  /** The refusal the owner's (non-ok) answer stands for. */
  private refusalOf(to: NotLeaderRefusal, answer: InternalMessage): Refusal {
    if (answer.kind === 'NotLeader') {
      this.outcomes.inc({ outcome: 'not_leader' });
      const owner = {
        ...to.owner,
        nodeId: answer.nodeId,
        generation: answer.generation,
        addr: this.deps.clientAddress(answer.nodeId),
      };
      return notLeaderRefusal(owner, this.deps.selfId);
    }
    if (answer.kind !== 'ForwardPublishError' && answer.kind !== 'ForwardCacheError') {
      this.outcomes.inc({ outcome: 'unknown' });
      return new Refusal('internal', `the leader answered ${answer.kind}`, 'forward_answer');
    }
    return this.errorRefusal(to, answer.code, answer.detail);
  }

  private errorRefusal(to: NotLeaderRefusal, code: number, detail: string): Refusal {
    const from = `the leader (node ${to.owner.nodeId})`;
    const count = (outcome: ForwardOutcome) => this.outcomes.inc({ outcome });
    switch (code) {
      case INTERNAL_ERROR.StaleRoute:
        count('stale_route');
        return unavailable(`${from} does not know generation ${to.owner.generation} yet`, 'stale');
      case INTERNAL_ERROR.Unavailable:
        count('unavailable');
        return unavailable(`${from} cannot serve it now: ${detail}`, 'owner_unavailable');
      case INTERNAL_ERROR.Overload:
        count('refused');
        return new Refusal('overloaded', `${from} is overloaded: ${detail}`, 'owner_overloaded');
      case INTERNAL_ERROR.Unauthorized:
        count('refused');
        return new Refusal('forbidden', `${from} refused: ${detail}`, 'forward_unauthorized');
      case INTERNAL_ERROR.Malformed:
        count('refused');
        return new Refusal('invalid_request', `${from} refused: ${detail}`, 'forward_malformed');
      case INTERNAL_ERROR.UnsupportedKind:
        // An owner that cannot take forwards: the client goes there itself.
        count('not_leader');
        return to;
      case INTERNAL_ERROR.StorageFailed:
        // Outcome unknown either way; a quorum wait that ended keeps its own code.
        count('refused');
        if (detail.startsWith('quorum_timeout: '))
          return new Refusal('quorum_timeout', `${from}: ${detail}`, 'quorum_timeout');
        if (detail.startsWith('leadership_lost: '))
          return new Refusal('leadership_lost', `${from}: ${detail}`, 'quorum_abandoned');
        return new Refusal('storage', `${from}: ${detail}`, 'storage_error');
      default:
        count('unknown');
        return new Refusal(
          'internal',
          `${from} answered error ${code}: ${detail}`,
          'forward_error',
        );
    }
  }
}

function unavailable(message: string, reason: string): Refusal {
  return new Refusal('shard_unavailable', message, reason, { detail: { reason } });
}

function refOf(o: ShardOwner): ShardRef {
  return {
    tenantId: o.tenant,
    namespace: o.namespace,
    stream: o.name,
    shard: o.shard,
    generation: o.generation,
  };
}

const UTF8 = new TextEncoder();

/** The client's token as the forward's credential (never empty on the wire: dev mode may have
 *  none, and a `tokens` owner refuses a placeholder as it would any bad token). */
function credentialOf(token: string): Uint8Array {
  return UTF8.encode(token === '' ? '-' : token);
}

function decodeAnswer(bytes: Uint8Array): InternalMessage {
  const frames = new InternalFrameDecoder().push(bytes);
  if (frames.length !== 1) throw new Error('the answer is not one internal frame');
  return decodeInternalMessage(frames[0]!);
}
