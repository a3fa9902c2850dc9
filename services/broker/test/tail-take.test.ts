/**
 * Goal: a promoted leader whose log is shorter than its fenced majority's furthest takes the
 * missing records before serving (cluster/tail-take.ts): it compares from its commit offset,
 * drops its own divergent suffix above that offset, appends the source's records at the
 * source's offsets and labels them with the source's generation; a differing record at or below
 * its commit offset is never dropped (the take fails, typed, and the log is untouched).
 * Method: the real ReplicaServer as the source over a real segment log, fenced by hand-built
 * frames; the new leader's log, replica file and generations file in another temp dir.
 */
import {
  type FenceAnswer,
  ReplicaServer,
  TailFetchError,
  furthestAnswer,
} from '@felix/replication';
import {
  FLAG_GENERATION_START,
  GenerationStarts,
  type LogOptions,
  ReplicaFile,
  SegmentLog,
  nodeIo,
} from '@felix/storage';
import { cleanupScope } from '@felix/testing-harness';
import { REPLICA_LOG, type ShardRef, encodeInternalMessage } from '@felix/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { logEndOf, takeTail } from '../src/cluster/tail-take.js';
import { partingPoint } from '../src/util/log-history.js';

const SHARD = { tenant: 't1', namespace: 'default', stream: 'orders', shard: 0 };
const ENC = new TextEncoder();
const DEC = new TextDecoder();
const scope = cleanupScope();
afterEach(() => scope.run());

function ref(generation: number): ShardRef {
  return { tenantId: 't1', namespace: 'default', stream: 'orders', shard: 0, generation };
}

async function logAt(runs: { generation: number; values: string[] }[], commit = 0) {
  const d = await scope.tempDir('felix-tail-take-');
  const opts: LogOptions = { root: d.path, shard: SHARD, fsync: 'onCommit', preallocateBytes: 0 };
  const log = await SegmentLog.open(opts);
  const starts = await GenerationStarts.open(nodeIo, log.dir);
  for (const run of runs) {
    await starts.begin(run.generation, log.tailOffset);
    await log.append(run.values.map((v) => ENC.encode(v)));
  }
  if (commit > 0) await (await ReplicaFile.open(nodeIo, log.dir)).advanceCommit(commit);
  await log.close();
  return opts;
}

async function valuesOf(opts: LogOptions): Promise<string[]> {
  const log = await SegmentLog.open(opts);
  try {
    const r = await log.read(log.baseOffset, { maxRecords: 1000 });
    return r.kind === 'records' ? r.records.map((x) => DEC.decode(x.payload)) : [];
  } finally {
    await log.close();
  }
}

const shared = ['a0', 'a1', 'a2', 'a3', 'a4', 'a5'];

/** A source replica holding `shared` (generation 1) then n6..n12 (generation 2), fenced at 3. */
async function fencedSource(): Promise<{ server: ReplicaServer; answer: FenceAnswer }> {
  const opts = await logAt([
    { generation: 1, values: shared },
    { generation: 2, values: ['n6', 'n7', 'n8', 'n9', 'n10', 'n11', 'n12'] },
  ]);
  const server = new ReplicaServer({
    logOptions: () => opts,
    assignment: () => ({ generation: 3 }),
  });
  scope.defer(() => server.close());
  const frame = encodeInternalMessage({
    kind: 'Fence',
    correlationId: 1,
    shard: ref(3),
    log: REPLICA_LOG.Stream,
  });
  await server.handle(frame);
  return { server, answer: { nodeId: 'src', logEnd: 13, commitOffset: 6, lastGeneration: 2 } };
}

describe('a promoted leader takes the furthest tail', () => {
  it('a_promoted_leader_drops_its_divergent_suffix_and_takes_the_furthest_tail', async () => {
    const { server, answer } = await fencedSource();
    const own = await logAt(
      [
        { generation: 1, values: shared },
        { generation: 1, values: ['x6', 'x7'] },
      ],
      6,
    );
    const end = await logEndOf({ dir: await dirOf(own), tailOffset: 8 });
    expect(end).toEqual({ logEnd: 8, lastGeneration: 1 });
    expect(furthestAnswer(end, [answer])?.nodeId).toBe('src');
    const taken = await takeTail(ref(3), own, answer, { request: (f) => server.handle(f) });
    expect(taken).toEqual({ pulled: 7, truncatedAt: 6, source: 'src' });
    expect(await valuesOf(own)).toEqual([...shared, 'n6', 'n7', 'n8', 'n9', 'n10', 'n11', 'n12']);
    const starts = await GenerationStarts.open(nodeIo, await dirOf(own));
    expect(starts.at(12).generation).toBe(2);
    expect(starts.at(5).generation).toBe(1);
  });

  it('a_promoted_leader_never_drops_a_record_at_or_below_its_commit_offset', async () => {
    const { server, answer } = await fencedSource();
    const own = await logAt(
      [
        { generation: 1, values: shared },
        { generation: 1, values: ['x6', 'x7'] },
      ],
      8,
    );
    const taking = takeTail(ref(3), own, answer, { request: (f) => server.handle(f) });
    await expect(taking).rejects.toBeInstanceOf(TailFetchError);
    expect(await valuesOf(own)).toEqual([...shared, 'x6', 'x7']);
  });
});

