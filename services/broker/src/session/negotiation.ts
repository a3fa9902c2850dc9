/**
 * What this broker offers in `auth_ok`: frame layouts (flags) and request types (features).
 * The answer is always the intersection with what the client offered, so the broker never sends
 * a layout or a message the client did not ask for.
 */
import {
  FEATURE_ACK_ON_COMMIT,
  FEATURE_EXTENDED,
  FEATURE_ERROR_CODES,
  FEATURE_PUBLISH_PIPELINE,
  FEATURE_RECORD_TIMESTAMPS,
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
  FLAG_EVENT_BATCH_TIMESTAMPS,
  ORIGINAL_V1_FLAGS,
} from '@felix/wire';

export const SERVER_FLAGS =
  FLAG_BINARY_PUBLISH_BATCH |
  FLAG_BINARY_EVENT_BATCH_SHARED |
  FLAG_BINARY_PUBLISH_ACKED |
  FLAG_BINARY_PUBLISH_ACK |
  FLAG_EVENT_BATCH_OFFSETS |
  FLAG_BINARY_PUBLISH_KEYED |
  FLAG_BINARY_PUBLISH_ACK_CODE |
  FLAG_EVENT_BATCH_SKIPPED |
  FLAG_BINARY_PUBLISH_ACK_OFFSET |
  FLAG_BINARY_GROUP_RECORDS |
  FLAG_EVENT_BATCH_TIMESTAMPS;

export const SERVER_FEATURES =
  FEATURE_STREAM_SHARDS |
  FEATURE_ERROR_CODES |
  FEATURE_UNSUPPORTED |
  FEATURE_PUBLISH_PIPELINE |
  FEATURE_STREAM_PUBLISH_WINDOW |
  FEATURE_ACK_ON_COMMIT |
  FEATURE_SUBSCRIPTION_LAGGED |
  FEATURE_SUBSCRIBE_QUEUE |
  FEATURE_RECORD_TIMESTAMPS;

export interface Negotiated {
  tenant: string;
  /** Layouts both sides parse; `ORIGINAL_V1_FLAGS` when the client offered nothing. */
  flags: number;
  features: number;
  /** High feature word both sides offered (only when the client set FEATURE_EXTENDED). */
  featuresHi: number;
  /** The client sent `client_flags` (and got `auth_ok`). */
  negotiating: boolean;
}

export function negotiateAuth(
  tenant: string,
  clientFlags: number | undefined,
  clientFeatures: number | undefined,
  offered: number = SERVER_FEATURES,
  clientFeaturesHi?: number,
  offeredHi = 0,
): Negotiated {
  if (clientFlags === undefined) {
    return {
      tenant,
      flags: ORIGINAL_V1_FLAGS & SERVER_FLAGS,
      features: 0,
      featuresHi: 0,
      negotiating: false,
    };
  }
  const extended = ((clientFeatures ?? 0) & FEATURE_EXTENDED) !== 0;
  return {
    tenant,
    flags: clientFlags & SERVER_FLAGS,
    features: (clientFeatures ?? 0) & offered,
    featuresHi: extended ? ((clientFeaturesHi ?? 0) & offeredHi) >>> 0 : 0,
    negotiating: true,
  };
}

export function has(bits: number, bit: number): boolean {
  return (bits & bit) === bit;
}
