/**
 * Goal: a ShardShipper brings every follower to its leader's log while the leader keeps
 * appending, over links that lose requests and answers; it reports only what followers made
 * durable; it stops for good when a follower says a newer leader exists; and stop() ends it,
 * at once for a request still waiting for a link that never opens.
 * Method: a real leader segment log, followers that are ReplicaServers over real logs, and
 * in-memory links that fail a seeded fraction of requests and answers.
 */
import { FaultyIo, SegmentLog, nodeIo } from '@felix/storage';
import { tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { CommitMark } from '../src/leader/commit-mark.js';
import { FollowerCursor } from '../src/leader/follower-cursor.js';
import { ShardShipper } from '../src/leader/shard-shipper.js';
import {
  LeaderLog,
  LossyLink,
  SHARD,
  SimFollower,
  shardRef,
  shipmentFrame,
  takeAnswer,
} from './support/sim.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function root(): Promise<string> {
  const dir = await tempDir('felix-shipper-');
  cleanups.push(dir.cleanup);
  return dir.path;
}

async function follower(assigned: number): Promise<SimFollower> {
  const f = new SimFollower({ root: await root(), shard: SHARD, fsync: 'onCommit' }, assigned);
  cleanups.push(() => f.close());
  return f;
}

async function leaderLog(io?: FaultyIo): Promise<SegmentLog> {
  const log = await SegmentLog.open({
    root: await root(),
    shard: SHARD,
    fsync: 'onCommit',
    ...(io === undefined ? {} : { io }),
  });
  cleanups.push(() => log.close());
  return log;
}

function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

const record = (i: number) => new TextEncoder().encode(`record-${i}-${'x'.repeat(i % 50)}`);

