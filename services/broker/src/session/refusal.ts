/** Wire error codes and retry classes the broker answers with (reference §1.8). */

export type ErrorCodeName =
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'invalid_request'
  | 'shard_unavailable'
  | 'not_leader'
  | 'overloaded'
  | 'limit_exceeded'
  | 'draining'
  | 'internal'
  | 'storage';

export type RetryName = 'retry' | 'retry_after' | 'redirect' | 'outcome_unknown' | 'fatal';

export const ERROR_CODE_NUMBERS: Record<ErrorCodeName, number> = {
  unauthenticated: 1,
  forbidden: 2,
  not_found: 3,
  invalid_request: 4,
  shard_unavailable: 5,
  not_leader: 6,
  overloaded: 10,
  limit_exceeded: 11,
  draining: 12,
  internal: 13,
  storage: 14,
};

export const DEFAULT_RETRY: Record<ErrorCodeName, RetryName> = {
  unauthenticated: 'fatal',
  forbidden: 'fatal',
  not_found: 'retry_after',
  invalid_request: 'fatal',
  shard_unavailable: 'retry',
  not_leader: 'redirect',
  overloaded: 'retry_after',
  limit_exceeded: 'fatal',
  draining: 'retry',
  internal: 'outcome_unknown',
  storage: 'outcome_unknown',
};

export const RETRY_NUMBERS: Record<RetryName, number> = {
  retry: 1,
  retry_after: 2,
  redirect: 3,
  outcome_unknown: 4,
  fatal: 5,
};

/** A refusal the session answers with; `reason` labels the bad-input metric. */
export class Refusal {
  constructor(
    readonly code: ErrorCodeName,
    readonly message: string,
    readonly reason: string,
    /** End the stream after answering (its bytes can no longer be trusted). */
    readonly fatalToStream = false,
  ) {}

  get retry(): RetryName {
    return DEFAULT_RETRY[this.code];
  }
}
