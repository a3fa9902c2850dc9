/**
 * The pure half of cluster routing: what class of retry a failure calls for (§3.3 of the design:
 * fatal, redirect, retry_after, outcome_unknown), where a `not_leader` answer points, and the
 * redirect walk of one request (at most REDIRECT_HOPS_MAX hops, never back to a broker already
 * tried). No sockets and no timers: the router (router.ts) supplies the attempts.
 */
import type { RetryClass } from '@felix/common';
import { shardForKey } from '@felix/wire';
import {
  ClientError,
  ConnectionLostError,
  DrainingError,
  NotFoundError,
  NotLeaderError,
  RedirectLimitError,
  ShardUnavailableError,
  StaleClaimError,
  StreamLimitExceededError,
  UnknownStreamError,
} from '../errors.js';
import {
  AT_LEAST_ONCE_RESENDS_MAX,
  NOT_FOUND_RETRY_MS,
  PUBLISH_ROUTE_ATTEMPTS_MAX,
  REDIRECT_HOPS_MAX,
} from '../limits.js';

/** What the caller of a failed request may do next. */
export type RetryKind =
  /** Nothing helps: the same request fails the same way (auth, permission, bad request). */
  | 'fatal'
  /** Nothing was done; the shard is served elsewhere or not yet: drop the cached owner, ask
   *  again (through the entry broker) and retry there. */
  | 'redirect'
  /** Nothing was done; the broker is busy (or the name not yet known): retry after a backoff. */
  | 'retry_after'
  /** It may or may not have been done: only an at-least-once publish resends. */
  | 'outcome_unknown';

const KIND_OF_RETRY: Readonly<Record<RetryClass, RetryKind>> = {
  never: 'fatal',
  retry: 'redirect',
  reconnect: 'redirect',
  retry_after_backoff: 'retry_after',
  unknown_outcome: 'outcome_unknown',
};

/** The retry kind of a failure; anything the client did not type is fatal. */
export function retryKindOf(err: unknown): RetryKind {
  // Ownership answers redirect whatever class a broker attached to them.
  if (
    err instanceof NotLeaderError ||
    err instanceof ShardUnavailableError ||
    err instanceof DrainingError ||
    err instanceof StaleClaimError ||
    err instanceof ConnectionLostError
  )
    return 'redirect';
  if (err instanceof ClientError) return KIND_OF_RETRY[err.retry] ?? 'fatal';
  return 'fatal';
}

/**
 * How long a long-lived reader (a subscription, a watch, a group consumer) that lost its shard's
 * owner may keep retrying `err`, from when it first failed: its failover deadline for a
 * redirect or a busy broker, NOT_FOUND_RETRY_MS for `not_found`, nothing for the rest. A
 * connection out of streams is not a lost owner: only the caller frees a slot (by closing a
 * reader), so it ends the reader at once, with or without cluster routing.
 */
export function retryWindowMs(err: unknown, deadlineMs: number): number {
  if (err instanceof NotFoundError || err instanceof UnknownStreamError)
    return Math.min(NOT_FOUND_RETRY_MS, deadlineMs);
  if (err instanceof StreamLimitExceededError) return 0;
  const kind = retryKindOf(err);
  return kind === 'redirect' || kind === 'retry_after' ? deadlineMs : 0;
}

/** Where a `not_leader` answer points: the owner's node id, address and generation, each when
 *  the broker named it. */
export interface RedirectTarget {
  nodeId?: string;
  addr?: string;
  generation?: number;
}

function fieldsOf(x: unknown): RedirectTarget {
  const out: RedirectTarget = {};
  if (typeof x !== 'object' || x === null) return out;
  const d = x as Record<string, unknown>;
  if (typeof d.node_id === 'string' && d.node_id !== '') out.nodeId = d.node_id;
  if (typeof d.addr === 'string' && d.addr !== '') out.addr = d.addr;
  if (typeof d.generation === 'number' && Number.isSafeInteger(d.generation))
    out.generation = d.generation;
  return out;
}

/**
 * The owner a refusal names: the structured fields of its detail when the broker sent them (a
 * `not_leader` message or an error's detail), else what the message says ("led by node N
 * (client address A) at generation G", the broker's wording before the structured answer).
 */
export function redirectTargetOf(err: unknown): RedirectTarget | undefined {
  if (!(err instanceof NotLeaderError)) return undefined;
  const fromDetail = fieldsOf(err.detail);
  if (fromDetail.nodeId !== undefined || fromDetail.addr !== undefined) return fromDetail;
  const m = /led by node (\S+?)(?: \(client address (\S+?)\))?(?: at generation (\d+))?[,;\s]/.exec(
    `${err.message} `,
  );
  if (m === null) return {};
  const out: RedirectTarget = { nodeId: m[1]! };
  if (m[2] !== undefined) out.addr = m[2];
  if (m[3] !== undefined) out.generation = Number(m[3]);
  return out;
}

