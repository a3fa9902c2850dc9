// Goal: a broker handing off on SIGTERM leaves only once each successor no longer needs it: its
// follower copy fenced at the new generation and, for a `quorum` shard with records, a batch of
// that generation answered held (in a set of two the successor's majority is both members).
// Method: handOff with in-process fakes of the control-plane client, membership and replicator;
// the follower copy is a value the test changes while the hand-off polls it.
import { waitFor } from '@felix/testing-harness';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ControlPlaneClient, ShardReport } from '../src/cluster/control-plane-client.js';
import { type HandoffDeps, handOff, successorWaitsOf } from '../src/cluster/handoff.js';
import type { Membership } from '../src/cluster/membership.js';
import type { Replicator } from '../src/cluster/replicator.js';

const report: ShardReport = {
  tenant_id: 't1',
  namespace: 'default',
  kind: 'stream',
  stream: 'orders',
  shard: 0,
  generation: 1,
  leader_offset: 10,
  commit_offset: 10,
  replica_offsets: [{ node_id: 'n2', durable_offset: 10 }],
  halted: [],
  in_sync: ['n2'],
};

type Copy = { tail: number; generation: number; held: number } | undefined;

/** A leaver of one quorum stream shard whose move the control plane makes at once. */
function leaver(copy: () => Copy) {
  let moved = false;
  let polls = 0;
  const replicator = {
    allLevel: () => true,
    reports: (leaving = false) =>
      moved ? [] : [{ ...report, ...(leaving ? { drained: true, caught_up: ['n2'] } : {}) }],
  } as unknown as Replicator;
  const deps: HandoffDeps = {
    client: {
      drain: async () => undefined,
      replicaStatus: async () => {
        moved = true;
      },
    } as unknown as ControlPlaneClient,
    membership: {
      isRegistered: true,
      spec: { node_id: 'n1' },
      currentIncarnation: 1,
      nextReportSeq: () => 1,
    } as unknown as Membership,
    replicator: () => replicator,
    followerCopy: () => {
      polls++;
      return copy();
    },
    configOf: () => ({ consistency: 'quorum' }),
    log: pino({ level: 'silent' }),
  };
  return { deps, polls: () => polls };
}

describe('hand-off waits for its successor', () => {
  it('a_leaver_stays_until_its_successor_has_fenced_its_copy_and_had_a_batch_held', async () => {
    let copy: Copy;
    const l = leaver(() => copy);
    let outcome: string | undefined;
    const run = handOff(l.deps, 10_000).then((o) => {
      outcome = o;
    });
    await waitFor(() => l.polls() > 2, 'the hand-off to look at the copy', 5_000);
    expect(outcome).toBeUndefined();
    // Fenced, but the generation start not held yet: the successor still needs this broker.
    copy = { tail: 10, generation: 2, held: 0 };
    const seen = l.polls();
    await waitFor(() => l.polls() > seen + 2, 'the hand-off to look again', 5_000);
    expect(outcome).toBeUndefined();
    copy = { tail: 11, generation: 2, held: 2 };
    await run;
    expect(outcome).toBe('handed_off');
  });

  it('a_leaver_whose_successor_never_fenced_it_says_so_when_its_bound_ends', async () => {
    const l = leaver(() => ({ tail: 10, generation: 1, held: 1 }));
    expect(await handOff(l.deps, 300)).toBe('not_fenced');
  });

  it('a_successor_waits_for_what_each_kind_of_shard_needs_of_its_members', () => {
    const cache = { ...report, kind: 'cache' as const };
    expect(successorWaitsOf(report, { consistency: 'quorum' })).toEqual([
      { log: 'stream', held: true },
    ]);
    expect(successorWaitsOf(report, { consistency: 'leader' })).toEqual([
      { log: 'stream', held: false },
    ]);
    expect(successorWaitsOf(cache, { consistency: 'quorum', durable: true })).toEqual([
      { log: 'cache', held: true },
      { log: 'counters', held: true },
    ]);
    // Opened unfenced: nothing to wait for.
    expect(successorWaitsOf(cache, { consistency: 'leader', durable: true })).toEqual([]);
    expect(successorWaitsOf(cache, { consistency: 'quorum', durable: false })).toEqual([]);
  });
});
