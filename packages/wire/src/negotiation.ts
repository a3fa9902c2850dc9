/**
 * Capability negotiation over `auth` / `auth_ok`, as pure functions. Flags (frame layouts)
 * and features (request types) are negotiated separately. Each side may use only what both
 * advertised; a peer that advertised no flags is assumed to parse `ORIGINAL_V1_FLAGS`, and
 * one that advertised no features implements none. The `_hi` feature word counts only when
 * the low word carries `FEATURE_EXTENDED`.
 */
import { FEATURE_EXTENDED } from './features.js';
import { KNOWN_FLAGS, ORIGINAL_V1_FLAGS } from './flags.js';
import type { AuthMessage, AuthOkMessage, OkMessage } from './json/message-types.js';

/** What one side advertises (or, after negotiation, may use). */
export interface Capabilities {
  flags: number;
  /** Low feature word, without the `FEATURE_EXTENDED` marker. */
  features: number;
  /** High feature word (bit 0 = bit 32 of the set). */
  featuresHi: number;
}

export const NO_CAPABILITIES: Capabilities = Object.freeze({
  flags: 0,
  features: 0,
  featuresHi: 0,
});

/**
 * What a side may send given its own capabilities and the peer's advertisement
 * (`undefined` when the peer advertised nothing).
 */
export function negotiate(local: Capabilities, peer: Capabilities | undefined): Capabilities {
  const mine = local.flags & KNOWN_FLAGS;
  if (peer === undefined) {
    return { flags: mine & ORIGINAL_V1_FLAGS, features: 0, featuresHi: 0 };
  }
  return {
    flags: mine & peer.flags,
    features: (local.features & peer.features & ~FEATURE_EXTENDED) >>> 0,
    featuresHi: (local.featuresHi & peer.featuresHi) >>> 0,
  };
}

/** True when a negotiated set includes a low-word feature bit. */
export function hasFeature(caps: Capabilities, feature: number): boolean {
  return (caps.features & feature) >>> 0 === feature >>> 0;
}

/** True when a negotiated set includes a high-word feature bit. */
export function hasFeatureHi(caps: Capabilities, featureHi: number): boolean {
  return (caps.featuresHi & featureHi) >>> 0 === featureHi >>> 0;
}

/** The capability fields a client puts on its `auth`. */
export function authCapabilityFields(
  local: Capabilities,
): Pick<AuthMessage, 'client_flags' | 'client_features' | 'client_features_hi'> {
  const out: Pick<AuthMessage, 'client_flags' | 'client_features' | 'client_features_hi'> = {
    client_flags: local.flags,
  };
  const features = wordWithMarker(local);
  if (features !== 0) out.client_features = features;
  if (local.featuresHi !== 0) out.client_features_hi = local.featuresHi >>> 0;
  return out;
}

/** What the client advertised in its `auth`; `undefined` for a pre-negotiation client. */
export function authCapabilities(
  auth: Pick<AuthMessage, 'client_flags' | 'client_features' | 'client_features_hi'>,
): Capabilities | undefined {
  if (auth.client_flags === undefined) return undefined;
  const low = auth.client_features ?? 0;
  const extended = (low & FEATURE_EXTENDED) !== 0;
  return {
    flags: auth.client_flags,
    features: (low & ~FEATURE_EXTENDED) >>> 0,
    featuresHi: extended ? (auth.client_features_hi ?? 0) : 0,
  };
}

/**
 * The broker's answer to an `auth`: `auth_ok` only if the client offered `client_flags`,
 * else a plain `ok`. `server_features_hi` (and the marker) go only to a client that set
 * `FEATURE_EXTENDED`, and only when non-zero.
 */
export function brokerAuthAnswer(
  auth: AuthMessage,
  broker: Capabilities,
  extra: { publish_window?: number } = {},
): AuthOkMessage | OkMessage {
  if (auth.client_flags === undefined) return { type: 'ok' };
  const clientExtended = ((auth.client_features ?? 0) & FEATURE_EXTENDED) !== 0;
  const hi = clientExtended ? broker.featuresHi >>> 0 : 0;
  const answer: AuthOkMessage = { type: 'auth_ok', server_flags: broker.flags & KNOWN_FLAGS };
  const low = wordWithMarker({ ...broker, featuresHi: hi });
  if (low !== 0) answer.server_features = low;
  if (hi !== 0) answer.server_features_hi = hi;
  if (extra.publish_window !== undefined) answer.publish_window = extra.publish_window;
  return answer;
}

/**
 * The broker's answer once it has negotiated (`negotiate(broker, authCapabilities(auth))`):
 * `ok` to a client that offered nothing (`negotiated` undefined), else `auth_ok` advertising
 * exactly the negotiated set, so the broker never names a layout or request the client did not
 * offer. `server_features` is always present; the `_hi` word and its marker only when a high
 * bit was negotiated (which needs the client's `FEATURE_EXTENDED`).
 */
export function negotiatedAuthAnswer(
  negotiated: Capabilities | undefined,
  extra: { publish_window?: number } = {},
): AuthOkMessage | OkMessage {
  if (negotiated === undefined) return { type: 'ok' };
  const answer: AuthOkMessage = {
    type: 'auth_ok',
    server_flags: negotiated.flags & KNOWN_FLAGS,
    server_features: wordWithMarker(negotiated),
  };
  if (negotiated.featuresHi !== 0) answer.server_features_hi = negotiated.featuresHi >>> 0;
  if (extra.publish_window !== undefined) answer.publish_window = extra.publish_window;
  return answer;
}

/** What the broker advertised; `undefined` when it answered a plain `ok` (old broker). */
export function authOkCapabilities(answer: AuthOkMessage | OkMessage): Capabilities | undefined {
  if (answer.type === 'ok') return undefined;
  const low = answer.server_features ?? 0;
  const extended = (low & FEATURE_EXTENDED) !== 0;
  return {
    flags: answer.server_flags,
    features: (low & ~FEATURE_EXTENDED) >>> 0,
    featuresHi: extended ? (answer.server_features_hi ?? 0) : 0,
  };
}

function wordWithMarker(caps: Capabilities): number {
  const low = (caps.features & ~FEATURE_EXTENDED) >>> 0;
  return caps.featuresHi !== 0 ? (low | FEATURE_EXTENDED) >>> 0 : low;
}
