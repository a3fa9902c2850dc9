/**
 * Goal: the commit offset a quorum leader carries reaches its followers, and each stores the
 * lower of that mark and what it was shown to hold, in its `replica` file, behind its answer (at
 * most once a short interval when the stream fsyncs on commit, once a second otherwise); it never
 * moves back. Only a raised generation is saved before the answer.
 * Method: a ReplicaServer over a real log fed kind-26 frames by hand (the file is read back from
 * disk); an Io holding (or failing) the `replica` file's saves at their rename; a ShardShipper over a real
 * leader log whose mark is moved by the test; the CommitSaver with a spy on its saves.
 */
import { join } from 'node:path';
import {
  type Io,
  ReplicaFile,
  SegmentLog,
  nodeIo,
  shardDirName,
  systemError,
} from '@felix/storage';
import { tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { INTERNAL_ERROR, encodeInternalMessage } from '@felix/wire';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { committedFrame, recordsFrame } from '../src/frames.js';
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
  it('a_follower_stores_the_lower_of_the_leaders_mark_and_what_it_holds', async () => {
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
    const stored = async (want: number) => {
      await waitFor(async () => (await storedCommit(at)) === want, `the stored commit ${want}`);
    };
    // A mark past the batch: the follower stores only what the batch showed it holds.
    await send(0, 3, 10);
    await stored(3);
    // The mark alone, naming what it holds: stored as given.
    await send(3, 2, 4);
    await stored(4);
    await send(5, 0, 5);
    await stored(5);
    // An older mark never moves it back.
    await send(5, 0, 2);
    await f.server.release(shardRef(1));
    expect(await storedCommit(at)).toBe(5);
  });

  it('a_follower_answers_a_batch_of_the_current_generation_without_saving_its_replica_file', async () => {
    const at = await root();
    const gate = new ReplicaSaveGate();
    const f = new SimFollower({ root: at, shard: SHARD, fsync: 'onCommit', io: gate.io }, 1);
    cleanups.push(async () => {
      gate.open();
      await f.close();
    });
    const send = (first: number, n: number, mark: number, generation = 1) => {
      const payloads = Array.from({ length: n }, (_, k) => rec(first + k));
      return f.handle(committedFrame(first, shardRef(generation), first, payloads, mark));
    };
    // The first batch raises the accepted generation: saved before it is stored.
    expect(decodeFrame(await send(0, 3, 0)).kind).toBe('ReplicateOk');
    expect(gate.reached).toBe(1);
    // Every save of the file held from here: a batch of the same generation is answered anyway.
    gate.close();
    const answer = await withDeadline(send(3, 2, 3), 5_000, 'the answer with the save held');
    expect(decodeFrame(answer).kind).toBe('ReplicateOk');
    await waitFor(() => gate.held === 1, 'the commit offset save to start behind the answer');
    expect(await storedCommit(at)).toBe(0);
    // A batch of a newer generation waits for that generation's save (overlapping the last
    // record, as a new leader's first batch does: one at the tail is asked to overlap).
    f.assigned = 2;
    let settled = false;
    const raised = send(4, 2, 3, 2).finally(() => {
      settled = true;
    });
    gate.releaseOne();
    await waitFor(() => gate.reached === 3, "the new generation's save");
    expect(settled).toBe(false);
    gate.open();
    expect(decodeFrame(await raised).kind).toBe('ReplicateOk');
    const onDisk = await ReplicaFile.open(nodeIo, join(at, shardDirName(SHARD)));
    expect(onDisk.state.generation).toBe(2);
  });

  it('a_follower_whose_commit_offset_save_failed_behind_an_answer_refuses_the_next_batch_and_reopens', async () => {
    const at = await root();
    const gate = new ReplicaSaveGate();
    const f = new SimFollower({ root: at, shard: SHARD, fsync: 'onCommit', io: gate.io }, 1);
    cleanups.push(() => f.close());
    const send = (first: number, n: number, mark: number) => {
      const payloads = Array.from({ length: n }, (_, k) => rec(first + k));
      return f.handle(committedFrame(first, shardRef(1), first, payloads, mark));
    };
    expect(decodeFrame(await send(0, 3, 0)).kind).toBe('ReplicateOk');
    gate.failing = true;
    // Answered: the records are durable; the save behind it fails.
    expect(decodeFrame(await send(3, 2, 3)).kind).toBe('ReplicateOk');
    await waitFor(() => gate.failed === 1, 'the failed save');
    // The file's state is unknown now: the next batch is refused so the leader sends it again.
    expect(decodeFrame(await send(5, 1, 5))).toMatchObject({
      kind: 'ReplicateError',
      code: INTERNAL_ERROR.StorageFailed,
    });
    gate.failing = false;
    // The shard was reopened from disk: the resend is compared, appended and answered.
    expect(decodeFrame(await send(5, 1, 5))).toMatchObject({
      kind: 'ReplicateOk',
      durableOffset: 6,
    });
    await waitFor(async () => (await storedCommit(at)) === 5, 'the stored commit 5');
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
    const saver = new CommitSaver(replica, {
      intervalMs: 200,
      onCommitIntervalMs: 20,
      now: () => now,
    });
    for (let i = 1; i <= 50; i++) saver.offer(i, false);
    // The first offer saves at once; the other 49 fall inside the interval and wait.
    await waitFor(() => saver.saved === 1, 'the first save');
    expect(saves).toHaveBeenCalledTimes(1);
    now += 200;
    await waitFor(() => saver.saved === 50, 'the save at the end of the interval', 5_000);
    expect(saves).toHaveBeenCalledTimes(2);
    // Fsyncing on commit: the shorter interval, and still behind the offer.
    now += 20;
    saver.offer(60, true);
    for (let i = 61; i <= 70; i++) saver.offer(i, true);
    // The first offer saved 60 at once; the rest wait for the (real) 20 ms timer, which a slow
    // machine may fire before 60 is ever seen on its own (a CI run waited for it in vain).
    await waitFor(() => saver.saved >= 60, 'the on-commit save');
    expect(saves.mock.calls[2]?.[0]).toBe(60);
    now += 20;
    await waitFor(() => saver.saved === 70, 'the next on-commit save', 5_000);
    expect(saves).toHaveBeenCalledTimes(4);
    expect(saves.mock.calls[3]?.[0]).toBe(70);
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
  it('a_follower_copy_says_the_newest_generation_whose_batch_it_answered_held', async () => {
    // A leaver handing off reads it: its successor's first batch held here (handoff.ts).
    const log = await SegmentLog.open({ root: await root(), shard: SHARD, fsync: 'onCommit' });
    cleanups.push(() => log.close());
    const f = new SimFollower({ root: await root(), shard: SHARD, fsync: 'onCommit' }, 3);
    cleanups.push(() => f.close());
    const shipper = new ShardShipper({
      log,
      shard: shardRef(3),
      followers: [{ nodeId: 'b1', link: new LossyLink(f, Math.random, 0), start: 0 }],
    });
    cleanups.push(() => shipper.stop());
    expect(f.server.status(shardRef(3))).toBeUndefined();
    await log.append([rec(0), rec(1)]);
    await waitFor(() => shipper.confirmed('b1') === 2, 'the follower to hold the log');
    expect(f.server.status(shardRef(3))).toMatchObject({
      generation: 3,
      held: 3,
      heldThrough: 2,
      tail: 2,
    });
    await shipper.stop();
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
    // Batches of 8 make segments of 8 records: the two below the mark go, no more. (The mark
    // is saved behind the answers, so the saved offset may trail it for a moment.)
    await waitFor(() => quorum.status(shardRef(1))?.commit === 16, 'the mark saved');
    expect(quorum.status(shardRef(1))!.base).toBe(16);
    // The mark moves on: retention follows it.
    const answer = await quorum.handle(committedFrame(99, shardRef(1), 40, [], 40));
    expect(decodeFrame(answer).kind).toBe('ReplicateOk');
    await waitFor(
      () => (quorum.status(shardRef(1))?.base ?? 0) > 30,
      'the quorum copy trimmed to its mark',
    );
    expect(quorum.status(shardRef(1))!.tail).toBe(40);
  });

  it('a_followers_copy_takes_a_retention_changed_while_it_is_open', async () => {
    const at = await root();
    let retention: { maxBytes: number; checkIntervalMs: number } | undefined;
    const server = new ReplicaServer({
      logOptions: () => ({
        root: at,
        shard: SHARD,
        fsync: 'onCommit',
        segmentBytes: 4096,
        ...(retention === undefined ? {} : { retention }),
      }),
      assignment: () => ({ generation: 1 }),
    });
    cleanups.push(() => server.close());
    const big = (i: number) => new TextEncoder().encode(`r${i}:${'x'.repeat(1000)}`);
    for (let first = 0; first < 40; first += 8) {
      const batch = Array.from({ length: 8 }, (_, k) => big(first + k));
      const answer = await server.handle(committedFrame(first, shardRef(1), first, batch, 0));
      expect(decodeFrame(answer).kind).toBe('ReplicateOk');
    }
    // Opened without bounds: it keeps everything, and a refresh with none changes nothing.
    expect(await server.refreshRetention()).toBe(0);
    expect(server.status(shardRef(1))!.base).toBe(0);
    // The catalog's retention changed: the open copy takes it at once, no reopen.
    retention = { maxBytes: 4096, checkIntervalMs: 10 };
    expect(await server.refreshRetention()).toBeGreaterThan(0);
    expect(server.status(shardRef(1))!.base).toBeGreaterThan(30);
    expect(server.status(shardRef(1))!.tail).toBe(40);
  });

  it('a_followers_copy_keeps_a_retention_removed_while_open_through_a_truncation', async () => {
    // The copy is reopened after a divergent suffix is cut (truncateAt), and after a bootstrap or
    // rebuild, from `state.opts`: the options it was first opened with. The retention removed
    // by refreshRetention must not come back with the reopen (only the next reconcile pass,
    // on the next feed change, would take it away again).
    const at = await root();
    let retention: { maxBytes: number; checkIntervalMs: number } | undefined = {
      maxBytes: 8192,
      checkIntervalMs: 10,
    };
    let assigned = 1;
    const server = new ReplicaServer({
      logOptions: () => ({
        root: at,
        shard: SHARD,
        fsync: 'onCommit',
        segmentBytes: 4096,
        ...(retention === undefined ? {} : { retention }),
      }),
      assignment: () => ({ generation: assigned }),
    });
    cleanups.push(() => server.close());
    const big = (i: number, tag = 'r') =>
      new TextEncoder().encode(`${tag}${i}:${'x'.repeat(1000)}`);
    // Opened under an 8 KiB bound, holding one record; the catalog then drops the bound.
    const first = await server.handle(recordsFrame(1, shardRef(1), 0, [big(0)]));
    expect(decodeFrame(first).kind).toBe('ReplicateOk');
    retention = undefined;
    await server.refreshRetention();
    for (let from = 1; from < 40; from += 8) {
      const batch = Array.from({ length: Math.min(8, 40 - from) }, (_, k) => big(from + k));
      const answer = await server.handle(recordsFrame(from, shardRef(1), from, batch));
      expect(decodeFrame(answer).kind).toBe('ReplicateOk');
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(server.status(shardRef(1))!.base).toBe(0);
    // A new leader (generation 2) sends the shared prefix and a suffix of its own: the old
    // suffix from 36 is cut and the copy reopened.
    assigned = 2;
    const next = [
      ...Array.from({ length: 36 }, (_, k) => big(k)),
      ...Array.from({ length: 4 }, (_, k) => big(36 + k, 'n')),
    ];
    const answer = await server.handle(recordsFrame(99, shardRef(2), 0, next));
    expect(decodeFrame(answer).kind).toBe('ReplicateOk');
    expect(server.status(shardRef(2))!.tail).toBe(40);
    // No bound: nothing is deleted, whatever the timer of the reopened copy does.
    await new Promise((r) => setTimeout(r, 300));
    expect(server.status(shardRef(2))!.base).toBe(0);
  });
});

/** An Io whose saves of a `replica` file can be held at their rename (counted as they reach it). */
class ReplicaSaveGate {
  /** Renames of a `replica` file that reached the gate. */
  reached = 0;
  /** While set, such renames fail (EIO); `failed` counts them. */
  failing = false;
  failed = 0;
  private holding = false;
  private waiting: Array<() => void> = [];
  readonly io: Io;

  constructor() {
    const io = Object.create(nodeIo) as Io;
    io.rename = async (from, to) => {
      if (to.endsWith('/replica')) {
        this.reached++;
        if (this.failing) {
          this.failed++;
          throw systemError('EIO', 'rename', to);
        }
        if (this.holding) await new Promise<void>((resolve) => this.waiting.push(resolve));
      }
      return nodeIo.rename(from, to);
    };
    this.io = io;
  }

  get held(): number {
    return this.waiting.length;
  }

  close(): void {
    this.holding = true;
  }

  releaseOne(): void {
    this.waiting.shift()?.();
  }

  open(): void {
    this.holding = false;
    for (const w of this.waiting.splice(0)) w();
  }
}
