/**
 * Goal: the commit offset a quorum leader carries reaches its followers, and each stores the
 * lower of that mark and what it was shown to hold, in its `replica` file: before its answer
 * when the stream fsyncs on commit, at most once an interval otherwise; it never moves back.
 * Method: a ReplicaServer over a real log fed kind-26 frames by hand (the file is read back from
 * disk after each answer); a ShardShipper over a real leader log whose mark is moved by the
 * test; the CommitSaver with a spy on its saves.
 */
import { join } from 'node:path';
import { ReplicaFile, SegmentLog, nodeIo, shardDirName } from '@felix/storage';
import { tempDir, waitFor } from '@felix/testing-harness';
import { encodeInternalMessage } from '@felix/wire';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { committedFrame } from '../src/frames.js';
import { CommitSaver } from '../src/follower/commit-saver.js';
import { ReplicaServer } from '../src/follower/replica-server.js';
import { ShardShipper } from '../src/leader/shard-shipper.js';
import { LossyLink, SHARD, SimFollower, decodeFrame, shardRef } from './support/sim.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function root(): Promise<string> {
  const dir = await tempDir('felix-commit-');
  cleanups.push(dir.cleanup);
  return dir.path;
}

const rec = (i: number) => new TextEncoder().encode(`r${i}`);

async function storedCommit(at: string): Promise<number> {
  return (await ReplicaFile.open(nodeIo, join(at, shardDirName(SHARD)))).state.commitOffset;
}

