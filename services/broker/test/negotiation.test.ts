// Goal: the broker's `auth` answer, now computed by @felix/wire's negotiation, names only what the
// client offered, sends the `_hi` word (and its marker) only when a high bit is shared, and gives
// an old client a plain `ok` with the original layouts. Method: pure calls over the offers a
// client can make, checked against the answers the broker has always written.
import {
  FEATURE_CACHE_DELETE,
  FEATURE_COUNTERS,
  FEATURE_EXTENDED,
  FEATURE_STREAM_SHARDS,
  FLAG_BINARY_PUBLISH_ACK,
  FLAG_BINARY_PUBLISH_BATCH,
  ORIGINAL_V1_FLAGS,
} from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { SERVER_FLAGS, authAnswer, negotiateAuth } from '../src/session/negotiation.js';

const offered = FEATURE_STREAM_SHARDS | FEATURE_CACHE_DELETE;

describe('broker negotiation', () => {
  it('an_auth_answer_names_only_what_the_client_offered_and_the_hi_word_only_when_shared', () => {
    const flags = FLAG_BINARY_PUBLISH_BATCH | FLAG_BINARY_PUBLISH_ACK | 0x0100;
    const plain = negotiateAuth('t', flags, FEATURE_STREAM_SHARDS | FEATURE_COUNTERS, offered);
    expect(plain).toEqual({
      tenant: 't',
      flags: flags & SERVER_FLAGS,
      features: FEATURE_STREAM_SHARDS,
      featuresHi: 0,
      negotiating: true,
    });
    expect(authAnswer(plain, 4)).toEqual({
      type: 'auth_ok',
      server_flags: flags & SERVER_FLAGS,
      server_features: FEATURE_STREAM_SHARDS,
      publish_window: 4,
    });
    const sent = (FEATURE_STREAM_SHARDS | FEATURE_EXTENDED) >>> 0;
    const withHi = negotiateAuth('t', flags, sent, offered, 0b11, 0b10);
    expect(withHi.featuresHi).toBe(0b10);
    expect(authAnswer(withHi, 1)).toMatchObject({
      server_features: sent,
      server_features_hi: 0b10,
    });
    // A hi word without the marker is not read; nothing shared sends no marker.
    expect(negotiateAuth('t', flags, FEATURE_STREAM_SHARDS, offered, 0b11, 0b11).featuresHi).toBe(
      0,
    );
    expect(authAnswer(negotiateAuth('t', flags, sent, offered, 0b01, 0b10), 1)).toEqual({
      type: 'auth_ok',
      server_flags: flags & SERVER_FLAGS,
      server_features: FEATURE_STREAM_SHARDS,
      publish_window: 1,
    });
  });

  it('a_client_that_offers_nothing_gets_ok_and_the_original_layouts', () => {
    const old = negotiateAuth('t', undefined, FEATURE_STREAM_SHARDS, offered);
    expect(old).toEqual({
      tenant: 't',
      flags: ORIGINAL_V1_FLAGS & SERVER_FLAGS,
      features: 0,
      featuresHi: 0,
      negotiating: false,
    });
    expect(authAnswer(old, 8)).toEqual({ type: 'ok' });
  });
});
