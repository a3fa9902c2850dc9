/**
 * Goal: the shipping loops and the follower hold up where a review found them weak: an idle
 * shipper stays wakeable however long it idles, a log that fails under a shipper stops that
 * follower's loop with a report (never an unhandled rejection), an ok answer counts only the
 * records the leader sent, and a bootstrap from a deposed leader is fenced like its records.
 * Method: fake logs and links around ShardShipper, a FollowerCursor driven by hand, and a
 * follower (ReplicaServer over a real log) fed frames.
 */
import { tempDir, waitFor } from '@felix/testing-harness';
import { INTERNAL_ERROR } from '@felix/wire';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bootstrapFrame, recordsFrame } from '../src/frames.js';
import { FollowerCursor } from '../src/leader/follower-cursor.js';
import { ShardShipper } from '../src/leader/shard-shipper.js';
import { SHARD, SimFollower, decodeFrame, shardRef } from './support/sim.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.useRealTimers();
  while (cleanups.length > 0) await cleanups.pop()!();
});

const noLink = { request: async () => new Uint8Array() };

describe('shipping faults', () => {
  it('an_idle_shipper_stays_wakeable_however_long_it_idles', async () => {
    vi.useFakeTimers();
    let listener: (() => void) | undefined;
    const log = {
      baseOffset: 0,
      writtenOffset: 0,
      poisoned: false,
      onWritten(l: () => void) {
        listener = l;
        return () => undefined;
      },
      keepRecent: () => undefined,
      readWritten: async () => ({ kind: 'records', records: [], next: 0 }),
    };
    const shipper = new ShardShipper({
      log: log as never,
      shard: shardRef(1),
      followers: [{ nodeId: 'f', start: 0, link: noLink }],
    });
    // Fifty minutes of idle checks, then the log moves.
    await vi.advanceTimersByTimeAsync(3_000_000);
    expect(() => listener!()).not.toThrow();
    const stopping = shipper.stop();
    await vi.advanceTimersByTimeAsync(1_000);
    await stopping;
  }, 60_000);

  it('a_log_failing_under_a_shipper_stops_that_follower_with_a_report', async () => {
    const unhandled: unknown[] = [];
    const seen = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', seen);
    cleanups.push(async () => {
      process.off('unhandledRejection', seen);
    });
    const log = {
      baseOffset: 0,
      writtenOffset: 5,
      poisoned: false,
      onWritten: () => () => undefined,
      keepRecent: () => undefined,
      readWritten: async () => {
        throw new Error('log closed');
      },
    };
    const stopped: string[] = [];
    const shipper = new ShardShipper({
      log: log as never,
      shard: shardRef(1),
      followers: [{ nodeId: 'f', start: 0, link: noLink }],
      onStopped: (node, reason) => stopped.push(`${node}:${reason}`),
    });
    await waitFor(() => stopped.length > 0, 'the failed loop to report');
    await expect(shipper.stop()).resolves.toBeUndefined();
    expect(stopped).toEqual(['f:failed']);
    expect(unhandled).toEqual([]);
  });

  it('an_ok_answer_counts_only_the_records_the_leader_sent', () => {
    // A follower holding a deposed leader's suffix answers a one-record overlap with its tail.
    const c = new FollowerCursor(9);
    const s = c.plan({ base: 0, tail: 10 }, 1024)!;
    expect(s).toMatchObject({ kind: 'records', first: 9, next: 10 });
    c.onAnswer(s.correlationId, { kind: 'ok', durableOffset: 15 });
    expect(c.confirmed).toBe(10);
    expect(c.next).toBe(10);
  });

  it('a_bootstrap_from_a_deposed_leader_is_fenced', async () => {
    const dir = await tempDir('felix-fence-');
    const f = new SimFollower({ root: dir.path, shard: SHARD, fsync: 'onCommit' }, 2);
    cleanups.push(async () => {
      await f.close();
      await dir.cleanup();
    });
    expect(decodeFrame(await f.handle(recordsFrame(1, shardRef(2), 0, [])))).toMatchObject({
      kind: 'ReplicateOk',
    });
    expect(f.generation).toBe(2);
    const answer = decodeFrame(await f.handle(bootstrapFrame(2, shardRef(1), 100)));
    expect(answer).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.FencedEpoch });
    expect((await f.records()).base).toBe(0);
  });
});
