// Goal: felixctl's data verbs read start positions and durations as documented and turn any
// error into one line and an exit code by its `code` (never by class). Method: the pure
// functions of src/cli/data/ called directly; plain objects stand in for the client's errors.
import { ConnectError } from '@felix/client';
import { describe, expect, it } from 'vitest';
import { EXIT, describeError, exitCodeOf } from '../src/cli/data/report.js';
import { lastFailureOfShardsNotIn } from '../src/cli/data/sub.js';
import { durationMs, parseFrom } from '../src/cli/data/values.js';

describe('felixctl data arguments', () => {
  it('felixctl_from_reads_earliest_latest_offsets_iso_times_and_ages', () => {
    const now = Date.parse('2026-12-03T02:00:00Z');
    expect(parseFrom('earliest', now)).toBe('earliest');
    expect(parseFrom('latest', now)).toBe('latest');
    expect(parseFrom('42', now)).toBe(42);
    expect(parseFrom('5m', now)).toEqual({ time: new Date(now - 300_000) });
    expect(parseFrom('2026-12-01T00:00:00Z', now)).toEqual({
      time: new Date('2026-12-01T00:00:00Z'),
    });
    expect(() => parseFrom('soon', now)).toThrow(/not a start position/);
    expect(durationMs('--ttl', '1h')).toBe(3_600_000);
    expect(durationMs('--ttl', '250')).toBe(250);
    expect(() => durationMs('--ttl', '-1s')).toThrow(/not a duration/);
  });

  it('felixctl_reports_a_connect_failure_caused_by_a_refused_token_as_the_refusal', () => {
    const refused = { code: 'FELIX_CLIENT_UNAUTHENTICATED', brokerCode: 'unauthenticated' };
    const connect = Object.assign(new Error('could not connect to quic://h:5000'), {
      code: 'FELIX_CLIENT_CONNECT',
      cause: Object.assign(new Error('token refused'), refused),
    });
    expect(describeError(connect)).toMatch(
      /^FELIX_CLIENT_UNAUTHENTICATED \(unauthenticated\): token refused; hint: .*token mint/,
    );
    expect(exitCodeOf(connect)).toBe(EXIT.refused);
    const unreachable = Object.assign(new Error('could not connect'), {
      code: 'FELIX_CLIENT_CONNECT',
      cause: Object.assign(new Error('ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    expect(exitCodeOf(unreachable)).toBe(EXIT.unavailable);
    expect(exitCodeOf(new Error('no code at all'))).toBe(EXIT.usage);
  });

  it('felixctl_does_not_blame_server_for_an_unreachable_owner_the_cluster_named', () => {
    // A new user's trial: with only a live broker given, a publish right after the leader's
    // SIGKILL failed naming the dead leader's address and the hint "check --server".
    const fromCluster = new ConnectError(['quic://127.0.0.1:5101'], {
      cause: new Error('no handshake within 10000 ms'),
      learned: true,
    });
    const line = describeError(fromCluster);
    expect(line).toContain("quic://127.0.0.1:5101, the shard's owner as the cluster named it");
    expect(line).toContain('--server needs no change');
    expect(line).not.toContain('check --server');
    expect(exitCodeOf(fromCluster)).toBe(EXIT.unavailable);
    // A server the user gave keeps the hint about --server.
    const given = new ConnectError(['quic://127.0.0.1:5102']);
    expect(describeError(given)).toContain('check --server');
  });

  it('felixctl_sub_until_end_names_the_refusal_of_a_shard_still_not_subscribed', () => {
    // Review: a merged `sub --until-end` that timed out named the last refusal of any shard,
    // which may be one that had subscribed since (its refusal no longer the cause).
    const last = new Map<number, Error>([
      [0, new Error('shard 0 is still opening')],
      [2, new Error('shard 2: no leader')],
      [1, new Error('shard 1 is still opening')],
    ]);
    expect(lastFailureOfShardsNotIn(last, { 0: 5, 1: 0 })?.message).toBe('shard 2: no leader');
    expect(lastFailureOfShardsNotIn(last, { 2: 0 })?.message).toBe('shard 1 is still opening');
    expect(lastFailureOfShardsNotIn(last, { 0: 1, 1: 1, 2: 1 })).toBeUndefined();
  });
});
