/**
 * Goal: a new leader's commit mark counts the records it inherited past the old mark only
 * through a record of its own generation (its generation-start record, Raft's "Figure 8"), and
 * that record ships to followers like any record, with its mark, at the leader's offset.
 * Method: the CommitMark alone over hand-made confirmations; then a real ShardShipper reading a
 * real leader log (a quorum shard: every other batch is kind 26) into the real ReplicaServer
 * over real storage, the follower's log read back after it closes.
 */
import { cleanupScope, waitFor } from '@felix/testing-harness';
import { FLAG_GENERATION_START, type LogOptions, SegmentLog } from '@felix/storage';
import { afterEach, describe, expect, it } from 'vitest';
import { ReplicaServer } from '../src/follower/replica-server.js';
import { CommitMark } from '../src/leader/commit-mark.js';
import { ShardShipper } from '../src/leader/shard-shipper.js';
import { SHARD, shardRef } from './support/sim.js';

const ENC = new TextEncoder();
const DEC = new TextDecoder();
const scope = cleanupScope();
afterEach(() => scope.run());

async function openAt(prefix: string): Promise<SegmentLog> {
  const d = await scope.tempDir(prefix);
  const opts: LogOptions = { root: d.path, shard: SHARD, fsync: 'onCommit', preallocateBytes: 0 };
  return SegmentLog.open(opts);
}

describe('generation starts', () => {
  it('a_new_leaders_mark_counts_its_inherited_suffix_only_through_a_record_of_its_own_generation', () => {
    // Set of three; the fence answers said 4 was committed; this generation starts at 8, so
    // offsets 4..7 were inherited. Members: leader, f1, f2.
    const mark = new CommitMark(3, 4, 8);
    // The leader and f1 hold the inherited suffix: a majority, but of no record of this
    // generation, so nothing more is committed (a later leader could still drop 4..7).
    expect(mark.advance([8, 8, 4])).toBe(false);
    expect(mark.offset).toBe(4);
    // The leader appended its generation start (8) and made it durable; f1 not yet.
    expect(mark.advance([9, 8, 4])).toBe(false);
    expect(mark.offset).toBe(4);
    // f1 holds the generation start: it and everything below it commit at once.
    expect(mark.advance([9, 9, 4])).toBe(true);
    expect(mark.offset).toBe(9);
    // A leader that wrote its own log from the start counts every record as before.
    const own = new CommitMark(3);
    expect(own.advance([3, 2, 0])).toBe(true);
    expect(own.offset).toBe(2);
  });

  it('a_generation_start_record_ships_with_its_mark_to_the_leaders_offset_on_the_follower', async () => {
    const leader = await openAt('felix-genstart-leader-');
    scope.defer(() => leader.close());
    await leader.append(['a0', 'a1', 'a2'].map((v) => ENC.encode(v)));
    const gs = await leader.appendGenerationStart(2);
    await leader.append([ENC.encode('n4')]);
    const followerDir = await scope.tempDir('felix-genstart-follower-');
    const followerOpts: LogOptions = {
      root: followerDir.path,
      shard: SHARD,
      fsync: 'onCommit',
      preallocateBytes: 0,
    };
    const server = new ReplicaServer({
      logOptions: () => followerOpts,
      assignment: () => ({ generation: 2 }),
    });
    scope.defer(() => server.close());
    const stopped: string[] = [];
    const shipper = new ShardShipper({
      log: leader,
      shard: shardRef(2),
      followers: [{ nodeId: 'f1', link: { request: (f) => server.handle(f) }, start: 0 }],
      commitOffset: () => 0,
      onStopped: (_id, reason) => stopped.push(reason),
    });
    scope.defer(() => shipper.stop());
    await waitFor(() => shipper.confirmed('f1') === 5, 'the follower to hold the log', 10_000);
    expect(stopped).toEqual([]);
    await shipper.stop();
    await server.close();
    const follower = await SegmentLog.open(followerOpts);
    scope.defer(() => follower.close());
    const raw = await follower.read(0, { includeGenerationStarts: true });
    if (raw.kind !== 'records') throw new Error('trimmed');
    expect(raw.records.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4]);
    expect(raw.records.map((r) => (r.flags & FLAG_GENERATION_START) !== 0)).toEqual([
      false,
      false,
      false,
      true,
      false,
    ]);
    expect(gs.first).toBe(3);
    // Readers skip it; the user records keep their offsets.
    const seen = await follower.read(0);
    if (seen.kind !== 'records') throw new Error('trimmed');
    expect(seen.records.map((r) => `${r.offset}:${DEC.decode(r.payload)}`)).toEqual([
      '0:a0',
      '1:a1',
      '2:a2',
      '4:n4',
    ]);
  });
});
