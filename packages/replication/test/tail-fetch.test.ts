/**
 * Goal: a promoted leader can take the furthest tail of its fenced majority (reference
 * `ReplicateFetch` 31): the log furthest ahead is chosen by its last record's generation, then
 * its length; a replica answers a fetch only to the leader of exactly the generation it accepted
 * in its fence (an older one is deposed, a newer one has not fenced it); the tail arrives in
 * bounded reads, in order, each checked.
 * Method: the real ReplicaServer over a real segment log in a temp dir, fenced by hand-built
 * frames, and fetchTail pulling from it through an in-memory link.
 */
import { type LogOptions, GenerationStarts, SegmentLog, nodeIo } from '@felix/storage';
import { cleanupScope } from '@felix/testing-harness';
import { INTERNAL_ERROR, REPLICA_LOG, encodeInternalMessage } from '@felix/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { TailFetchError } from '../src/errors.js';
import { ReplicaServer } from '../src/follower/replica-server.js';
import { TAIL_FETCH_BYTES_MAX } from '../src/limits.js';
import { fetchTail, furthestAnswer } from '../src/leader/tail-fetch.js';
import { SHARD, decodeFrame, shardRef } from './support/sim.js';

const scope = cleanupScope();
afterEach(() => scope.run());

function optsAt(path: string): LogOptions {
  return { root: path, shard: SHARD, fsync: 'onCommit', preallocateBytes: 0 };
}

/** A replica holding `payloads` written under generation 1, answering as assigned `assigned`. */
async function replicaWith(payloads: Uint8Array[], assigned: number): Promise<ReplicaServer> {
  const d = await scope.tempDir('felix-tail-fetch-');
  const log = await SegmentLog.open(optsAt(d.path));
  await log.append(payloads);
  await (await GenerationStarts.open(nodeIo, log.dir)).begin(1, 0);
  await log.close();
  const server = new ReplicaServer({
    logOptions: () => optsAt(d.path),
    assignment: () => ({ generation: assigned }),
  });
  scope.defer(() => server.close());
  return server;
}

function fetchFrame(generation: number, from: number): Uint8Array {
  return encodeInternalMessage({
    kind: 'ReplicateFetch',
    correlationId: 7,
    shard: shardRef(generation),
    log: REPLICA_LOG.Stream,
    fromOffset: from,
    maxBytes: TAIL_FETCH_BYTES_MAX,
  });
}

async function fence(server: ReplicaServer, generation: number): Promise<void> {
  const frame = encodeInternalMessage({
    kind: 'Fence',
    correlationId: 1,
    shard: shardRef(generation),
    log: REPLICA_LOG.Stream,
  });
  expect(decodeFrame(await server.handle(frame)).kind).toBe('FenceOk');
}

const ENC = new TextEncoder();
const values = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ENC.encode(`r${from + i}`));

describe('taking the furthest tail', () => {
  it('the_furthest_log_is_chosen_by_its_last_generation_then_its_length', () => {
    const own = { logEnd: 10, lastGeneration: 2 };
    const a = { nodeId: 'a', logEnd: 14, commitOffset: 8, lastGeneration: 2 };
    const b = { nodeId: 'b', logEnd: 12, commitOffset: 8, lastGeneration: 3 };
    const c = { nodeId: 'c', logEnd: 30, commitOffset: 8, lastGeneration: 1 };
    expect(furthestAnswer(own, [a, c])?.nodeId).toBe('a');
    // A later generation wins over a longer log of an older one.
    expect(furthestAnswer(own, [a, b, c])?.nodeId).toBe('b');
    expect(furthestAnswer(own, [c])).toBeUndefined();
    expect(furthestAnswer({ logEnd: 14, lastGeneration: 2 }, [a])).toBeUndefined();
  });

  it('a_replica_answers_a_tail_fetch_only_at_the_generation_it_accepted', async () => {
    const server = await replicaWith(values(10), 3);
    const early = decodeFrame(await server.handle(fetchFrame(3, 4)));
    expect(early).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.StaleRoute });
    await fence(server, 3);
    const got = decodeFrame(await server.handle(fetchFrame(3, 4)));
    expect(got.kind).toBe('ReplicateRecords');
    if (got.kind !== 'ReplicateRecords') return;
    expect(got.firstOffset).toBe(4);
    expect(got.payloads.map((p) => new TextDecoder().decode(p))).toEqual([
      'r4',
      'r5',
      'r6',
      'r7',
      'r8',
      'r9',
    ]);
    const older = decodeFrame(await server.handle(fetchFrame(2, 4)));
    expect(older).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.FencedEpoch });
    const past = decodeFrame(await server.handle(fetchFrame(3, 10)));
    expect(past).toMatchObject({ kind: 'ReplicateRecords', payloads: [] });
  });

  it('a_tail_arrives_in_bounded_reads_in_order', async () => {
    // 40 records of 64 KiB: more than two answers' worth.
    const big = Array.from({ length: 40 }, (_, i) => new Uint8Array(64 * 1024).fill(i));
    const server = await replicaWith(big, 5);
    await fence(server, 5);
    const applied: { first: number; n: number }[] = [];
    const next = await fetchTail({
      shard: shardRef(5),
      source: { request: (f) => server.handle(f) },
      from: 3,
      to: 40,
      deadlineMs: 10_000,
      apply: async (first, payloads) => {
        for (const [i, p] of payloads.entries()) expect(p[0]).toBe(first + i);
        applied.push({ first, n: payloads.length });
      },
    });
    expect(next).toBe(40);
    expect(applied.length).toBeGreaterThanOrEqual(3);
    expect(applied[0]!.first).toBe(3);
    for (const [i, a] of applied.entries()) {
      expect(a.n * 64 * 1024).toBeLessThanOrEqual(TAIL_FETCH_BYTES_MAX);
      if (i > 0) expect(a.first).toBe(applied[i - 1]!.first + applied[i - 1]!.n);
    }
  });

  it('a_tail_fetch_from_a_replica_that_never_fenced_fails_typed', async () => {
    const server = await replicaWith(values(4), 2);
    const pulling = fetchTail({
      shard: shardRef(2),
      source: { request: (f) => server.handle(f) },
      from: 0,
      to: 4,
      deadlineMs: 5_000,
      apply: async () => undefined,
    });
    await expect(pulling).rejects.toBeInstanceOf(TailFetchError);
  });
});

describe('the logs a new leader fences', () => {
  it('a_cache_shards_counter_log_is_fenced_and_its_tail_taken_and_group_state_is_not', async () => {
    const server = await replicaWith(values(6), 4);
    const fenceOf = (log: number) =>
      encodeInternalMessage({ kind: 'Fence', correlationId: 2, shard: shardRef(4), log });
    // Group cursors are acked on their leader alone: no fence is asked of them.
    const groups = decodeFrame(await server.handle(fenceOf(REPLICA_LOG.GroupCursors)));
    expect(groups).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.UnsupportedKind });
    const ok = decodeFrame(await server.handle(fenceOf(REPLICA_LOG.Counters)));
    expect(ok).toMatchObject({ kind: 'FenceOk', logEnd: 6, lastGeneration: 1 });
    const pulled: string[] = [];
    const next = await fetchTail({
      shard: shardRef(4),
      log: 'counters',
      source: { request: (f) => server.handle(f) },
      from: 2,
      to: 6,
      deadlineMs: 5_000,
      apply: async (_first, payloads) => {
        pulled.push(...payloads.map((p) => new TextDecoder().decode(p)));
      },
    });
    expect(next).toBe(6);
    expect(pulled).toEqual(['r2', 'r3', 'r4', 'r5']);
  });
});
