/**
 * Goal: a quorum shard's commit mark counts the leader at its own durable offset and never
 * passes it, now that records ship to followers before the leader's fsync of them ends: two
 * followers holding a record durably do not make it committed (nor release its publisher)
 * while the leader's fsync is held. Method: the broker's Replicator over a real leader log
 * whose fdatasync a FaultyIo holds, shipping through in-memory links to two ReplicaServers over
 * real logs; waits on state with a deadline, never sleeps.
 */
import type { ReplicaLogKind } from '@felix/replication';
import { type PeerLink, ReplicaServer } from '@felix/replication';
import { FaultyIo, SegmentLog, nodeIo } from '@felix/storage';
import { tempDir, waitFor } from '@felix/testing-harness';
import type { ShardRef } from '@felix/wire';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { PeerPool } from '../src/cluster/peer-pool.js';
import { Replicator, type ReplicatorDeps } from '../src/cluster/replicator.js';

const SHARD = { tenant: 't1', namespace: 'default', stream: 'orders', shard: 0 };
const REF: ShardRef = {
  tenantId: SHARD.tenant,
  namespace: SHARD.namespace,
  stream: SHARD.stream,
  shard: SHARD.shard,
  generation: 1,
};

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function root(): Promise<string> {
  const dir = await tempDir('felix-repl-mark-');
  cleanups.push(dir.cleanup);
  return dir.path;
}

async function followerServer(): Promise<ReplicaServer> {
  const at = await root();
  const server = new ReplicaServer({
    logOptions: (_shard: ShardRef, _log: ReplicaLogKind) => ({
      root: at,
      shard: SHARD,
      fsync: 'onCommit',
    }),
    assignment: () => ({ generation: REF.generation }),
  });
  cleanups.push(() => server.close());
  return server;
}

/** A pool whose link to each follower calls its ReplicaServer directly. */
function poolOf(servers: Map<string, ReplicaServer>): PeerPool {
  const link = (nodeId: string): PeerLink => ({
    request: (frame) => servers.get(nodeId)!.handle(frame),
  });
  return { link, close: async () => undefined } as unknown as PeerPool;
}

describe('replicator commit mark', () => {
  it('the_mark_never_passes_the_leaders_durable_offset_while_followers_hold_more', async () => {
    const io = new FaultyIo(nodeIo);
    const log = await SegmentLog.open({ root: await root(), shard: SHARD, fsync: 'onCommit', io });
    cleanups.push(() => log.close());
    const servers = new Map([
      ['b1', await followerServer()],
      ['b2', await followerServer()],
    ]);
    const replicator = new Replicator({
      pool: poolOf(servers),
      log: pino({ level: 'silent' }),
    } as unknown as ReplicatorDeps);
    cleanups.push(() => replicator.close());
    const marks: number[] = [];
    await replicator.ship('s', log, REF, ['b1', 'b2'], {
      quorum: { onMark: (m) => marks.push(m) },
      genStart: 0,
    });
    await log.append([new TextEncoder().encode('r0')]);
    await waitFor(() => replicator.commitOffset('s') === 1, 'the first record committed');
    const gate = io.holdDatasyncs();
    cleanups.push(async () => gate.release());
    const appended = log.append([new TextEncoder().encode('r1'), new TextEncoder().encode('r2')]);
    await waitFor(
      () => replicator.confirmed('s', 'b1') === 3 && replicator.confirmed('s', 'b2') === 3,
      'both followers to hold the new records',
    );
    // A majority of followers holds them, but the leader has not: the mark stays.
    expect(log.durableOffset).toBe(1);
    expect(replicator.commitOffset('s')).toBe(1);
    expect(marks).toEqual([1]);
    gate.release();
    await appended;
    await waitFor(() => replicator.commitOffset('s') === 3, 'the mark to follow the leader');
    expect(marks).toEqual([1, 3]);
  });
});
