// Goal: the client, negotiating with @felix/wire's `negotiate`, uses only what it offered and the
// broker answered, honours the `_hi` word only behind the marker, takes the granted publish
// window, and falls back to the original layouts and a window of 1 against an old broker.
// Method: pure calls on the answers a broker can give.
import {
  FEATURE_COUNTERS,
  FEATURE_EXTENDED,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_STREAM_SHARDS,
  FLAG_BINARY_PUBLISH_ACK,
  FLAG_BINARY_PUBLISH_BATCH,
  FLAG_EVENT_BATCH_TIMESTAMPS,
  ORIGINAL_V1_FLAGS,
} from '@felix/wire';
import { describe, expect, it } from 'vitest';
import {
  CLIENT_FEATURES_SENT,
  CLIENT_FLAGS,
  negotiateAnswer,
} from '../src/protocol/negotiation.js';

describe('client negotiation', () => {
  it('a_client_uses_what_the_broker_answered_within_its_own_offer', () => {
    const used = negotiateAnswer({
      type: 'auth_ok',
      server_flags:
        FLAG_BINARY_PUBLISH_BATCH | FLAG_BINARY_PUBLISH_ACK | FLAG_EVENT_BATCH_TIMESTAMPS,
      server_features: (FEATURE_STREAM_SHARDS | FEATURE_COUNTERS | FEATURE_EXTENDED) >>> 0,
      server_features_hi: FEATURE_HI_GROUP_ACK_BATCH | 0x8000_0000,
      publish_window: 0,
    });
    expect(used).toEqual({
      flags: FLAG_BINARY_PUBLISH_BATCH | FLAG_BINARY_PUBLISH_ACK,
      features: FEATURE_STREAM_SHARDS | FEATURE_COUNTERS,
      featuresHi: FEATURE_HI_GROUP_ACK_BATCH,
      window: 1,
    });
    // Without the marker the hi word is ignored; a feature taken out of the offer stays out.
    const narrowed = negotiateAnswer(
      {
        type: 'auth_ok',
        server_flags: CLIENT_FLAGS,
        server_features: FEATURE_COUNTERS,
        server_features_hi: FEATURE_HI_GROUP_ACK_BATCH,
        publish_window: 64,
      },
      CLIENT_FLAGS,
      (CLIENT_FEATURES_SENT & ~FEATURE_COUNTERS) >>> 0,
    );
    expect(narrowed).toEqual({ flags: CLIENT_FLAGS, features: 0, featuresHi: 0, window: 64 });
  });

  it('an_old_broker_answering_ok_leaves_the_original_layouts_and_a_window_of_one', () => {
    expect(negotiateAnswer({ type: 'ok' })).toEqual({
      flags: CLIENT_FLAGS & ORIGINAL_V1_FLAGS,
      features: 0,
      featuresHi: 0,
      window: 1,
    });
  });
});
