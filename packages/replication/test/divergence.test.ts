/**
 * Goal: a follower repairs a deposed leader's divergent suffix and nothing else: a suffix of an
 * older generation is truncated when a newer leader's batch conflicts with it, never at or
 * below the commit offset; a batch of an older generation than the follower accepted (by a
 * batch or a fence) is refused; a resent batch is compared byte for byte, never appended twice;
 * a new leader's fence opens on a majority and makes the generation durable.
 * Method: the real ReplicaServer over real storage (SegmentLog, ReplicaFile, the generations
 * file in a temp dir), fed by a real ShardShipper reading a real leader log, or by hand-built
 * frames; the follower's log read back after it closes.
 */
import { join } from 'node:path';
import { cleanupScope, waitFor } from '@felix/testing-harness';
import {
  GenerationStarts,
  type LogOptions,
  ReplicaFile,
  SegmentLog,
  nodeIo,
  shardDirName,
} from '@felix/storage';
import { INTERNAL_ERROR, REPLICATE_MARK, batchChecksum, encodeInternalMessage } from '@felix/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { committedFrame, markedFrame } from '../src/frames.js';
import { ReplicaServer } from '../src/follower/replica-server.js';
import { fenceReplicaSet } from '../src/leader/fence.js';
import { ShardShipper } from '../src/leader/shard-shipper.js';
import { SHARD, decodeFrame, shardRef } from './support/sim.js';

const ENC = new TextEncoder();
const DEC = new TextDecoder();
const scope = cleanupScope();
afterEach(() => scope.run());

async function root(): Promise<string> {
  const d = await scope.tempDir('felix-divergence-');
  return d.path;
}

function optsAt(path: string): LogOptions {
  return { root: path, shard: SHARD, fsync: 'onCommit', preallocateBytes: 0 };
}

/** A log at `path` holding `values`, written under `generation` from offset 0. */
async function logWith(path: string, values: string[], generation: number): Promise<void> {
  const log = await SegmentLog.open(optsAt(path));
  await log.append(values.map((v) => ENC.encode(v)));
  await (await GenerationStarts.open(nodeIo, log.dir)).begin(generation, 0);
  await log.close();
}

async function valuesAt(path: string): Promise<string[]> {
  const log = await SegmentLog.open(optsAt(path));
  try {
    const r = await log.read(log.baseOffset, { maxRecords: 1000 });
    return r.kind === 'records' ? r.records.map((x) => DEC.decode(x.payload)) : [];
  } finally {
    await log.close();
  }
}

function serverAt(path: string, assigned: () => number): ReplicaServer {
  const server = new ReplicaServer({
    logOptions: () => optsAt(path),
    assignment: () => ({ generation: assigned() }),
  });
  scope.defer(() => server.close());
  return server;
}

const shared = ['a0', 'a1', 'a2', 'a3', 'a4', 'a5'];
const divergent = ['x6', 'x7', 'x8', 'x9'];
const successor = ['n6', 'n7', 'n8'];

/** Ships the new leader's log (gen 2, its generation starting at 6) from `start` to `server`. */
async function shipFrom(start: number, server: ReplicaServer) {
  const leaderRoot = await root();
  await logWith(leaderRoot, [...shared, ...successor], 1);
  const log = await SegmentLog.open(optsAt(leaderRoot));
  scope.defer(() => log.close());
  const stopped: string[] = [];
  const shipper = new ShardShipper({
    log,
    shard: shardRef(2),
    followers: [{ nodeId: 'old', link: { request: (f) => server.handle(f) }, start }],
    onStopped: (_id, reason) => stopped.push(reason),
  });
  scope.defer(() => shipper.stop());
  return { shipper, stopped, tail: log.tailOffset };
}

function records(generation: number, first: number, values: string[], id = 1): Uint8Array {
  const payloads = values.map((v) => ENC.encode(v));
  return encodeInternalMessage({
    kind: 'ReplicateRecords',
    correlationId: id,
    shard: shardRef(generation),
    firstOffset: first,
    checksum: batchChecksum(payloads),
    payloads,
  });
}