describe('a taken tail holding a generation start', () => {
  it('a_taken_tail_keeps_a_generation_start_record_at_its_offset_with_its_mark', async () => {
    // The source: `shared` (generation 1), then generation 2's start record and n7..n9.
    const server = await startedSource(3);
    const answer = { nodeId: 'src', logEnd: 10, commitOffset: 6, lastGeneration: 2 };
    const own = await logAt([{ generation: 1, values: shared }], 6);
    const taken = await takeTail(ref(3), own, answer, { request: (f) => server.handle(f) });
    expect(taken).toEqual({ pulled: 4, truncatedAt: null, source: 'src' });
    const log = await SegmentLog.open(own);
    try {
      const raw = await log.read(0, { includeGenerationStarts: true });
      if (raw.kind !== 'records') throw new Error('trimmed');
      expect(raw.records.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(raw.records[6]!.flags & FLAG_GENERATION_START).toBe(FLAG_GENERATION_START);
      const seen = await log.read(0);
      if (seen.kind !== 'records') throw new Error('trimmed');
      expect(seen.records.map((r) => `${r.offset}:${DEC.decode(r.payload)}`).slice(5)).toEqual([
        '5:a5',
        '7:n7',
        '8:n8',
        '9:n9',
      ]);
    } finally {
      await log.close();
    }
  });
});

describe('a quorum stream taken tail', () => {
  it('a_taken_quorum_tail_dates_its_generations_by_their_start_records_not_from_the_log_end', async () => {
    // The source: `shared` (generation 1), generation 2's start record and n7..n9, then its
    // leader went on leading at generation 3 (a follower-set change: no record) with n10, n11.
    const server = await startedSource(4, ['n10', 'n11']);
    const answer = { nodeId: 'src', logEnd: 12, commitOffset: 6, lastGeneration: 3 };
    const own = await logAt([{ generation: 1, values: shared }], 6);
    const link = { request: (f: Uint8Array) => server.handle(f) };
    const taken = await takeTail(ref(4), own, answer, link, 'stream', true);
    expect(taken).toEqual({ pulled: 6, truncatedAt: null, source: 'src' });
    const starts = (await GenerationStarts.open(nodeIo, await dirOf(own))).all;
    expect(starts).toEqual([
      { generation: 1, start: 0 },
      { generation: 2, start: 6 },
    ]);
    // A subscriber that read up to n10 from generation 2's leader resumes at 11 on the new
    // leader (generation 4 from 12): nothing it read is sent again.
    const newLeader = [...starts, { generation: 4, start: 12 }];
    expect(partingPoint(newLeader, 2, 6)).toBeGreaterThanOrEqual(11);
  });

  it('a_generation_begun_at_the_tail_without_records_does_not_date_a_taken_tail', async () => {
    // An open at generation 4 began it at the tail and stopped before its start record; the
    // next open takes the source's tail (generation 2's start record, then n7..n9).
    const server = await startedSource(5);
    const answer = { nodeId: 'src', logEnd: 10, commitOffset: 6, lastGeneration: 2 };
    const own = await logAt([{ generation: 1, values: shared }], 6);
    await (await GenerationStarts.open(nodeIo, await dirOf(own))).begin(4, 6);
    const link = { request: (f: Uint8Array) => server.handle(f) };
    await takeTail(ref(5), own, answer, link, 'stream', true);
    expect((await GenerationStarts.open(nodeIo, await dirOf(own))).all).toEqual([
      { generation: 1, start: 0 },
      { generation: 2, start: 6 },
    ]);
  });
});

/**
 * A source replica fenced at `fencedAt` holding `shared` (generation 1), generation 2's start
 * record and n7..n9, then `bumped` written at generation 3 by the same leader (no record).
 */
async function startedSource(fencedAt: number, bumped: string[] = []): Promise<ReplicaServer> {
  const srcOpts = await logAt([{ generation: 1, values: shared }]);
  const src = await SegmentLog.open(srcOpts);
  const srcStarts = await GenerationStarts.open(nodeIo, src.dir);
  await srcStarts.begin(2, src.tailOffset);
  await src.appendGenerationStart(2);
  await src.append(['n7', 'n8', 'n9'].map((v) => ENC.encode(v)));
  if (bumped.length > 0) {
    await srcStarts.begin(3, src.tailOffset);
    await src.append(bumped.map((v) => ENC.encode(v)));
  }
  await src.close();
  const server = new ReplicaServer({
    logOptions: () => srcOpts,
    assignment: () => ({ generation: fencedAt }),
  });
  scope.defer(() => server.close());
  await server.handle(
    encodeInternalMessage({ kind: 'Fence', correlationId: 1, shard: ref(fencedAt), log: 1 }),
  );
  return server;
}

async function dirOf(opts: LogOptions): Promise<string> {
  const log = await SegmentLog.open(opts);
  const dir = log.dir;
  await log.close();
  return dir;
}
