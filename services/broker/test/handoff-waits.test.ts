// Goal: a broker handing off on SIGTERM leaves only once each successor no longer needs it: its
// follower copy fenced at the new generation and, for a `quorum` shard with records, a batch of
// that generation answered held (in a set of two the successor's majority is both members).
// Method: handOff with in-process fakes of the control-plane client, membership and replicator;
// the follower copy is a value the test changes while the hand-off polls it.
import { waitFor } from '@felix/testing-harness';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ControlPlaneClient, ShardReport } from '../src/cluster/control-plane-client.js';
import {
  type FollowerCopy,
  type HandoffDeps,
  handOff,
  successorWaitsOf,
} from '../src/cluster/handoff.js';
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

type Copy = FollowerCopy | undefined;

/** A copy that ended at `end` when it accepted `generation` (its fence) and held a batch of
 *  generation `held` through `through`. */
function copyOf(end: number, generation: number, held = 0, through = 0): FollowerCopy {
  const tail = Math.max(end, through);
  return {
    base: 0,
    tail,
    generation,
    held,
    heldThrough: through,
    fencedEnd: end,
    fencedGeneration: generation,
  };
}

/** A leaver of one shard (a quorum stream unless `shard` and `config` say otherwise) whose move
 *  the control plane makes at once; `copy` answers for each log of it. */
function leaver(
  copy: (log: string) => Copy,
  shard: ShardReport = report,
  config: { consistency: string; durable?: boolean } = { consistency: 'quorum' },
) {
  let moved = false;
  let polls = 0;
  const replicator = {
    allLevel: () => true,
    reports: (leaving = false) =>
      moved ? [] : [{ ...shard, ...(leaving ? { drained: true, caught_up: ['n2'] } : {}) }],
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
    followerCopy: (_ref, log) => {
      polls++;
      return copy(log);
    },
    configOf: () => config,
    log: pino({ level: 'silent' }),
  };
  return { deps, polls: () => polls };
}

describe('hand-off waits for its successor', () => {
  /** Runs a hand-off and lets the test change the copy while it polls. */
  function running(l: ReturnType<typeof leaver>) {
    const state: { outcome?: string } = {};
    const done = handOff(l.deps, 10_000).then((o) => {
      state.outcome = o;
    });
    /** Waits until the hand-off looked at the copy again, and says it is still waiting. */
    const stillWaiting = async (what: string) => {
      const seen = l.polls();
      await waitFor(() => l.polls() > seen + 2, what, 5_000);
      expect(state.outcome).toBeUndefined();
    };
    return { state, done, stillWaiting };
  }

  it('a_leaver_stays_until_its_successor_has_fenced_its_copy_and_had_a_batch_held', async () => {
    let copy: Copy;
    const run = running(leaver(() => copy));
    await run.stillWaiting('the hand-off to look at an unopened copy');
    // Fenced, nothing of the new generation held yet.
    copy = copyOf(10, 2);
    await run.stillWaiting('the hand-off to look at the fenced copy');
    // The successor's first batch held, but it stopped short of its generation start (a large
    // record before it filled the batch): its generation start is not held here yet.
    copy = copyOf(10, 2, 2, 10);
    await run.stillWaiting('the hand-off to look at a batch short of the generation start');
    copy = copyOf(10, 2, 2, 11);
    await run.done;
    expect(run.state.outcome).toBe('handed_off');
  });

  it('a_leaver_of_an_empty_or_leader_stream_waits_for_the_fence_alone', async () => {
    const empty = leaver(() => copyOf(0, 2), { ...report, leader_offset: 0 });
    expect(await handOff(empty.deps, 10_000)).toBe('handed_off');
    const led = leaver(() => copyOf(10, 2), report, { consistency: 'leader' });
    expect(await handOff(led.deps, 10_000)).toBe('handed_off');
  });

  it('a_leaver_of_a_quorum_cache_stays_until_both_its_logs_are_held_to_their_ends', async () => {
    // The cache log goes on growing with the successor's own writes: held past where it
    // ended at the fence is enough.
    const copies = new Map<string, Copy>([
      ['cache', { ...copyOf(10, 2, 2, 12), tail: 15 }],
      ['counters', copyOf(4, 2)],
    ]);
    const cache = { ...report, kind: 'cache' as const, stream: 'sessions' };
    const run = running(
      leaver((log) => copies.get(log), cache, { consistency: 'quorum', durable: true }),
    );
    await run.stillWaiting('the hand-off to look at a counter log not held yet');
    copies.set('counters', copyOf(4, 2, 2, 3));
    await run.stillWaiting('the hand-off to look at a counter log held short of its end');
    copies.set('counters', copyOf(4, 2, 2, 4));
    await run.done;
    expect(run.state.outcome).toBe('handed_off');
    // A log whose records are all trimmed (base at tail) gets no batch: nothing to wait for.
    const trimmed = leaver(
      (log) => (log === 'cache' ? copyOf(10, 2, 2, 10) : { ...copyOf(4, 2), base: 4 }),
      cache,
      { consistency: 'quorum', durable: true },
    );
    expect(await handOff(trimmed.deps, 10_000)).toBe('handed_off');
  });

  it('a_leaver_whose_successor_never_fenced_it_says_so_when_its_bound_ends', async () => {
    const l = leaver(() => copyOf(10, 1, 1, 10));
    expect(await handOff(l.deps, 300)).toBe('not_fenced');
  });

  it('a_successor_waits_for_what_each_kind_of_shard_needs_of_its_members', () => {
    const cache = { ...report, kind: 'cache' as const };
    expect(successorWaitsOf(report, { consistency: 'quorum' })).toEqual([
      { log: 'stream', held: 'past_end' },
    ]);
    expect(successorWaitsOf(report, { consistency: 'leader' })).toEqual([
      { log: 'stream', held: 'none' },
    ]);
    expect(successorWaitsOf(cache, { consistency: 'quorum', durable: true })).toEqual([
      { log: 'cache', held: 'to_end' },
      { log: 'counters', held: 'to_end' },
    ]);
    // Opened unfenced: nothing to wait for.
    expect(successorWaitsOf(cache, { consistency: 'leader', durable: true })).toEqual([]);
    expect(successorWaitsOf(cache, { consistency: 'quorum', durable: false })).toEqual([]);
  });
});
