/**
 * Goal: a leader may keep more than one batch in flight to a follower, and that is safe and
 * useful: the follower writes the next batch while the sync of the one before runs, answers
 * each only once it holds it (synced under `onCommit`), and never confirms to a deposed leader
 * a batch that a fence left out of the log end it told the new one; the leader's cursor
 * pipelines only after the follower said where its log ends, never behind a bootstrap, counts
 * oks in order, plans behind a batch from where it really ended, and a failure drops its batch
 * and every later one so the resend starts from what the follower holds.
 * Method: a ReplicaServer over a FaultyIo that holds fdatasync; the FollowerCursor alone for
 * its planning rules (the lossy-network property in shipping.test.ts runs it at depth 1 to 3).
 */
import { FaultyIo, nodeIo } from '@felix/storage';
import { tempDir, waitFor } from '@felix/testing-harness';
import { INTERNAL_ERROR, REPLICA_LOG, batchChecksum, encodeInternalMessage } from '@felix/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { FollowerCursor } from '../src/leader/follower-cursor.js';
import { ReplicaServer } from '../src/follower/replica-server.js';
import { decodeFrame, shardRef } from './support/sim.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const batch = (correlationId: number, firstOffset: number, count: number) => {
  const payloads = Array.from({ length: count }, (_, i) =>
    new Uint8Array(64).fill(firstOffset + i),
  );
  return encodeInternalMessage({
    kind: 'ReplicateRecords',
    correlationId,
    shard: shardRef(1),
    firstOffset,
    checksum: batchChecksum(payloads),
    payloads,
  });
};

/** A follower whose segment syncs a test can hold, assigned `assigned.generation`. */
async function syncHeldFollower(assigned: { generation: number }) {
  const dir = await tempDir('felix-pipelining-');
  const io = new FaultyIo(nodeIo);
  const server = new ReplicaServer({
    logOptions: (s) => ({
      root: dir.path,
      shard: { tenant: s.tenantId, namespace: s.namespace, stream: s.stream, shard: s.shard },
      fsync: 'onCommit',
      preallocateBytes: 0,
      io,
    }),
    assignment: () => ({ generation: assigned.generation }),
  });
  cleanups.push(async () => {
    await server.close();
    await dir.cleanup();
  });
  return { io, server };
}

