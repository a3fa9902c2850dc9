// Goal: the broker's bounds agree with each other and with the client's. Method: compare the
// named constants (as TigerBeetle's comptime asserts do).
import {
  FRAME_BYTES_MAX as CLIENT_FRAME_BYTES_MAX,
  REQUEST_TIMEOUT_MS_DEFAULT as CLIENT_REQUEST_TIMEOUT_MS,
} from '@felix/client';
import { describe, expect, it } from 'vitest';
import * as L from '../src/limits.js';

describe('broker limits', () => {
  it('the_broker_limits_are_consistent', () => {
    expect(L.PREAUTH_FRAME_BYTES_DEFAULT).toBeLessThanOrEqual(L.FRAME_BYTES_DEFAULT);
    expect(L.FRAME_BYTES_DEFAULT).toBeLessThanOrEqual(L.FRAME_BYTES_MAX);
    // A history page, framed, fits the frame the client accepts.
    expect(L.HISTORY_PAGE_BYTES_MAX + 12 + 4 * L.HISTORY_PAGE_RECORDS_MAX + 16).toBeLessThanOrEqual(
      CLIENT_FRAME_BYTES_MAX,
    );
    // Live event batches are as large as the publish frames they came from.
    expect(L.FRAME_BYTES_DEFAULT).toBeLessThanOrEqual(CLIENT_FRAME_BYTES_MAX);
    expect(L.SUBSCRIBER_QUEUE_BATCHES_DEFAULT).toBeLessThanOrEqual(L.SUBSCRIBER_QUEUE_BATCHES_MAX);
    expect(L.PUBLISH_WINDOW_DEFAULT).toBeLessThanOrEqual(L.PUBLISH_WINDOW_MAX);
    expect(L.PUBLISH_QUORUM_TIMEOUT_MS_DEFAULT).toBeLessThanOrEqual(
      L.PUBLISH_QUORUM_TIMEOUT_MS_MAX,
    );
    // Every publish a full window holds may wait for a majority at once.
    expect(L.PUBLISH_WINDOW_MAX).toBeLessThanOrEqual(L.QUORUM_WAITING_BATCHES_MAX);
    expect(L.RING_RECORDS_DEFAULT).toBeLessThanOrEqual(L.RING_RECORDS_MAX);
    expect(L.IDENT_BYTES_MAX).toBeLessThanOrEqual(0xffff); // u16-prefixed on the wire
  });

  it('the_forwarding_bounds_fit_one_peer_connection_and_the_client_timeout', () => {
    // Each forward to a peer is one stream of the one connection to it.
    expect(L.FORWARDS_IN_FLIGHT_PER_PEER_MAX).toBeLessThanOrEqual(
      L.INTERNAL_STREAMS_PER_CONNECTION_MAX,
    );
    expect(L.FORWARDS_IN_FLIGHT_PER_PEER_MAX).toBeLessThanOrEqual(L.FORWARDS_IN_FLIGHT_MAX);
    // The client hears the forward's outcome (after the owner's quorum wait for a publish)
    // before its own request times out.
    expect(L.FORWARD_TIMEOUT_MS + L.PUBLISH_QUORUM_TIMEOUT_MS_DEFAULT).toBeLessThan(
      CLIENT_REQUEST_TIMEOUT_MS,
    );
  });

  it('the_key_fetch_and_connection_bounds_are_consistent', () => {
    // A failure is remembered for less time than a key set is kept, and a fetch gives up
    // before its failure would be forgotten.
    expect(L.JWKS_FAILURE_MEMORY_MS).toBeLessThan(L.JWKS_CACHE_MS);
    expect(L.JWKS_FETCH_TIMEOUT_MS).toBeLessThanOrEqual(L.JWKS_CACHE_MS);
    expect(L.JWKS_FETCHES_IN_FLIGHT_MAX).toBeGreaterThan(0);
    // One address can hold at most the broker's connections.
    expect(L.CONNECTIONS_PER_IP_DEFAULT).toBeLessThanOrEqual(L.CLIENT_CONNECTIONS_DEFAULT);
    expect(L.NODE_TOKEN_REREAD_MS).toBeGreaterThan(0);
  });

  it('the_subscriber_byte_budget_and_merged_frames_fit_their_bounds', () => {
    expect(L.SUBSCRIBER_QUEUE_BYTES_MIN).toBeLessThanOrEqual(L.SUBSCRIBER_QUEUE_BYTES_DEFAULT);
    expect(L.SUBSCRIBER_QUEUE_BYTES_DEFAULT).toBeLessThanOrEqual(L.SUBSCRIBER_QUEUE_BYTES_MAX);
    // A merged frame (head, count, the records with their prefixes) fits the client's bound.
    expect(L.EVENT_COALESCE_BYTES_MAX + 4 * L.EVENT_COALESCE_RECORDS_MAX + 32).toBeLessThanOrEqual(
      CLIENT_FRAME_BYTES_MAX,
    );
  });
});
