/**
 * What the client offers in `auth`: the layouts it parses and the requests it understands.
 * Negotiating them against the broker's answer is @felix/wire's `negotiate`.
 */
import {
  type AuthOkMessage,
  FEATURE_ACK_ON_COMMIT,
  FEATURE_CACHE_DELETE,
  FEATURE_CACHE_SHARDS,
  FEATURE_CACHE_WATCH,
  FEATURE_CACHE_WATCH_RETAINED,
  FEATURE_CONSUMER_GROUP,
  FEATURE_COUNTERS,
  FEATURE_GROUP_ADMIN,
  FEATURE_GROUP_CLAIM_CONTROL,
  FEATURE_GROUP_CONSUMER,
  FEATURE_GROUP_DEAD_LETTERS,
  FEATURE_GROUP_SKIPPED,
  FEATURE_ERROR_CODES,
  FEATURE_EXTENDED,
  FEATURE_HI_CACHE_BINARY,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_BINARY,
  FEATURE_HI_GROUP_NACK_BATCH,
  FEATURE_HI_GROUP_DEAD_LETTER_PAGES,
  FEATURE_HI_GROUP_RELEASE,
  FEATURE_HI_GROUP_RECORDS_BINARY,
  FEATURE_HI_REAUTH,
  FEATURE_HI_STREAM_END_NOTICE,
  FEATURE_PUBLISH_PIPELINE,
  FEATURE_RECORD_TIMESTAMPS,
  FEATURE_REDIRECT,
  FEATURE_SHARD_MOVED,
  FEATURE_SHARD_OWNERS,
  FEATURE_TOPOLOGY,
  FEATURE_STREAM_PUBLISH_WINDOW,
  FEATURE_STREAM_SHARDS,
  FEATURE_SUBSCRIBE_QUEUE,
  FEATURE_SUBSCRIPTION_LAGGED,
  FEATURE_UNSUPPORTED,
  FLAG_BINARY_EVENT_BATCH_SHARED,
  FLAG_BINARY_GROUP_RECORDS,
  FLAG_BINARY_PUBLISH_ACK,
  FLAG_BINARY_PUBLISH_ACK_CODE,
  FLAG_BINARY_PUBLISH_ACK_OFFSET,
  FLAG_BINARY_PUBLISH_ACKED,
  FLAG_BINARY_PUBLISH_BATCH,
  FLAG_BINARY_PUBLISH_KEYED,
  FLAG_EVENT_BATCH_OFFSETS,
  FLAG_EVENT_BATCH_SKIPPED,
  type OkMessage,
  authOkCapabilities,
  negotiate,
} from '@felix/wire';
import { PUBLISH_WINDOW_DEFAULT } from '../limits.js';

export const CLIENT_FLAGS =
  FLAG_BINARY_PUBLISH_BATCH |
  FLAG_BINARY_EVENT_BATCH_SHARED |
  FLAG_BINARY_PUBLISH_ACKED |
  FLAG_BINARY_PUBLISH_ACK |
  FLAG_EVENT_BATCH_OFFSETS |
  FLAG_BINARY_PUBLISH_KEYED |
  FLAG_BINARY_PUBLISH_ACK_CODE |
  FLAG_EVENT_BATCH_SKIPPED |
  FLAG_BINARY_PUBLISH_ACK_OFFSET |
  FLAG_BINARY_GROUP_RECORDS;

export const CLIENT_FEATURES =
  FEATURE_STREAM_SHARDS |
  FEATURE_ERROR_CODES |
  FEATURE_UNSUPPORTED |
  FEATURE_PUBLISH_PIPELINE |
  FEATURE_STREAM_PUBLISH_WINDOW |
  FEATURE_ACK_ON_COMMIT |
  FEATURE_SUBSCRIPTION_LAGGED |
  FEATURE_SUBSCRIBE_QUEUE |
  FEATURE_RECORD_TIMESTAMPS |
  FEATURE_CACHE_DELETE |
  FEATURE_CACHE_SHARDS |
  FEATURE_CACHE_WATCH |
  FEATURE_CACHE_WATCH_RETAINED |
  FEATURE_COUNTERS |
  FEATURE_CONSUMER_GROUP |
  FEATURE_GROUP_DEAD_LETTERS |
  FEATURE_GROUP_ADMIN |
  FEATURE_GROUP_CLAIM_CONTROL |
  FEATURE_GROUP_CONSUMER |
  FEATURE_GROUP_SKIPPED |
  FEATURE_TOPOLOGY |
  FEATURE_SHARD_OWNERS |
  FEATURE_REDIRECT |
  FEATURE_SHARD_MOVED;

/** The high feature word the client offers (sent with FEATURE_EXTENDED in the low word). */
export const CLIENT_FEATURES_HI =
  FEATURE_HI_GROUP_ACK_BATCH |
  FEATURE_HI_GROUP_NACK_BATCH |
  FEATURE_HI_GROUP_RELEASE |
  FEATURE_HI_GROUP_DEAD_LETTER_PAGES |
  FEATURE_HI_GROUP_RECORDS_BINARY |
  FEATURE_HI_REAUTH |
  FEATURE_HI_STREAM_END_NOTICE |
  FEATURE_HI_CACHE_BINARY |
  FEATURE_HI_GROUP_BINARY;

/** The low word as sent: the marker says a `_hi` word follows. */
export const CLIENT_FEATURES_SENT = (CLIENT_FEATURES | FEATURE_EXTENDED) >>> 0;

export interface Negotiated {
  flags: number;
  features: number;
  /** High word the broker advertised too (0 unless its low word carried the marker). */
  featuresHi: number;
  window: number;
}

/**
 * What this stream may use after the broker's answer to an `auth` that offered `flags` and
 * `features` (the low word as sent): only what both sides advertised, the original v1 layouts
 * against a broker that answered a plain `ok`, and the publish window it granted (1 for `ok`).
 */
export function negotiateAnswer(
  answer: AuthOkMessage | OkMessage,
  flags: number = CLIENT_FLAGS,
  features: number = CLIENT_FEATURES_SENT,
): Negotiated {
  const local = {
    flags,
    features: (features & CLIENT_FEATURES) >>> 0,
    featuresHi: CLIENT_FEATURES_HI,
  };
  const used = negotiate(local, authOkCapabilities(answer));
  const window =
    answer.type === 'auth_ok' ? Math.max(1, answer.publish_window ?? PUBLISH_WINDOW_DEFAULT) : 1;
  return { ...used, window };
}

export function has(bits: number, bit: number): boolean {
  return (bits & bit) === bit;
}
