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

async function followerServer(fsync: 'onCommit' | 'periodic' = 'onCommit'): Promise<ReplicaServer> {
  const at = await root();
  const server = new ReplicaServer({
    logOptions: (_shard: ShardRef, _log: ReplicaLogKind) => ({
      root: at,
      shard: SHARD,
      fsync,
    }),
    assignment: () => ({ generation: REF.generation }),
  });
  cleanups.push(() => server.close());
  return server;
}

/** A pool whose link to each follower calls its ReplicaServer directly; `said` is what each
 *  follower's Hello stated of its answers (absent: nothing), and a follower in `held` answers
 *  nothing until released. */
function poolOf(
  servers: Map<string, ReplicaServer>,
  said: Record<string, boolean> = {},
  held: Map<string, Promise<void>> = new Map(),
): PeerPool {
  const links = new Map<string, PeerLink>();
  const link = (nodeId: string): PeerLink => {
    let l = links.get(nodeId);
    if (l === undefined) {
      l = {
        request: async (frame) => {
          await held.get(nodeId);
          return servers.get(nodeId)!.handle(frame);
        },
        ...(nodeId in said ? { answersSynced: () => said[nodeId] } : {}),
      };
      links.set(nodeId, l);
    }
    return l;
  };
  return { link, close: async () => undefined } as unknown as PeerPool;
}

/** A gate: `wait` resolves once `release` is called. */
function gate(): { wait: Promise<void>; release: () => void } {
  let release: () => void = () => {};
  const wait = new Promise<void>((r) => {
    release = r;
  });
  return { wait, release: () => release() };
}

/**
 * A quorum shipping of `kind` (a stream's records by default) from an onCommit leader log to
 * one ReplicaServer per follower (with its fsync mode), whose Hello answers said `said` (read
 * at each call, so a test may change them). `hold(name)` makes that follower answer nothing
 * until the function it returns is called; every hold is released before the replicator closes
 * (cleanups run last first), since its exchange waits on it.
 */
async function quorumShipping(o: {
  followers: Record<string, 'onCommit' | 'periodic'>;
  said: Record<string, boolean>;
  kind?: ReplicaLogKind;
}) {
  const log = await SegmentLog.open({ root: await root(), shard: SHARD, fsync: 'onCommit' });
  cleanups.push(() => log.close());
  const servers = new Map<string, ReplicaServer>();
  for (const [name, fsync] of Object.entries(o.followers))
    servers.set(name, await followerServer(fsync));
  const held = new Map<string, Promise<void>>();
  const replicator = new Replicator({
    pool: poolOf(servers, o.said, held),
    log: pino({ level: 'silent' }),
  } as unknown as ReplicatorDeps);
  cleanups.push(() => replicator.close());
  const hold = (name: string): (() => void) => {
    const g = gate();
    held.set(name, g.wait);
    cleanups.push(async () => g.release());
    return g.release;
  };
  const marks: number[] = [];
  await replicator.ship('s', log, REF, [...servers.keys()], {
    ...(o.kind === undefined ? {} : { kind: o.kind }),
    quorum: { onMark: (m) => marks.push(m) },
    genStart: 0,
  });
  return { log, replicator, hold, marks };
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

  it('a_follower_that_confirms_written_records_does_not_count_toward_a_quorum_of_a_leader_that_syncs', async () => {
    const { log, replicator, hold } = await quorumShipping({
      followers: { weak: 'periodic', strong: 'onCommit' },
      said: { weak: false, strong: true },
    });
    const strong = hold('strong');
    await log.append([new TextEncoder().encode('r0')]);
    await waitFor(() => replicator.confirmed('s', 'weak') === 1, 'the weak follower to hold r0');
    // The leader and the weak follower hold r0: two of three, but one of them only in its
    // page cache, so no majority holds it synced and the mark stays until the other answers.
    expect(log.durableOffset).toBe(1);
    expect(replicator.commitOffset('s')).toBe(0);
    expect(replicator.unsyncedFollowers()).toBe(1);
    strong();
    await waitFor(
      () => replicator.commitOffset('s') === 1,
      'the mark to move on the synced follower',
    );
  });

  it('a_follower_that_states_nothing_of_its_syncs_counts_toward_a_quorum', async () => {
    const { log, replicator, hold } = await quorumShipping({
      followers: { older: 'onCommit', held: 'onCommit' },
      said: {},
    });
    hold('held');
    await log.append([new TextEncoder().encode('r0')]);
    await waitFor(
      () => replicator.commitOffset('s') === 1,
      'the leader and the older follower to commit r0',
    );
    expect(replicator.unsyncedFollowers()).toBe(0);
  });

  it('a_follower_back_with_synced_copies_counts_only_what_it_confirms_after_its_return', async () => {
    const said = { weak: false, strong: true };
    const { log, replicator, hold } = await quorumShipping({
      followers: { weak: 'periodic', strong: 'onCommit' },
      said,
    });
    hold('strong');
    await log.append([new TextEncoder().encode('r0')]);
    await waitFor(() => replicator.confirmed('s', 'weak') === 1, 'the weak follower to hold r0');
    expect(replicator.commitOffset('s')).toBe(0);
    // It comes back stating synced copies (restarted with onCommit), but r0 may still sit only
    // in its page cache: the leader's next record must not commit r0 on its old answer.
    said.weak = true;
    const weak = hold('weak');
    await log.append([new TextEncoder().encode('r1')]);
    await waitFor(() => log.durableOffset === 2, 'the leader to sync r1');
    expect(replicator.commitOffset('s')).toBe(0);
    expect(replicator.unsyncedFollowers()).toBe(1);
    // Its first answer since its return covers both records.
    weak();
    await waitFor(() => replicator.commitOffset('s') === 2, 'the mark to move on its new answer');
    expect(replicator.unsyncedFollowers()).toBe(0);
  });

  it('a_cache_log_counts_a_follower_whose_stream_copies_answer_once_written', async () => {
    // Cache and counter logs sync on commit on every broker, whatever its durable.fsync_mode.
    const { log, replicator, hold, marks } = await quorumShipping({
      followers: { weak: 'onCommit', held: 'onCommit' },
      said: { weak: false, held: true },
      kind: 'cache',
    });
    hold('held');
    await log.append([new TextEncoder().encode('v0')]);
    await waitFor(() => marks.includes(1), 'the leader and the other follower to commit v0');
    expect(replicator.unsyncedFollowers()).toBe(0);
  });
});