describe('divergence repair', () => {
  it('a_replica_server_truncates_an_older_generations_suffix_where_a_newer_leaders_batch_conflicts', async () => {
    // From just below the new generation's start, and from its tail (the conflict is then the
    // batch's first record: the follower asks for the older generation's start first).
    for (const start of [5, 8]) {
      const oldRoot = await root();
      await logWith(oldRoot, [...shared, ...divergent], 1);
      const server = serverAt(oldRoot, () => 2);
      const { shipper, stopped, tail } = await shipFrom(start, server);
      await waitFor(() => shipper.confirmed('old') === tail, 'the old leader to follow', 10_000);
      expect(stopped).toEqual([]);
      await shipper.stop();
      await server.close();
      expect(await valuesAt(oldRoot)).toEqual([...shared, ...successor]);
      const starts = await GenerationStarts.open(nodeIo, `${oldRoot}/${dirOf()}`);
      expect(starts.at(6).generation).toBe(2);
    }
  });

  it('a_replica_server_halts_rather_than_truncate_below_its_commit_offset', async () => {
    const oldRoot = await root();
    await logWith(oldRoot, [...shared, ...divergent], 1);
    // A majority held x6 and x7: they are committed, the suffix from 6 may not go.
    const replica = await ReplicaFile.open(nodeIo, `${oldRoot}/${dirOf()}`);
    await replica.advanceCommit(8);
    const server = serverAt(oldRoot, () => 2);
    const { stopped } = await shipFrom(5, server);
    await waitFor(() => stopped.length > 0, 'the follower to halt', 10_000);
    expect(stopped).toEqual(['diverged']);
    await server.close();
    expect(await valuesAt(oldRoot)).toEqual([...shared, ...divergent]);
  });

  it('a_newer_generations_batch_past_an_older_generations_tail_is_asked_to_overlap_it', async () => {
    // A leader that restarted its shipper for a follower-set change starts at its own tail: a
    // batch there overlaps none of a returning deposed leader's records (found between real
    // brokers: appended above the divergent suffix, which was never compared).
    const oldRoot = await root();
    await logWith(oldRoot, [...shared, ...divergent], 1);
    const server = serverAt(oldRoot, () => 2);
    for (const first of [10, 11]) {
      expect(decodeFrame(await server.handle(records(2, first, ['n10'])))).toMatchObject({
        kind: 'ReplicateError',
        code: INTERNAL_ERROR.LogGap,
        expectedOffset: 9,
      });
    }
    // From one below, the conflict rules apply: asked back to where the older generation's
    // records start (0 here), so everything a truncation keeps is compared.
    expect(decodeFrame(await server.handle(records(2, 9, ['n9', 'n10'])))).toMatchObject({
      kind: 'ReplicateError',
      code: INTERNAL_ERROR.LogGap,
      expectedOffset: 0,
    });
    await server.close();
    expect(await valuesAt(oldRoot)).toEqual([...shared, ...divergent]);
  });

  it('a_conflict_within_one_generation_is_never_truncated', async () => {
    const oldRoot = await root();
    await logWith(oldRoot, [...shared, ...divergent], 2);
    const server = serverAt(oldRoot, () => 2);
    const answer = decodeFrame(await server.handle(records(2, 5, ['a5', 'n6'])));
    expect(answer).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.LogConflict });
    await server.close();
    expect(await valuesAt(oldRoot)).toEqual([...shared, ...divergent]);
  });

  it('a_replica_server_refuses_a_batch_older_than_the_generation_it_was_fenced_at', async () => {
    const path = await root();
    const server = serverAt(path, () => 3);
    expect(decodeFrame(await server.handle(records(2, 0, ['a0', 'a1'])))).toMatchObject({
      kind: 'ReplicateOk',
      durableOffset: 2,
    });
    // A leader at generation 3 fences it: from then on generation 2 is refused.
    const fence = encodeInternalMessage({
      kind: 'Fence',
      correlationId: 7,
      shard: shardRef(3),
      log: 1,
    });
    expect(decodeFrame(await server.handle(fence))).toEqual({
      kind: 'FenceOk',
      correlationId: 7,
      logEnd: 2,
      commitOffset: 0,
      lastGeneration: 2,
    });
    expect(decodeFrame(await server.handle(records(2, 2, ['old'])))).toMatchObject({
      kind: 'ReplicateError',
      code: INTERNAL_ERROR.FencedEpoch,
    });
    await server.close();
    expect(await valuesAt(path)).toEqual(['a0', 'a1']);
    expect((await ReplicaFile.open(nodeIo, `${path}/${dirOf()}`)).state.generation).toBe(3);
  });

  it('a_replica_server_compares_a_resent_batch_byte_for_byte_and_stores_it_once', async () => {
    const path = await root();
    const server = serverAt(path, () => 1);
    const batch = records(1, 0, ['a0', 'a1', 'a2']);
    for (let i = 0; i < 3; i++) {
      expect(decodeFrame(await server.handle(batch))).toMatchObject({
        kind: 'ReplicateOk',
        durableOffset: 3,
      });
    }
    // The same offsets with other bytes at the same generation: a conflict, nothing written.
    expect(decodeFrame(await server.handle(records(1, 1, ['a1', 'zz', 'a3'])))).toMatchObject({
      kind: 'ReplicateError',
      code: INTERNAL_ERROR.LogConflict,
      expectedOffset: 2,
    });
    await server.close();
    expect(await valuesAt(path)).toEqual(['a0', 'a1', 'a2']);
  });

  it('a_fence_opens_on_a_majority_and_a_follower_says_when_the_leader_was_deposed', async () => {
    const up = serverAt(await root(), () => 4);
    const down = { request: () => Promise.reject(new Error('unreachable')) };
    const link = { request: (f: Uint8Array) => up.handle(f) };
    const three = await fenceReplicaSet({
      shard: shardRef(4),
      followers: [
        { nodeId: 'up', link },
        { nodeId: 'down', link: down },
      ],
      deadlineMs: 5_000,
    });
    expect(three).toMatchObject({ majority: true, deposed: false });
    expect(three.answers.map((a) => a.nodeId)).toEqual(['up']);
    const two = await fenceReplicaSet({
      shard: shardRef(4),
      followers: [{ nodeId: 'down', link: down }],
      deadlineMs: 300,
    });
    expect(two.majority).toBe(false);
    const older = await fenceReplicaSet({
      shard: shardRef(3),
      followers: [{ nodeId: 'up', link }],
      deadlineMs: 5_000,
    });
    expect(older).toMatchObject({ majority: false, deposed: true });
  });

  it('a_fence_short_of_a_majority_says_why_each_follower_did_not_accept', async () => {
    // The follower has not been told of generation 4 yet: it refuses, and says so.
    const behind = serverAt(await root(), () => 2);
    const outcome = await fenceReplicaSet({
      shard: shardRef(4),
      followers: [
        { nodeId: 'behind', link: { request: (f: Uint8Array) => behind.handle(f) } },
        { nodeId: 'down', link: { request: () => Promise.reject(new Error('dial refused')) } },
        { nodeId: 'silent', link: { request: () => Promise.reject(new Error('timed out')) } },
      ],
      deadlineMs: 300,
    });
    expect(outcome).toMatchObject({ majority: false, deposed: false, answers: [] });
    const why = new Map(outcome.unanswered.map((u) => [u.nodeId, u.why]));
    expect([...why.keys()].sort()).toEqual(['behind', 'down', 'silent']);
    expect(why.get('behind')).toMatch(/^refused \(code \d+\): .*4/);
    expect(why.get('down')).toBe('no answer: dial refused');
    expect(why.get('silent')).toBe('no answer: timed out');
  });
});

