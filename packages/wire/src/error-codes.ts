/**
 * Error codes carried by `error` / `publish_error` (as names) and by the binary publish ack
 * (as u16), with the retry class each defaults to. An unknown code is kept, never fatal to
 * the frame; an unknown retry class reads as `fatal`.
 */
import type { ErrorCodeName, RetryClassName } from './json/message-types.js';

export const ERROR_CODE_UNAUTHENTICATED = 1;
export const ERROR_CODE_FORBIDDEN = 2;
export const ERROR_CODE_NOT_FOUND = 3;
export const ERROR_CODE_INVALID_REQUEST = 4;
export const ERROR_CODE_SHARD_UNAVAILABLE = 5;
export const ERROR_CODE_NOT_LEADER = 6;
export const ERROR_CODE_QUORUM_TIMEOUT = 7;
export const ERROR_CODE_LEADERSHIP_LOST = 8;
export const ERROR_CODE_UNACKNOWLEDGED = 9;
export const ERROR_CODE_OVERLOADED = 10;
export const ERROR_CODE_LIMIT_EXCEEDED = 11;
export const ERROR_CODE_DRAINING = 12;
export const ERROR_CODE_INTERNAL = 13;
export const ERROR_CODE_STORAGE = 14;
export const ERROR_CODE_STALE_CLAIM = 15;

export const RETRY_RETRY = 1;
export const RETRY_RETRY_AFTER = 2;
export const RETRY_REDIRECT = 3;
export const RETRY_OUTCOME_UNKNOWN = 4;
export const RETRY_FATAL = 5;

/** Retry class names by their binary byte. */
export const RETRY_NAMES: Readonly<Record<number, RetryName>> = {
  [RETRY_RETRY]: 'retry',
  [RETRY_RETRY_AFTER]: 'retry_after',
  [RETRY_REDIRECT]: 'redirect',
  [RETRY_OUTCOME_UNKNOWN]: 'outcome_unknown',
  [RETRY_FATAL]: 'fatal',
};

/** Every code this version names, by number (the one table: both ends derive from it). */
export const ERROR_CODES = [
  { code: 1, name: 'unauthenticated', retry: RETRY_FATAL },
  { code: 2, name: 'forbidden', retry: RETRY_FATAL },
  { code: 3, name: 'not_found', retry: RETRY_RETRY_AFTER },
  { code: 4, name: 'invalid_request', retry: RETRY_FATAL },
  { code: 5, name: 'shard_unavailable', retry: RETRY_RETRY },
  { code: 6, name: 'not_leader', retry: RETRY_REDIRECT },
  { code: 7, name: 'quorum_timeout', retry: RETRY_OUTCOME_UNKNOWN },
  { code: 8, name: 'leadership_lost', retry: RETRY_OUTCOME_UNKNOWN },
  { code: 9, name: 'unacknowledged', retry: RETRY_OUTCOME_UNKNOWN },
  { code: 10, name: 'overloaded', retry: RETRY_RETRY_AFTER },
  { code: 11, name: 'limit_exceeded', retry: RETRY_FATAL },
  { code: 12, name: 'draining', retry: RETRY_RETRY },
  { code: 13, name: 'internal', retry: RETRY_OUTCOME_UNKNOWN },
  { code: 14, name: 'storage', retry: RETRY_OUTCOME_UNKNOWN },
  { code: 15, name: 'stale_claim', retry: RETRY_RETRY },
] as const satisfies ReadonlyArray<{ code: number; name: ErrorCodeName; retry: number }>;

/** A code name this version knows (the wire type `ErrorCodeName` also admits unknown ones). */
export type KnownErrorCodeName = (typeof ERROR_CODES)[number]['name'];

/** A retry class name this version knows. */
export type RetryName = 'retry' | 'retry_after' | 'redirect' | 'outcome_unknown' | 'fatal';

/** Code names by number. */
export const ERROR_CODE_NAMES: Readonly<Record<number, KnownErrorCodeName>> = Object.freeze(
  Object.fromEntries(ERROR_CODES.map((e) => [e.code, e.name])),
);

/** Code numbers by name. */
export const ERROR_CODE_NUMBERS: Readonly<Record<KnownErrorCodeName, number>> = Object.freeze(
  Object.fromEntries(ERROR_CODES.map((e) => [e.name, e.code])) as Record<
    KnownErrorCodeName,
    number
  >,
);

/** Retry bytes by class name. */
export const RETRY_BYTES: Readonly<Record<RetryName, number>> = Object.freeze({
  retry: RETRY_RETRY,
  retry_after: RETRY_RETRY_AFTER,
  redirect: RETRY_REDIRECT,
  outcome_unknown: RETRY_OUTCOME_UNKNOWN,
  fatal: RETRY_FATAL,
});

/** The retry class each known code defaults to. */
export const DEFAULT_RETRY: Readonly<Record<KnownErrorCodeName, RetryName>> = Object.freeze(
  Object.fromEntries(ERROR_CODES.map((e) => [e.name, RETRY_NAMES[e.retry]])) as Record<
    KnownErrorCodeName,
    RetryName
  >,
);

/** The name of a binary code; unknown numbers become `code_<n>` (kept, not refused). */
export function errorCodeName(code: number): ErrorCodeName {
  return ERROR_CODE_NAMES[code] ?? `code_${code}`;
}

/** The number of a code name; 0 (never sent) for a name this version does not know. */
export function errorCodeNumber(name: ErrorCodeName): number {
  return Object.hasOwn(ERROR_CODE_NUMBERS, name)
    ? ERROR_CODE_NUMBERS[name as KnownErrorCodeName]
    : 0;
}

/** The class a code defaults to; unknown codes default to `fatal`. */
export function defaultRetryFor(name: ErrorCodeName): RetryName {
  return Object.hasOwn(DEFAULT_RETRY, name) ? DEFAULT_RETRY[name as KnownErrorCodeName] : 'fatal';
}

/** Reads a retry class name or byte; anything unknown is `fatal` (it cannot duplicate a write). */
export function retryClass(value: RetryClassName | number | undefined): RetryClassName {
  if (typeof value === 'number') return RETRY_NAMES[value] ?? 'fatal';
  return value !== undefined && Object.hasOwn(RETRY_BYTES, value) ? value : 'fatal';
}

/** The binary byte of a retry class name; unknown names map to `RETRY_FATAL`. */
export function retryByte(name: RetryClassName): number {
  return Object.hasOwn(RETRY_BYTES, name) ? RETRY_BYTES[name as RetryName] : RETRY_FATAL;
}

/** `reason` values of `shard_unavailable`. */
export const SHARD_UNAVAILABLE_REASONS = [
  'not_assigned',
  'owner_unavailable',
  'not_ready',
  'stale',
  'fenced',
  'moving',
  'region_not_routable',
] as const;