describe('commit offset on followers', () => {
  it('a_follower_stores_the_lower_of_the_leaders_mark_and_what_it_holds_before_answering', async () => {
    const at = await root();
    const f = new SimFollower({ root: at, shard: SHARD, fsync: 'onCommit' }, 1);
    cleanups.push(() => f.close());
    const send = async (first: number, n: number, mark: number) => {
      const payloads = Array.from({ length: n }, (_, k) => rec(first + k));
      const answer = decodeFrame(
        await f.handle(committedFrame(first, shardRef(1), first, payloads, mark)),
      );
      expect(answer.kind).toBe('ReplicateOk');
    };
    // A mark past the batch: the follower stores only what the batch showed it holds.
    await send(0, 3, 10);
    expect(await storedCommit(at)).toBe(3);
    // The mark alone, naming what it holds: stored as given, and on disk before the answer.
    await send(3, 2, 4);
    expect(await storedCommit(at)).toBe(4);
    await send(5, 0, 5);
    expect(await storedCommit(at)).toBe(5);
    // An older mark never moves it back.
    await send(5, 0, 2);
    expect(await storedCommit(at)).toBe(5);
    expect(f.server.status(shardRef(1))?.commit).toBe(5);
  });

  it('a_plain_batch_leaves_the_stored_commit_offset_alone', async () => {
    const at = await root();
    const f = new SimFollower({ root: at, shard: SHARD, fsync: 'onCommit' }, 1);
    cleanups.push(() => f.close());
    const answer = await f.handle(
      encodeInternalMessage({
        kind: 'ReplicateRecords',
        correlationId: 1,
        shard: shardRef(1),
        firstOffset: 0,
        checksum: 0,
        payloads: [],
      }),
    );
    expect(decodeFrame(answer).kind).toBe('ReplicateOk');
    expect(await storedCommit(at)).toBe(0);
  });

  it('a_follower_not_fsyncing_on_commit_saves_the_commit_offset_at_most_once_an_interval', async () => {
    const at = await root();
    const replica = await ReplicaFile.open(nodeIo, at);
    const saves = vi.spyOn(replica, 'advanceCommit');
    let now = 1_000;
    const saver = new CommitSaver(replica, 200, () => now);
    for (let i = 1; i <= 50; i++) await saver.offer(i, false);
    // The first offer saves at once; the other 49 fall inside the interval and wait.
    await waitFor(() => saver.saved === 1, 'the first save');
    expect(saves).toHaveBeenCalledTimes(1);
    now += 200;
    await waitFor(() => saver.saved === 50, 'the save at the end of the interval', 5_000);
    expect(saves).toHaveBeenCalledTimes(2);
    // A synced offer saves before it resolves, whatever the interval.
    await saver.offer(60, true);
    expect((await ReplicaFile.open(nodeIo, at)).state.commitOffset).toBe(60);
    await saver.close();
  });

  it('a_quorum_shipper_carries_its_moving_mark_to_caught_up_followers', async () => {
    const log = await SegmentLog.open({ root: await root(), shard: SHARD, fsync: 'onCommit' });
    cleanups.push(() => log.close());
    const at = await root();
    const f = new SimFollower({ root: at, shard: SHARD, fsync: 'onCommit' }, 1);
    cleanups.push(() => f.close());
    let mark = 0;
    const shipper = new ShardShipper({
      log,
      shard: shardRef(1),
      followers: [{ nodeId: 'b1', link: new LossyLink(f, Math.random, 0), start: 0 }],
      commitOffset: () => mark,
    });
    cleanups.push(() => shipper.stop());
    await log.append([rec(0), rec(1), rec(2), rec(3)]);
    await waitFor(() => shipper.confirmed('b1') === 4, 'the follower to hold the log');
    // Nothing left to ship: the mark moves and travels alone.
    mark = 3;
    shipper.wake();
    await waitFor(() => f.server.status(shardRef(1))?.commit === 3, 'the follower to store 3');
    mark = 4;
    shipper.wake();
    await waitFor(() => f.server.status(shardRef(1))?.commit === 4, 'the follower to store 4');
    await shipper.stop();
    expect(await storedCommit(at)).toBe(4);
  });
  it('a_moved_mark_rides_the_next_batch_when_records_follow_before_the_follower_idles', async () => {
    const log = await SegmentLog.open({ root: await root(), shard: SHARD, fsync: 'onCommit' });
    cleanups.push(() => log.close());
    const at = await root();
    const f = new SimFollower({ root: at, shard: SHARD, fsync: 'onCommit' }, 1);
    cleanups.push(() => f.close());
    const inner = new LossyLink(f, Math.random, 0);
    const sentPayloads: number[] = [];
    const link = {
      request(frame: Uint8Array, timeoutMs: number) {
        const m = decodeFrame(frame);
        sentPayloads.push('payloads' in m ? m.payloads.length : -1);
        return inner.request(frame, timeoutMs);
      },
    };
    let mark = 0;
    const shipper = new ShardShipper({
      log,
      shard: shardRef(1),
      followers: [{ nodeId: 'b1', link, start: 0 }],
      commitOffset: () => mark,
      // Far longer than the test: a mark alone could only come from a look at once.
      markAloneAfterMs: 600_000,
    });
    cleanups.push(() => shipper.stop());
    await log.append([rec(0), rec(1), rec(2), rec(3)]);
    await waitFor(() => shipper.confirmed('b1') === 4, 'the follower to hold the log');
    const before = sentPayloads.length;
    // The mark moves (the publisher is acked) and the publisher's next record follows.
    mark = 4;
    shipper.wake();
    await log.append([rec(4)]);
    await waitFor(() => f.server.status(shardRef(1))?.commit === 4, 'the follower to store 4');
    expect(shipper.confirmed('b1')).toBe(5);
    // Only the batch went: no mark alone in front of it.
    expect(sentPayloads.slice(before)).toEqual([1]);
  });

  it('a_followers_retention_never_deletes_at_or_above_the_commit_offset_it_knows', async () => {
    // Two followers of the same records with the same retention (about one 4 KiB segment
    // kept): one of a quorum shard, whose retention stops below its commit offset, one of a
    // leader shard, which knows no commit offset and trims as the bounds say.
    const follower = async (floorAtCommit: boolean) => {
      const at = await root();
      const server = new ReplicaServer({
        logOptions: () => ({
          root: at,
          shard: SHARD,
          fsync: 'onCommit',
          segmentBytes: 4096,
          retention: { maxBytes: 4096, checkIntervalMs: 10 },
        }),
        assignment: () => ({ generation: 1 }),
        retentionStopsAtCommit: () => floorAtCommit,
      });
      cleanups.push(() => server.close());
      return server;
    };
    const quorum = await follower(true);
    const leader = await follower(false);
    const big = (i: number) => new TextEncoder().encode(`r${i}:${'x'.repeat(1000)}`);
    const payloads = Array.from({ length: 40 }, (_, i) => big(i));
    for (const server of [quorum, leader]) {
      for (let first = 0; first < 40; first += 8) {
        const batch = payloads.slice(first, first + 8);
        const answer = await server.handle(committedFrame(first, shardRef(1), first, batch, 16));
        expect(decodeFrame(answer).kind).toBe('ReplicateOk');
      }
    }
    // Retention ran on both (a pass deletes every segment it may at once); the leader
    // shard's copy keeps only its active segment.
    await waitFor(() => (quorum.status(shardRef(1))?.base ?? 0) > 0, 'the quorum copy trimmed');
    await waitFor(() => (leader.status(shardRef(1))?.base ?? 0) > 30, 'the leader copy trimmed');
    const held = quorum.status(shardRef(1))!;
    // Batches of 8 make segments of 8 records: the two below the mark go, no more.
    expect(held.commit).toBe(16);
    expect(held.base).toBe(16);
    // The mark moves on: retention follows it.
    const answer = await quorum.handle(committedFrame(99, shardRef(1), 40, [], 40));
    expect(decodeFrame(answer).kind).toBe('ReplicateOk');
    await waitFor(
      () => (quorum.status(shardRef(1))?.base ?? 0) > 30,
      'the quorum copy trimmed to its mark',
    );
    expect(quorum.status(shardRef(1))!.tail).toBe(40);
  });
});
