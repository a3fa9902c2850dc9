/**
 * What this broker offers in `auth_ok`: frame layouts (flags) and request types (features).
 * Negotiating them is @felix/wire's (`negotiate`, `negotiatedAuthAnswer`): the answer is always
 * the intersection with what the client offered, so the broker never sends a layout or a
 * message the client did not ask for.
 */
import {
  type AuthOkMessage,
  FEATURE_ACK_ON_COMMIT,
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
  type OkMessage,
  authCapabilities,
  negotiate,
  negotiatedAuthAnswer,
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

/** What this stream may use: @felix/wire's `negotiate` of this broker's offer and the `auth`'s. */
export function negotiateAuth(
  tenant: string,
  clientFlags: number | undefined,
  clientFeatures: number | undefined,
  offered: number = SERVER_FEATURES,
  clientFeaturesHi?: number,
  offeredHi = 0,
): Negotiated {
  const client =
    clientFlags === undefined
      ? undefined
      : authCapabilities({
          client_flags: clientFlags,
          client_features: clientFeatures ?? 0,
          client_features_hi: clientFeaturesHi ?? 0,
        });
  const used = negotiate({ flags: SERVER_FLAGS, features: offered, featuresHi: offeredHi }, client);
  return { tenant, ...used, negotiating: client !== undefined };
}

/** The answer to the `auth`: `auth_ok` naming exactly what was negotiated, or `ok` to a client
 *  that offered nothing. */
export function authAnswer(
  negotiated: Negotiated,
  publishWindow: number,
): AuthOkMessage | OkMessage {
  if (!negotiated.negotiating) return negotiatedAuthAnswer(undefined);
  return negotiatedAuthAnswer(negotiated, { publish_window: publishWindow });
}

export function has(bits: number, bit: number): boolean {
  return (bits & bit) === bit;
}
