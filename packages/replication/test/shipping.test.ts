/**
 * Goal: log shipping converges and never overstates what a follower holds: over a network that
 * drops, duplicates and delays frames, with timeouts and resends, a follower ends with exactly
 * its leader's log and the leader's cursor never counts a record the follower has not made
 * durable; a deposed leader is fenced, a damaged batch is refused and resent, a batch of a
 * generation the follower was not assigned yet is refused until it is, a follower behind the
 * leader's retained base is bootstrapped (or halted if it holds other records), and the commit
 * mark is what a majority holds and never moves back.
 * Method: the real follower pieces (batch checks, replica file, segment log, FollowerAppender)
 * on disk behind FLXI frames encoded and decoded with @felix/wire; the network is a pair of
 * queues a fast-check schedule acts on.
 */
import { tempDir } from '@felix/testing-harness';
import { INTERNAL_ERROR } from '@felix/wire';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidReplicaSetError } from '../src/errors.js';
import { CommitMark, majorityHeld } from '../src/leader/commit-mark.js';
import { FollowerCursor } from '../src/leader/follower-cursor.js';
import {
  LeaderLog,
  SHARD,
  SimFollower,
  decodeFrame,
  shipmentFrame,
  takeAnswer,
} from './support/sim.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function follower(assigned = 1): Promise<SimFollower> {
  const dir = await tempDir('felix-replication-');
  const f = new SimFollower(
    { root: dir.path, shard: SHARD, fsync: 'onCommit', segmentBytes: 8192, preallocateBytes: 0 },
    assigned,
  );
  cleanups.push(async () => {
    // A test that failed mid-way may leave a closed server behind.
    await f.close().catch(() => undefined);
    await dir.cleanup();
  });
  return f;
}

const record = (i: number, size = 40) => {
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, i);
  out.fill(i & 0xff, 4);
  return out;
};

/** Ships until the cursor has nothing to send (a reliable network), at most `rounds` times. */
async function settle(cursor: FollowerCursor, leader: LeaderLog, f: SimFollower, gen: number) {
  for (let round = 0; round < 10_000; round++) {
    const s = cursor.plan(leader, 16);
    if (s === null) return;
    takeAnswer(cursor, await f.handle(shipmentFrame(s, leader, gen)));
  }
  throw new Error('shipping did not settle');
}

/** A leader holding one record, and a new cursor's first batch of it. */
function oneRecordPlanned() {
  const leader = new LeaderLog();
  leader.append(record(0));
  const cursor = new FollowerCursor(0);
  return { leader, cursor, s: cursor.plan(leader, 16)! };
}

async function followerRecords(f: SimFollower): Promise<Uint8Array[]> {
  return (await f.records()).payloads;
}

type Step =
  | { op: 'append'; count: number }
  | { op: 'send' }
  | { op: 'deliverRequest'; pick: number; duplicate: boolean }
  | { op: 'dropRequest'; pick: number }
  | { op: 'deliverAnswer'; pick: number; duplicate: boolean }
  | { op: 'dropAnswer'; pick: number }
  | { op: 'timeout'; pick: number };

const steps = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant('append' as const), count: fc.integer({ min: 1, max: 20 }) }),
    fc.constant({ op: 'send' as const }),
    fc.record({
      op: fc.constant('deliverRequest' as const),
      pick: fc.nat(),
      duplicate: fc.boolean(),
    }),
    fc.record({ op: fc.constant('dropRequest' as const), pick: fc.nat() }),
    fc.record({
      op: fc.constant('deliverAnswer' as const),
      pick: fc.nat(),
      duplicate: fc.boolean(),
    }),
    fc.record({ op: fc.constant('dropAnswer' as const), pick: fc.nat() }),
    fc.record({ op: fc.constant('timeout' as const), pick: fc.nat() }),
  ),
  { maxLength: 80 },
) as fc.Arbitrary<Step[]>;

/** Takes (or, duplicating, copies) one queued frame. */
function take(queue: Uint8Array[], pick: number, duplicate: boolean): Uint8Array | undefined {
  if (queue.length === 0) return undefined;
  const i = pick % queue.length;
  return duplicate ? queue[i] : queue.splice(i, 1)[0];
}

