/**
 * What a long-lived reader (a subscription's shard reader, a cache watch) does about a failed
 * (re)subscribe or re-watch: the policy a consume loop applies to a failed poll
 * (projections/group-consume.ts, `pollFailureOf`), so the three readers outlive the same
 * failures. A lost connection, a wait for the reconnect that timed out, a broker not up yet
 * (refused, `shard_unavailable`, a shard still opening), an owner lost or moved: tried again
 * after a jittered backoff, for as long as the client keeps reconnecting. A failure that would
 * recur (auth, permission, a bad request, an answer the client cannot read) ends the reader at
 * once; so does a connection out of streams (only the caller frees one, by closing a reader).
 */
import { StreamLimitExceededError } from './errors.js';
import { type PollFailure, pollFailureOf } from './projections/group-consume.js';

export type ReaderFailure = PollFailure;

export function readerFailureOf(err: unknown): ReaderFailure {
  if (err instanceof StreamLimitExceededError) return 'fatal';
  return pollFailureOf(err);
}

/** Aborted when either is (either may be absent): a reader's backoff ends at once on its
 *  caller's abort and on the client's close. */
export function eitherSignal(
  a: AbortSignal | undefined,
  b: AbortSignal | undefined,
): AbortSignal | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return AbortSignal.any([a, b]);
}
