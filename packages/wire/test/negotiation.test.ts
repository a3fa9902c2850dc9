// Goal: negotiation lets each side use only what both advertised, degrades to the frozen
// original flags against an old peer, and honours the `_hi` feature word only behind the
// FEATURE_EXTENDED marker. Method: the reference's client/broker matrix as pure calls.
import { describe, expect, it } from 'vitest';
import {
  type AuthMessage,
  FEATURE_CACHE_DELETE,
  FEATURE_COUNTERS,
  FEATURE_EXTENDED,
  FEATURE_HI_INSPECT,
  FEATURE_TOPOLOGY,
  FLAG_BINARY_PUBLISH_ACK,
  FLAG_BINARY_PUBLISH_ACKED,
  KNOWN_FLAGS,
  ORIGINAL_V1_FLAGS,
  authCapabilities,
  authCapabilityFields,
  authOkCapabilities,
  brokerAuthAnswer,
  hasFeature,
  hasFeatureHi,
  negotiate,
  negotiatedAuthAnswer,
} from '../src/index.js';

const broker = {
  flags: KNOWN_FLAGS,
  features: FEATURE_TOPOLOGY | FEATURE_COUNTERS,
  featuresHi: FEATURE_HI_INSPECT,
};

describe('negotiation', () => {
  it('a_client_uses_only_the_flags_the_broker_advertised', () => {
    const client = { flags: KNOWN_FLAGS, features: 0, featuresHi: 0 };
    const used = negotiate(client, { flags: 25, features: 0, featuresHi: 0 });
    expect(used.flags).toBe(25);
    expect(used.flags & FLAG_BINARY_PUBLISH_ACK).toBe(0x10);
  });

  it('an_old_broker_answering_ok_leaves_only_the_original_flags', () => {
    const client = { flags: KNOWN_FLAGS, features: FEATURE_COUNTERS, featuresHi: 0 };
    const used = negotiate(client, authOkCapabilities({ type: 'ok' }));
    expect(used).toEqual({ flags: ORIGINAL_V1_FLAGS, features: 0, featuresHi: 0 });
    expect(used.flags & FLAG_BINARY_PUBLISH_ACKED).toBe(0);
  });

  it('an_old_client_gets_a_plain_ok', () => {
    const auth: AuthMessage = { type: 'auth', tenant_id: 't', token: 'x' };
    expect(brokerAuthAnswer(auth, broker)).toEqual({ type: 'ok' });
    expect(negotiate(broker, authCapabilities(auth)).flags).toBe(ORIGINAL_V1_FLAGS);
  });

  it('the_hi_word_is_sent_only_to_a_client_that_set_the_extended_marker', () => {
    const plain: AuthMessage = {
      type: 'auth',
      tenant_id: 't',
      token: 'x',
      client_flags: 25,
      client_features: FEATURE_TOPOLOGY,
    };
    expect(brokerAuthAnswer(plain, broker)).toEqual({
      type: 'auth_ok',
      server_flags: KNOWN_FLAGS,
      server_features: FEATURE_TOPOLOGY | FEATURE_COUNTERS,
    });
    const extended: AuthMessage = {
      ...plain,
      ...authCapabilityFields({
        flags: 25,
        features: FEATURE_TOPOLOGY,
        featuresHi: FEATURE_HI_INSPECT,
      }),
    };
    expect(extended.client_features).toBe(2147483649);
    expect(extended.client_features_hi).toBe(1);
    const answer = brokerAuthAnswer(extended, broker);
    expect(answer).toMatchObject({
      server_features: (FEATURE_TOPOLOGY | FEATURE_COUNTERS | FEATURE_EXTENDED) >>> 0,
      server_features_hi: 1,
    });
    const used = negotiate(
      { flags: 25, features: FEATURE_TOPOLOGY, featuresHi: FEATURE_HI_INSPECT },
      authOkCapabilities(answer as never),
    );
    expect(hasFeature(used, FEATURE_TOPOLOGY)).toBe(true);
    expect(hasFeature(used, FEATURE_COUNTERS)).toBe(false);
    expect(hasFeatureHi(used, FEATURE_HI_INSPECT)).toBe(true);
  });

  it('a_hi_word_without_the_marker_is_ignored', () => {
    const auth: AuthMessage = {
      type: 'auth',
      tenant_id: 't',
      token: 'x',
      client_flags: 1,
      client_features: FEATURE_CACHE_DELETE,
      client_features_hi: 1,
    };
    expect(authCapabilities(auth)?.featuresHi).toBe(0);
  });

  it('features_are_never_granted_from_the_flags_word', () => {
    const used = negotiate(
      { flags: 0x7fff, features: 0, featuresHi: 0 },
      { flags: 0x7fff, features: 0x7fff, featuresHi: 0 },
    );
    expect(used.features).toBe(0);
  });

  it('a_negotiated_answer_advertises_only_what_both_sides_offered', () => {
    const auth: AuthMessage = {
      type: 'auth',
      tenant_id: 't',
      token: 'x',
      client_flags: 25,
      client_features: (FEATURE_TOPOLOGY | FEATURE_CACHE_DELETE | FEATURE_EXTENDED) >>> 0,
      client_features_hi: FEATURE_HI_INSPECT,
    };
    const used = negotiate(broker, authCapabilities(auth));
    expect(negotiatedAuthAnswer(used, { publish_window: 8 })).toEqual({
      type: 'auth_ok',
      server_flags: 25,
      server_features: (FEATURE_TOPOLOGY | FEATURE_EXTENDED) >>> 0,
      server_features_hi: FEATURE_HI_INSPECT,
      publish_window: 8,
    });
    // Nothing in common still names the (empty) feature word; no marker without a hi bit.
    const none = negotiate(broker, { flags: 1, features: 0, featuresHi: 0 });
    expect(negotiatedAuthAnswer(none)).toEqual({
      type: 'auth_ok',
      server_flags: 1,
      server_features: 0,
    });
    expect(negotiatedAuthAnswer(undefined)).toEqual({ type: 'ok' });
  });
});