/** An address as the client dials it: `quic://` or `tls://`; a bare `host:port` (as brokers
 *  advertise it) takes the scheme of `like` (the broker it was learned from). */
export function dialAddress(addr: string, like: string): string {
  if (/^(quic|tls):\/\//.test(addr)) return addr;
  const scheme = like.startsWith('tls://') ? 'tls://' : 'quic://';
  return `${scheme}${addr}`;
}

/** One request's redirect walk: the attempts and how a refusal names the next broker. */
export interface RedirectWalk<T> {
  /** The broker tried first (the shard's owner as known, or the entry broker). */
  first: string;
  attempt(addr: string): Promise<T>;
  /** The next broker a redirect-class refusal points at (undefined: none known). */
  next(err: unknown, tried: readonly string[]): Promise<string | undefined> | string | undefined;
  hopsMax?: number;
  /** Brokers this request already tried (and was refused by) before the walk: counted as hops
   *  and never gone back to. */
  tried?: readonly string[];
}

/**
 * Runs `attempt` on `first`, then follows each `not_leader` to the broker it names: at most
 * `hopsMax` (REDIRECT_HOPS_MAX) redirects, never back to a broker already tried for this request.
 * Any other failure, and a redirect with nowhere new to go, ends the walk: the first is thrown
 * as it is, the second as RedirectLimitError (its cause the last refusal).
 */
export async function followRedirects<T>(walk: RedirectWalk<T>): Promise<T> {
  const hopsMax = walk.hopsMax ?? REDIRECT_HOPS_MAX;
  const tried: string[] = [...(walk.tried ?? [])];
  let addr = walk.first;
  if (tried.includes(addr)) throw new RedirectLimitError([...tried, addr]);
  for (;;) {
    tried.push(addr);
    try {
      return await walk.attempt(addr);
    } catch (err) {
      if (!(err instanceof NotLeaderError)) throw err;
      const next = tried.length > hopsMax ? undefined : await walk.next(err, tried);
      if (next === undefined || tried.includes(next)) {
        const named = redirectTargetOf(err);
        const owner =
          named?.nodeId === undefined
            ? undefined
            : `node ${named.nodeId}${named.addr === undefined ? '' : ` (${named.addr})`}`;
        throw new RedirectLimitError(next === undefined ? tried : [...tried, next], {
          cause: err,
          ...(owner === undefined ? {} : { owner }),
        });
      }
      addr = next;
    }
  }
}

const UTF8 = new TextEncoder();

/**
 * The shard of a cache (and its counters) holding `key`, as the broker maps it
 * (services/broker/src/caches/cache-service.ts, `shardOf`): the UTF-8 bytes of the key, modulo
 * routing, as a keyed publish; a one-shard cache needs no hash.
 */
export function cacheShardOf(key: string, width: number): number {
  return width === 1 ? 0 : shardForKey(UTF8.encode(key), width, 'modulo');
}

/** A routed publish's resend budget: its start, its request timeout, and what it spent. */
export interface PublishTally {
  resends: number;
  atLeastOnce: boolean;
  startedMs: number;
  timeoutMs: number;
}

/** What is left, at least 0, of the window in which a publish failing with `err` may be sent
 *  again: its request timeout for an unknown outcome, else its failure's retry window, counted
 *  from the publish's start. */
export function resendWindowLeftMs(err: unknown, tally: PublishTally): number {
  const windowMs =
    retryKindOf(err) === 'outcome_unknown' ? tally.timeoutMs : retryWindowMs(err, tally.timeoutMs);
  return Math.max(0, windowMs - (Date.now() - tally.startedMs));
}

/** Whether a failed publish is sent again (attempt `attempt`, from 0): within the retry window
 *  of its failure; one of unknown outcome only when sent at least once, a bounded number of
 *  times. */
export function mayResendPublish(err: unknown, attempt: number, tally: PublishTally): boolean {
  if (attempt >= PUBLISH_ROUTE_ATTEMPTS_MAX) return false;
  const inWindow = resendWindowLeftMs(err, tally) > 0;
  if (retryKindOf(err) === 'outcome_unknown')
    return tally.atLeastOnce && inWindow && ++tally.resends <= AT_LEAST_ONCE_RESENDS_MAX;
  return inWindow;
}