describe('where a quorum stream follower dates a generation', () => {
  it('a_quorum_follower_dates_a_generation_from_its_start_record_not_from_a_follower_set_change', async () => {
    const path = await root();
    let assigned = 1;
    const server = serverAt(path, () => assigned);
    const enc = (values: string[]) => values.map((v) => ENC.encode(v));
    const ok = async (frame: Uint8Array) =>
      expect(decodeFrame(await server.handle(frame)).kind).toBe('ReplicateOk');
    // Generation 1 from an empty log: dated at 0.
    await ok(committedFrame(1, shardRef(1), 0, enc(['a0', 'a1', 'a2']), 0));
    // The same leader at generation 2 (its follower set changed): no record, its history goes on.
    assigned = 2;
    await ok(committedFrame(2, shardRef(2), 2, enc(['a2', 'a3', 'a4']), 3));
    // A new leader at generation 3: its generation-start record (body: the u64 generation) at 5.
    assigned = 3;
    const start = new Uint8Array(8);
    new DataView(start.buffer).setBigUint64(0, 3n);
    const marks = new Uint8Array([REPLICATE_MARK.None, REPLICATE_MARK.GenerationStart]);
    await ok(markedFrame(3, shardRef(3), 4, [ENC.encode('a4'), start], marks));
    await server.close();
    const starts = await GenerationStarts.open(nodeIo, join(path, dirOf()));
    expect(starts.all).toEqual([
      { generation: 1, start: 0 },
      { generation: 3, start: 5 },
    ]);
  });
});

/** The shard's directory under a root (the storage layout's name for SHARD). */
function dirOf(): string {
  return shardDirName(SHARD);
}
