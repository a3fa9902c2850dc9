/**
 * Goal: a follower rebuilt at its leader's base holds nothing of the leader's log yet, so it is
 * not in sync (a promotion candidate, counted in the in-sync gauge) nor confirmed as holding more
 * than it does until it caught up again (docs/replication.md, "Rebuilding a follower left
 * behind"). Found by a review of the rebuild: both failed on its first version.
 * Method: a ShardShipper over a real leader log, a ReplicaServer over a real follower log, a
 * link that can be cut and can hold back record batches (answering as a timeout).
 */
import { join } from 'node:path';
import { type LogOptions, SegmentLog } from '@felix/storage';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { ReplicaServer } from '../src/follower/replica-server.js';
import { RebuildSlots } from '../src/leader/rebuild-slots.js';
import { ShardShipper, type PeerLink } from '../src/leader/shard-shipper.js';
import { SHARD, decodeFrame, shardRef } from './support/sim.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});
const utf8 = new TextEncoder();

async function root(): Promise<string> {
  const dir = await tempDir('felix-rebuild-in-sync-');
  cleanups.push(dir.cleanup);
  return dir.path;
}

function streamOptions(dir: string): LogOptions {
  return { root: join(dir, 'stream'), shard: SHARD, fsync: 'onCommit', segmentBytes: 4096 };
}

class GateLink implements PeerLink {
  cut = false;
  holdRecords = false;
  constructor(public server: ReplicaServer) {}
  request(frame: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    const kind = decodeFrame(frame).kind;
    const held = this.holdRecords && kind.endsWith('Records');
    if (this.cut || held)
      return new Promise((_, reject) =>
        setTimeout(() => reject(new Error('no answer')), timeoutMs),
      );
    return this.server.handle(frame);
  }
}

describe('a rebuilt follower counts only what it holds', () => {
  it('a_follower_just_rebuilt_at_the_base_is_not_in_sync_before_it_holds_the_log', async () => {
    const leaderLog = await SegmentLog.open(streamOptions(await root()));
    cleanups.push(() => leaderLog.close());
    const followerDir = await root();
    const server = new ReplicaServer({
      logOptions: () => streamOptions(followerDir),
      assignment: () => ({ generation: 1 }),
    });
    cleanups.push(() => server.close());
    const link = new GateLink(server);
    const pad = (i: number) => utf8.encode(`r${i}`.padEnd(64, '.'));
    for (let i = 0; i < 100; i++) await leaderLog.append([pad(i)]);
    const slots = new RebuildSlots();
    const atRebuild: Array<Record<string, number | undefined>> = [];
    const s: ShardShipper = new ShardShipper({
      log: leaderLog,
      shard: shardRef(1),
      followers: [{ nodeId: 'f', link, start: 0 }],
      answerTimeoutMs: 200,
      rebuild: { slots, afterMs: 10 },
      onRebuilt: (id, base) =>
        atRebuild.push({
          base,
          confirmed: s.confirmed(id),
          tail: leaderLog.tailOffset,
          caughtUpAtMs: s.caughtUpAtMs(id),
          slotsRunning: slots.running,
        }),
    });
    cleanups.push(() => s.stop());
    await waitFor(() => s.confirmed('f') === 100, 'the follower caught up', 10_000);
    await waitFor(() => s.caughtUpAtMs('f') !== undefined, 'in sync', 10_000);
    // Away for a moment while the leader writes past its retention.
    link.cut = true;
    for (let i = 100; i < 400; i++) await leaderLog.append([pad(i)]);
    await leaderLog.trimBelow(300);
    expect(leaderLog.baseOffset).toBeGreaterThan(100);
    // Back; its catch-up batches are slow (held), the rebuild itself goes through.
    link.holdRecords = true;
    link.cut = false;
    await waitFor(() => atRebuild.length === 1, 'the rebuild', 10_000);
    const r = atRebuild[0]!;
    expect(r.confirmed).toBe(leaderLog.baseOffset);
    expect(r.confirmed!).toBeLessThan(r.tail!);
    // It holds none of [base, tail): in sync it is a promotion candidate and holds the
    // leader's in-sync gauges up, though it is a whole log behind.
    expect(
      r.caughtUpAtMs,
      'rebuilt follower reported in sync while holding nothing',
    ).toBeUndefined();
  });

  it('a_follower_rebuilt_after_its_copy_was_restored_older_confirms_only_what_it_holds', async () => {
    const leaderLog = await SegmentLog.open(streamOptions(await root()));
    cleanups.push(() => leaderLog.close());
    const serverOver = (dir: string) => {
      const server = new ReplicaServer({
        logOptions: () => streamOptions(dir),
        assignment: () => ({ generation: 1 }),
      });
      cleanups.push(() => server.close());
      return server;
    };
    const pad = (i: number) => utf8.encode(`r${i}`.padEnd(64, '.'));
    // The follower's backup: the leader's first 20 records.
    const backupDir = await root();
    const backup = await SegmentLog.open(streamOptions(backupDir));
    for (let i = 0; i < 20; i++) await backup.append([pad(i)]);
    await backup.close();
    const link = new GateLink(serverOver(await root()));
    for (let i = 0; i < 200; i++) await leaderLog.append([pad(i)]);
    const atRebuild: Array<Record<string, number | undefined>> = [];
    const s: ShardShipper = new ShardShipper({
      log: leaderLog,
      shard: shardRef(1),
      followers: [{ nodeId: 'f', link, start: 0 }],
      answerTimeoutMs: 200,
      rebuild: { slots: new RebuildSlots(), afterMs: 10 },
      onRebuilt: (id, base) =>
        atRebuild.push({ base, confirmed: s.confirmed(id), tail: leaderLog.tailOffset }),
    });
    cleanups.push(() => s.stop());
    await waitFor(() => s.confirmed('f') === 200, 'the follower caught up', 10_000);
    // The follower broker comes back restored from its older copy; the leader's retention has
    // passed that copy meanwhile; then a write.
    link.holdRecords = true;
    link.server = serverOver(backupDir);
    await leaderLog.trimBelow(100);
    expect(leaderLog.baseOffset).toBeGreaterThan(20);
    await leaderLog.append([pad(200)]);
    // The gap answer sends it back below the base: halted needs_bootstrap, then rebuilt.
    link.holdRecords = false;
    await waitFor(() => atRebuild.length === 1 || s.confirmed('f') > 200, 'the rebuild', 10_000);
    expect(atRebuild.length).toBe(1);
    const r = atRebuild[0]!;
    // It holds [base, base): nothing. Reported (replica_offsets) and counted (quorum mark,
    // promotion's durable_offset >= bound) at 200, it is promotable with an empty log.
    expect(r.confirmed, 'confirmed after the rebuild').toBe(r.base);
  });
});