describe('log shipping', () => {
  it('a_follower_ends_with_its_leaders_log_over_a_network_that_drops_duplicates_and_delays', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: 30 }),
        fc.nat(),
        fc.integer({ min: 1, max: 3 }),
        steps,
        async (initial, startSeed, depth, schedule) => {
          const leader = new LeaderLog();
          for (let i = 0; i < initial; i++) leader.append(record(i));
          const f = await follower();
          // A new leader starts its cursor where it guesses the follower is: often past its tail.
          const cursor = new FollowerCursor(startSeed % (initial + 1));
          const requests: Uint8Array[] = [];
          const answers: Uint8Array[] = [];
          /** Every batch sent, oldest first: a timeout names one of them. */
          const sent: number[] = [];
          for (const s of schedule) {
            if (s.op === 'append')
              for (let k = 0; k < s.count; k++) leader.append(record(leader.tail));
            else if (s.op === 'send') {
              // Up to `depth` batches in flight (REPLICATE_BATCHES_IN_FLIGHT_MAX in the shipper).
              const shipment = cursor.plan(leader, 8, undefined, depth);
              if (shipment !== null) {
                sent.push(shipment.correlationId);
                requests.push(shipmentFrame(shipment, leader, 1));
              }
            } else if (s.op === 'deliverRequest') {
              const req = take(requests, s.pick, s.duplicate);
              if (req !== undefined) answers.push(await f.handle(req));
            } else if (s.op === 'dropRequest') take(requests, s.pick, false);
            else if (s.op === 'deliverAnswer') {
              const ans = take(answers, s.pick, s.duplicate);
              if (ans !== undefined) takeAnswer(cursor, ans);
            } else if (s.op === 'dropAnswer') take(answers, s.pick, false);
            else if (sent.length > 0) cursor.onTimeout(sent[s.pick % sent.length]!);
            // The leader never counts what the follower has not made durable.
            expect(cursor.confirmed).toBeLessThanOrEqual(f.durable);
            expect(cursor.halted).toBeUndefined();
          }
          // Whatever is still on the wire is lost; the batches in flight time out and are resent.
          for (const id of sent) cursor.onTimeout(id);
          await settle(cursor, leader, f, 1);
          expect(cursor.confirmed).toBe(leader.tail);
          expect(await followerRecords(f)).toEqual(leader.records);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('a_deposed_leaders_batch_is_fenced_once_the_follower_accepted_a_newer_generation', async () => {
    const f = await follower(3);
    const newer = new LeaderLog();
    for (let i = 0; i < 5; i++) newer.append(record(i));
    await settle(new FollowerCursor(0), newer, f, 3);
    expect(f.generation).toBe(3);
    // The old leader (generation 2) wrote other records at the same offsets.
    const old = new LeaderLog();
    for (let i = 0; i < 8; i++) old.append(record(100 + i));
    const stale = new FollowerCursor(3);
    const s = stale.plan(old, 16)!;
    const answer = decodeFrame(await f.handle(shipmentFrame(s, old, 2)));
    expect(answer).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.FencedEpoch });
    takeAnswer(stale, await f.handle(shipmentFrame(s, old, 2)));
    expect(stale.fenced).toBe(true);
    expect(stale.plan(old, 16)).toBeNull();
    expect(await followerRecords(f)).toEqual(newer.records);
  });

  it('a_damaged_batch_is_refused_as_malformed_and_its_resend_is_stored', async () => {
    const f = await follower();
    const leader = new LeaderLog();
    for (let i = 0; i < 4; i++) leader.append(record(i));
    const cursor = new FollowerCursor(0);
    const s = cursor.plan(leader, 16)!;
    const frame = shipmentFrame(s, leader, 1);
    frame[frame.length - 1]! ^= 0xff; // a payload byte flipped in flight
    takeAnswer(cursor, await f.handle(frame));
    expect(f.durable).toBe(0);
    expect(cursor.halted).toBeUndefined();
    await settle(cursor, leader, f, 1);
    expect(await followerRecords(f)).toEqual(leader.records);
  });

  it('a_batch_of_a_generation_the_follower_was_not_assigned_yet_is_refused_until_it_is', async () => {
    const f = await follower(1);
    const { leader, cursor, s } = oneRecordPlanned();
    const refused = decodeFrame(await f.handle(shipmentFrame(s, leader, 2)));
    expect(refused).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.StaleRoute });
    takeAnswer(cursor, await f.handle(shipmentFrame(s, leader, 2)));
    f.assigned = 2;
    await settle(cursor, leader, f, 2);
    expect(f.generation).toBe(2);
    expect(await followerRecords(f)).toEqual(leader.records);
  });

  it('a_batch_reaching_a_follower_that_has_not_heard_of_its_shard_yet_is_sent_again_once_it_has', async () => {
    // A broker just started (or a shard just placed) can hear from its leader before its own
    // feed names the assignment: a refusal the leader stops on would leave it behind for good.
    const f = await follower();
    f.assigned = undefined;
    const { leader, cursor, s } = oneRecordPlanned();
    const refused = decodeFrame(await f.handle(shipmentFrame(s, leader, 1)));
    expect(refused).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.StaleRoute });
    takeAnswer(cursor, await f.handle(shipmentFrame(s, leader, 1)));
    expect(cursor.halted).toBeUndefined();
    expect(f.durable).toBe(0);
    f.assigned = 1;
    await settle(cursor, leader, f, 1);
    expect(await followerRecords(f)).toEqual(leader.records);
  });

  it('a_follower_shutting_down_asks_its_leader_to_send_the_batch_again', async () => {
    const f = await follower();
    const leader = new LeaderLog();
    leader.append(record(0));
    const cursor = new FollowerCursor(0);
    await settle(cursor, leader, f, 1);
    await f.close();
    leader.append(record(1));
    const s = cursor.plan(leader, 16)!;
    const refused = decodeFrame(await f.handle(shipmentFrame(s, leader, 1)));
    expect(refused).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.Unavailable });
    takeAnswer(cursor, await f.handle(shipmentFrame(s, leader, 1)));
    // Back on the same log (a restart): the same cursor goes on where the follower stopped.
    expect(cursor.halted).toBeUndefined();
    const back = new SimFollower(f.opts, 1);
    cleanups.push(() => back.close());
    await settle(cursor, leader, back, 1);
    expect(await followerRecords(back)).toEqual(leader.records);
  });

  it('a_follower_behind_the_leaders_retained_base_is_bootstrapped_there', async () => {
    const f = await follower();
    const leader = new LeaderLog();
    for (let i = 0; i < 30; i++) leader.append(record(i));
    leader.base = 20; // retention removed 0..19
    const cursor = new FollowerCursor(0);
    const first = cursor.plan(leader, 16);
    expect(first).toMatchObject({ kind: 'bootstrap', base: 20 });
    takeAnswer(cursor, await f.handle(shipmentFrame(first!, leader, 1)));
    await settle(cursor, leader, f, 1);
    expect(await f.records()).toEqual({ base: 20, payloads: leader.records.slice(20) });
  });

  it('a_follower_holding_records_below_the_leaders_base_is_halted_not_emptied', async () => {
    const f = await follower();
    const leader = new LeaderLog();
    for (let i = 0; i < 30; i++) leader.append(record(i));
    const cursor = new FollowerCursor(0);
    const s = cursor.plan(leader, 5)!;
    takeAnswer(cursor, await f.handle(shipmentFrame(s, leader, 1)));
    leader.base = 20;
    const offer = cursor.plan(leader, 16);
    expect(offer).toMatchObject({ kind: 'bootstrap', base: 20 });
    takeAnswer(cursor, await f.handle(shipmentFrame(offer!, leader, 1)));
    expect(cursor.halted).toBe('needs_bootstrap');
    expect(await followerRecords(f)).toEqual(leader.records.slice(0, 5));
  });

  it('a_follower_halted_below_the_leaders_base_is_rebuilt_there_and_caught_up', async () => {
    const f = await follower();
    const leader = new LeaderLog();
    for (let i = 0; i < 30; i++) leader.append(record(i));
    const cursor = new FollowerCursor(0);
    takeAnswer(cursor, await f.handle(shipmentFrame(cursor.plan(leader, 5)!, leader, 1)));
    leader.base = 20;
    takeAnswer(cursor, await f.handle(shipmentFrame(cursor.plan(leader, 16)!, leader, 1)));
    expect(cursor.halted).toBe('needs_bootstrap');
    // Nothing ships while halted; only a rebuild at the base may go.
    expect(cursor.plan(leader, 16)).toBeNull();
    const rebuild = cursor.rebuildPlan(leader.base);
    expect(rebuild).toMatchObject({ kind: 'rebuild', base: 20 });
    expect(cursor.rebuildPlan(leader.base)).toBeNull(); // one at a time
    takeAnswer(cursor, await f.handle(shipmentFrame(rebuild!, leader, 1)));
    expect(cursor.halted).toBeUndefined();
    expect([cursor.next, cursor.confirmed]).toEqual([20, 20]);
    await settle(cursor, leader, f, 1);
    expect(await f.records()).toEqual({ base: 20, payloads: leader.records.slice(20) });
    expect(cursor.confirmed).toBe(30);
  });

  it('a_rebuild_leaves_a_follower_holding_records_at_or_above_the_base_halted_with_its_records', async () => {
    const f = await follower();
    const leader = new LeaderLog();
    for (let i = 0; i < 30; i++) leader.append(record(i));
    const cursor = new FollowerCursor(0);
    await settle(cursor, leader, f, 1);
    // A cursor that believes the follower is behind (it halted earlier), against a follower
    // that holds the whole log: the rebuild must not discard what the leader still has.
    const stale = new FollowerCursor(0);
    leader.base = 20;
    takeAnswer(stale, await f.handle(shipmentFrame(stale.plan(leader, 16)!, leader, 1)));
    expect(stale.halted).toBe('needs_bootstrap');
    const answer = await f.handle(shipmentFrame(stale.rebuildPlan(leader.base)!, leader, 1));
    expect(decodeFrame(answer)).toMatchObject({
      kind: 'ReplicateError',
      code: INTERNAL_ERROR.LogConflict,
    });
    takeAnswer(stale, answer);
    expect(stale.halted).toBe('needs_bootstrap');
    expect(await f.records()).toEqual({ base: 0, payloads: leader.records });
  });

  it('a_rebuild_from_a_deposed_leader_is_refused_and_discards_nothing', async () => {
    const f = await follower(2);
    const leader = new LeaderLog();
    for (let i = 0; i < 10; i++) leader.append(record(i));
    const cursor = new FollowerCursor(0);
    await settle(cursor, leader, f, 2);
    const old = decodeFrame(
      await f.handle(shipmentFrame({ kind: 'rebuild', correlationId: 9, base: 50 }, leader, 1)),
    );
    expect(old).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.FencedEpoch });
    expect(await f.records()).toEqual({ base: 0, payloads: leader.records });
  });

  it('the_commit_mark_is_what_a_majority_holds_and_never_moves_back', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 7 }),
        fc.array(fc.array(fc.nat({ max: 1000 }), { maxLength: 7 }), {
          minLength: 1,
          maxLength: 20,
        }),
        (size, reports) => {
          const mark = new CommitMark(size);
          let before = 0;
          for (const held of reports) {
            const members = held.slice(0, size);
            mark.advance(members);
            expect(mark.offset).toBeGreaterThanOrEqual(before);
            before = mark.offset;
            const m = majorityHeld(members, size);
            // A majority of the set holds at least m; no larger value has a majority.
            expect(
              members.filter((o) => o >= m).length >= Math.floor(size / 2) + 1 || m === 0,
            ).toBe(true);
            expect(members.filter((o) => o > m).length).toBeLessThan(Math.floor(size / 2) + 1);
          }
        },
      ),
    );
    expect(() => majorityHeld([1], 0)).toThrow(InvalidReplicaSetError);
    expect(majorityHeld([10, 7, 3], 3)).toBe(7);
    expect(majorityHeld([10], 3)).toBe(0);
  });
});