describe('pipelined shipping', () => {
  it('a_follower_writes_the_next_batch_while_the_one_before_syncs', async () => {
    const { io, server } = await syncHeldFollower({ generation: 1 });
    expect(decodeFrame(await server.handle(batch(1, 0, 3)))).toMatchObject({
      kind: 'ReplicateOk',
      durableOffset: 3,
    });

    const hold = io.holdDatasyncs();
    // Released first on a failure too, so the server can close.
    cleanups.push(async () => hold.release());
    let firstAnswered = false;
    const first = server.handle(batch(2, 3, 3)).then((a) => {
      firstAnswered = true;
      return decodeFrame(a);
    });
    const second = server.handle(batch(3, 6, 3)).then(decodeFrame);
    // The second batch is written while the first one's sync is still held.
    await waitFor(() => server.status(shardRef(1))?.tail === 9, 'the second batch written');
    expect(io.heldDatasyncs).toBeGreaterThan(0);
    expect(firstAnswered).toBe(false);
    // Nothing is answered as held before its sync.
    expect(server.status(shardRef(1))?.durable).toBe(3);
    hold.release();
    const [a, b] = await Promise.all([first, second]);
    expect(a).toMatchObject({ kind: 'ReplicateOk', correlationId: 2 });
    expect(b).toMatchObject({ kind: 'ReplicateOk', correlationId: 3, durableOffset: 9 });
    expect((a as { durableOffset: number }).durableOffset).toBeGreaterThanOrEqual(6);
  });

  it('a_batch_written_before_a_fence_and_synced_after_it_is_not_confirmed_to_the_deposed_leader', async () => {
    const assigned = { generation: 1 };
    const { io, server } = await syncHeldFollower(assigned);
    expect(decodeFrame(await server.handle(batch(1, 0, 3)))).toMatchObject({ kind: 'ReplicateOk' });

    // Generation 1's next batch is written; its sync is held.
    const hold = io.holdDatasyncs();
    cleanups.push(async () => hold.release());
    const late = server.handle(batch(2, 3, 3)).then(decodeFrame);
    await waitFor(() => server.status(shardRef(1))?.tail === 6, 'the batch written');
    // A new leader fences this follower meanwhile: the log end it is told leaves the batch out.
    assigned.generation = 2;
    const fence = encodeInternalMessage({
      kind: 'Fence',
      correlationId: 3,
      shard: shardRef(2),
      log: REPLICA_LOG.Stream,
    });
    expect(decodeFrame(await server.handle(fence))).toMatchObject({ kind: 'FenceOk', logEnd: 3 });
    hold.release();
    // Synced now, but the deposed leader must not count it: its successor was told otherwise.
    expect(await late).toMatchObject({
      kind: 'ReplicateError',
      correlationId: 2,
      code: INTERNAL_ERROR.FencedEpoch,
    });
  });

  it('a_cursor_pipelines_only_after_the_follower_was_heard_and_never_behind_a_bootstrap', () => {
    const log = { base: 0, tail: 100 };
    const cursor = new FollowerCursor(0);
    const first = cursor.plan(log, 10, 0, 3);
    expect(first).toMatchObject({ kind: 'records', first: 0, next: 10 });
    // Not heard from yet: where its log ends is a guess, so one batch travels alone.
    expect(cursor.plan(log, 10, 0, 3)).toBeNull();
    expect(cursor.onAnswer(first!.correlationId, { kind: 'ok', durableOffset: 10 })).toBe(true);
    const a = cursor.plan(log, 10, 0, 3);
    const b = cursor.plan(log, 10, 0, 3);
    const c = cursor.plan(log, 10, 0, 3);
    expect([a, b, c].map((s) => (s?.kind === 'records' ? [s.first, s.next] : s))).toEqual([
      [10, 20],
      [20, 30],
      [30, 40],
    ]);
    expect(cursor.plan(log, 10, 0, 3)).toBeNull();
    expect(cursor.inFlightCount).toBe(3);

    // An ok to a later batch counts only once every earlier batch is answered: what the
    // follower compared of [20, 30) says nothing of [10, 20).
    expect(cursor.onAnswer(b!.correlationId, { kind: 'ok', durableOffset: 30 })).toBe(true);
    expect(cursor.confirmed).toBe(10);
    expect(cursor.onAnswer(a!.correlationId, { kind: 'ok', durableOffset: 30 })).toBe(true);
    expect(cursor.confirmed).toBe(30);
    expect(cursor.inFlightCount).toBe(1);

    // A timeout drops every batch from the one timed out, and the next plan resends from what
    // the follower holds; an ok kept for a later batch goes with them.
    const d = cursor.plan(log, 10, 0, 3);
    expect(d).toMatchObject({ first: 40, next: 50 });
    expect(cursor.onAnswer(d!.correlationId, { kind: 'ok', durableOffset: 50 })).toBe(true);
    expect(cursor.onTimeout(c!.correlationId)).toBe(true);
    expect(cursor.inFlightCount).toBe(0);
    expect(cursor.onAnswer(d!.correlationId, { kind: 'ok', durableOffset: 50 })).toBe(false);
    expect(cursor.confirmed).toBe(30);
    // A batch a byte budget cut short: the next one is planned from where it really ends.
    const e = cursor.plan(log, 10, 0, 3);
    expect(e).toMatchObject({ first: 30, next: 40 });
    cursor.carried(e!.correlationId, 33);
    const h = cursor.plan(log, 10, 0, 3);
    expect(h).toMatchObject({ first: 33, next: 43 });
    cursor.onAnswer(e!.correlationId, { kind: 'ok', durableOffset: 33 });
    cursor.onAnswer(h!.correlationId, { kind: 'ok', durableOffset: 43 });
    expect(cursor.confirmed).toBe(43);

    // A refusal or gap behind a batch still in flight drops only itself and what follows: the
    // earlier batch's answer still counts, and says where to go on.
    const f = cursor.plan(log, 10, 0, 3)!;
    const g = cursor.plan(log, 10, 0, 3)!;
    expect([f, g]).toMatchObject([{ first: 43 }, { first: 53 }]);
    cursor.onAnswer(g.correlationId, {
      kind: 'error',
      code: INTERNAL_ERROR.LogGap,
      expectedOffset: 43,
    });
    expect(cursor.inFlightCount).toBe(1);
    expect(cursor.onAnswer(f.correlationId, { kind: 'ok', durableOffset: 53 })).toBe(true);
    expect(cursor.confirmed).toBe(53);
    expect(cursor.plan(log, 10, 0, 3)).toMatchObject({ first: 53 });
    // Retention passing the batch in flight plans nothing behind it: the bootstrap waits for
    // the batch to settle.
    expect(cursor.plan({ base: 80, tail: 100 }, 10, 0, 3)).toBeNull();

    // A follower behind the leader's base is bootstrapped, and nothing travels behind that.
    const behind = new FollowerCursor(0);
    const probe = behind.plan({ base: 0, tail: 5 }, 10, 0, 3)!;
    behind.onAnswer(probe.correlationId, { kind: 'ok', durableOffset: 0 });
    const boot = behind.plan({ base: 50, tail: 100 }, 10, 0, 3);
    expect(boot).toMatchObject({ kind: 'bootstrap', base: 50 });
    expect(behind.plan({ base: 50, tail: 100 }, 10, 0, 3)).toBeNull();
  });
});