describe('shard shipper', () => {
  it('a_shipper_brings_every_follower_to_its_leaders_log_while_the_leader_appends', async () => {
    const log = await leaderLog();
    const followers = [await follower(1), await follower(1)];
    const links = followers.map((f, i) => new LossyLink(f, seeded(i + 7), 0.2));
    const confirmed = new Map<string, number[]>();
    const shipper = new ShardShipper({
      log,
      shard: shardRef(1),
      followers: links.map((link, i) => ({ nodeId: `b${i}`, link, start: 0 })),
      answerTimeoutMs: 1_000,
      onConfirmed: (node, offset) => confirmed.set(node, [...(confirmed.get(node) ?? []), offset]),
    });
    cleanups.push(() => shipper.stop());
    const written: Uint8Array[] = [];
    for (let batch = 0; batch < 40; batch++) {
      const payloads = Array.from({ length: 1 + (batch % 5) }, (_, k) =>
        record(written.length + k),
      );
      await log.append(payloads);
      written.push(...payloads);
    }
    await waitFor(
      () => followers.every((_, i) => shipper.confirmed(`b${i}`) === written.length),
      'both followers to confirm the whole log',
      20_000,
    );
    await shipper.stop();
    const mark = new CommitMark(3);
    mark.advance([log.durableOffset, shipper.confirmed('b0'), shipper.confirmed('b1')]);
    expect(mark.offset).toBe(written.length);
    for (const [node, offsets] of confirmed) {
      // Reported offsets only grow.
      expect(offsets, node).toEqual([...offsets].sort((a, b) => a - b));
    }
    for (const f of followers) expect((await f.records()).payloads).toEqual(written);
    // The links did lose frames: the resends were exercised.
    expect(links.every((l) => l.sent > 0)).toBe(true);
  });

  it('a_leader_ships_a_record_before_its_own_fsync_completes', async () => {
    const io = new FaultyIo(nodeIo);
    const log = await leaderLog(io);
    const f = await follower(1);
    const shipper = new ShardShipper({
      log,
      shard: shardRef(1),
      followers: [{ nodeId: 'b0', link: new LossyLink(f, seeded(3), 0), start: 0 }],
      commitOffset: () => 0,
    });
    cleanups.push(() => shipper.stop());
    await log.append([record(0)]);
    await waitFor(() => shipper.confirmed('b0') === 1, 'the first record on the follower');
    const gate = io.holdDatasyncs();
    cleanups.push(async () => gate.release());
    const appended = log.append([record(1), record(2)]);
    // The follower holds both records durably while the leader's fsync of them is still held.
    await waitFor(() => shipper.confirmed('b0') === 3, 'the follower to confirm both records');
    expect(io.heldDatasyncs).toBe(1);
    expect(log.durableOffset).toBe(1);
    gate.release();
    await appended;
    await shipper.stop();
    expect((await f.records()).payloads).toEqual([record(0), record(1), record(2)]);
  });

  it('a_shipper_stops_when_a_follower_says_a_newer_leader_exists', async () => {
    const log = await leaderLog();
    const f = await follower(3);
    // A newer leader (generation 3) already shipped to this follower.
    const newer = new LeaderLog();
    newer.append(record(0));
    const c = new FollowerCursor(0);
    takeAnswer(c, await f.handle(shipmentFrame(c.plan(newer, 8)!, newer, 3)));
    await log.append([record(100), record(101)]);
    const stopped: string[] = [];
    const shipper = new ShardShipper({
      log,
      shard: shardRef(2),
      followers: [{ nodeId: 'b0', link: new LossyLink(f, seeded(1), 0), start: 0 }],
      onStopped: (node, reason) => stopped.push(`${node}:${reason}`),
    });
    cleanups.push(() => shipper.stop());
    await waitFor(() => shipper.fenced, 'the shipper to learn it was deposed');
    await shipper.stop();
    expect(stopped).toEqual(['b0:fenced']);
    expect((await f.records()).payloads).toEqual(newer.records);
  });
  it('a_shipper_reports_each_backoff_for_a_follower_that_refuses_and_when_it_answers_again', async () => {
    const log = await leaderLog();
    // A follower whose broker has not heard of the shard yet: it asks for a resend each time.
    const f = await follower(1);
    f.assigned = undefined;
    await log.append([record(0), record(1)]);
    const backoffs: Array<[number, number]> = [];
    const resumed: Array<[string, number]> = [];
    const shipper = new ShardShipper({
      log,
      shard: shardRef(1),
      followers: [{ nodeId: 'b0', link: new LossyLink(f, seeded(1), 0), start: 0 }],
      onBackoff: (node, n, waitMs) => {
        expect(node).toBe('b0');
        backoffs.push([n, waitMs]);
      },
      onResumed: (node, n) => resumed.push([node, n]),
    });
    cleanups.push(() => shipper.stop());
    await waitFor(() => backoffs.length >= 3, 'three backoffs of the refusing follower');
    // Counted since the last answer, each wait twice the one before (the loop's backoff).
    expect(backoffs.slice(0, 3).map(([n]) => n)).toEqual([1, 2, 3]);
    expect(backoffs[1]![1]).toBe(2 * backoffs[0]![1]);
    expect(resumed).toEqual([]);
    f.assigned = 1;
    await waitFor(() => shipper.confirmed('b0') === 2, 'the follower to hold both records');
    expect(resumed).toEqual([['b0', backoffs.length]]);
  });

  it('a_shipper_stops_at_once_while_a_request_waits_for_a_link_that_never_opens', async () => {
    // A new generation's shipper starts only once the old one stopped: a request to a stopped
    // peer waiting out its 5 s dial held every quorum ack of the new leader that long.
    const log = await leaderLog();
    await log.append([record(0)]);
    const withdrawals: string[] = [];
    const asked: string[] = [];
    const dialing = {
      request: (_f: Uint8Array, _t: number, _w?: number, withdrawn?: AbortSignal) =>
        new Promise<Uint8Array>((_, reject) => {
          asked.push('b0');
          if (withdrawn?.aborted) return reject(new Error('withdrawn before it was sent'));
          // The link never opens; only a withdrawal ends the wait.
          withdrawn?.addEventListener('abort', () => {
            withdrawals.push('b0');
            reject(new Error('withdrawn before its link opened'));
          });
        }),
    };
    const shipper = new ShardShipper({
      log,
      shard: shardRef(1),
      followers: [{ nodeId: 'b0', link: dialing, start: 0 }],
      answerTimeoutMs: 60_000,
    });
    await waitFor(() => asked.length > 0, 'a request waiting for its link');
    await withDeadline(shipper.stop(), 1_000, 'the stop of a shipper whose link never opens');
    expect(withdrawals).toEqual(['b0']);
  });
});
