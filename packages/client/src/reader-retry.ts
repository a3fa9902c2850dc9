/**
 * What a long-lived reader (a subscription's shard reader, a cache watch) does about a failed
 * (re)subscribe or re-watch: the policy a consume loop applies to a failed poll
 * (projections/group-consume.ts, `pollFailureOf`, which is `failureClassOf`), so the three readers outlive the same
 * failures. A lost connection, a wait for the reconnect that timed out, a broker not up yet
 * (refused, `shard_unavailable`, a shard still opening), an owner lost or moved: tried again
 * after a jittered backoff, for as long as the client keeps reconnecting. A failure that would
 * recur (auth, permission, a bad request, an answer the client cannot read) ends the reader at
 * once; so does a connection out of streams (only the caller frees one, by closing a reader).
 */
import { retryKindOf } from './cluster/routing.js';
import {
  ConnectError,
  NotFoundError,
  ProtocolError,
  RedirectLimitError,
  StreamLimitExceededError,
  TimeoutError,
  UnknownStreamError,
  isStreamGone,
} from './errors.js';

/** The classes of a reader's failure (group-consume.ts names what a consume loop does on each):
 *  `unavailable` and `busy` pass (a short backoff, and the longer one for a broker that asked to
 *  be left alone), `not_found` passes briefly, `fatal` would recur. */
export type FailureClass = 'unavailable' | 'busy' | 'not_found' | 'fatal';

export function failureClassOf(err: unknown): FailureClass {
  if (err instanceof NotFoundError || err instanceof UnknownStreamError) return 'not_found';
  // Its class says reconnect, but a broker that sent what the client cannot read would again.
  if (err instanceof ProtocolError) return 'fatal';
  if (err instanceof TimeoutError || isStreamGone(err)) return 'unavailable';
  // Brokers that disagree about the owner, or an owner the cluster named that cannot be reached:
  // a failover in progress, retried at its short backoff, not the long one a busy broker asks
  // for (a trial's subscriber resumed up to 4 s after its publisher).
  if (err instanceof RedirectLimitError || (err instanceof ConnectError && err.learned))
    return 'unavailable';
  const kind = retryKindOf(err);
  return kind === 'redirect' ? 'unavailable' : kind === 'retry_after' ? 'busy' : 'fatal';
}

/** A subscription's or a watch's failure: as a poll's, but a connection out of streams would
 *  recur (only the caller frees one), so it ends the reader at once. */
export function readerFailureOf(err: unknown): FailureClass {
  if (err instanceof StreamLimitExceededError) return 'fatal';
  return failureClassOf(err);
}

/** Aborted when either is (either may be absent): a reader's backoff ends at once on its
 *  caller's abort and on the client's close. Make one per reader, not per backoff: Node 20 keeps
 *  each `AbortSignal.any` alive after it is dropped (about 53 B each, never collected). */
export function eitherSignal(
  a: AbortSignal | undefined,
  b: AbortSignal | undefined,
): AbortSignal | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return AbortSignal.any([a, b]);
}
