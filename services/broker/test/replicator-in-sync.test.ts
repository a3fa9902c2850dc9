/**
 * Goal: the leader's replica reports name in `in_sync` exactly the followers that held its whole
 * log within the lag window (`cluster.replica_lag_max_ms`, docs/replication.md "In-sync
 * followers"): one whose link fails leaves the list once the window has passed while the leader
 * writes on, and a restart of the shipper for a new generation of the same leadership (a change
 * of the follower set) keeps an in-sync follower in sync instead of starting every follower out.
 * A follower that keeps failing is counted at each backoff and warned of, and said to be back.
 * Method: the broker's Replicator over a real leader log, shipping through in-memory links to
 * two ReplicaServers over real logs, one link made to fail on demand; waits on the reports with a
 * deadline, never sleeps.
 */
import type { ReplicaLogKind } from '@felix/replication';
import { type PeerLink, ReplicaServer, shippingKindOf } from '@felix/replication';
import { SegmentLog } from '@felix/storage';
import { cleanupScope, waitFor } from '@felix/testing-harness';
import { InternalFrameDecoder, type ShardRef, decodeInternalMessage } from '@felix/wire';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { PeerPool } from '../src/cluster/peer-pool.js';
import { shardKey } from '../src/cluster/feed-items.js';
import { Replicator, type ReplicatorDeps } from '../src/cluster/replicator.js';

const SHARD = { tenant: 't1', namespace: 'default', stream: 'orders', shard: 0 };
const REF: ShardRef = {
  tenantId: SHARD.tenant,
  namespace: SHARD.namespace,
  stream: SHARD.stream,
  shard: SHARD.shard,
  generation: 1,
};
/** The test's lag window: short, so a cut follower leaves it quickly. */
const WINDOW_MS = 1_000;

/** Closers newest first, then the temp dirs, after each test. */
const scope = cleanupScope();
afterEach(() => scope.run());

async function root(): Promise<string> {
  const dir = await scope.tempDir('felix-repl-in-sync-');
  return dir.path;
}

async function followerServer(): Promise<ReplicaServer> {
  const at = new Map<ReplicaLogKind, string>();
  for (const kind of ['stream', 'cache', 'counters'] as const) at.set(kind, await root());
  const server = new ReplicaServer({
    logOptions: (_shard: ShardRef, log: ReplicaLogKind) => ({
      root: at.get(log)!,
      shard: SHARD,
      fsync: 'onCommit',
    }),
    assignment: () => ({ generation: 2 }),
  });
  scope.defer(() => server.close());
  return server;
}

/** The log a shipping frame is for (undefined for any other request). */
function logOfFrame(frame: Uint8Array): ReplicaLogKind | undefined {
  const [f] = new InternalFrameDecoder().push(frame);
  return shippingKindOf(decodeInternalMessage(f!).kind)?.log;
}

/** A pool whose link to each follower calls its ReplicaServer directly, unless it is cut (as
 *  `node`, or for one log only as `node:log`). */
function poolOf(servers: Map<string, ReplicaServer>, cut: Set<string>): PeerPool {
  const link = (nodeId: string): PeerLink => ({
    request: async (frame) => {
      if (cut.has(nodeId) || cut.has(`${nodeId}:${logOfFrame(frame)}`))
        throw new Error(`${nodeId} is cut`);
      return servers.get(nodeId)!.handle(frame);
    },
  });
  return { link, close: async () => undefined } as unknown as PeerPool;
}

/** A logger whose lines the test reads back, parsed. */
function capturedLog(): { lines: Array<Record<string, unknown>>; logger: pino.Logger } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { lines, logger };
}

/** A leader's segment log (`onCommit`), closed after the test. */
async function leaderLog(): Promise<SegmentLog> {
  const log = await SegmentLog.open({ root: await root(), shard: SHARD, fsync: 'onCommit' });
  scope.defer(() => log.close());
  return log;
}

/** A Replicator shipping to followers b1 and b2 over links cut as `cut` says (silent logs and
 *  the test's lag window unless `deps` says otherwise), closed after the test. */
async function replicatorTo(
  cut: Set<string>,
  deps: Partial<ReplicatorDeps> = {},
): Promise<Replicator> {
  const servers = new Map([
    ['b1', await followerServer()],
    ['b2', await followerServer()],
  ]);
  const replicator = new Replicator({
    pool: poolOf(servers, cut),
    log: pino({ level: 'silent' }),
    replicaLagMaxMs: WINDOW_MS,
    ...deps,
  } as unknown as ReplicatorDeps);
  scope.defer(() => replicator.close());
  return replicator;
}

describe('replicator in-sync followers', () => {
  it('a_report_names_in_sync_only_followers_within_the_window_across_a_shipper_restart', async () => {
    const log = await leaderLog();
    const cut = new Set<string>();
    const replicator = await replicatorTo(cut);
    const inSync = () => replicator.reports()[0]?.in_sync;
    const write = (n: number) =>
      log.append(Array.from({ length: n }, (_, i) => new TextEncoder().encode(`r${i}`)));
    await replicator.ship('s', log, REF, ['b1', 'b2'], { genStart: 0 });
    await write(5);
    await waitFor(() => inSync()?.length === 2, 'both followers in sync', 10_000);
    // b2 is cut while the leader writes on: it leaves the list once the window has passed.
    cut.add('b2');
    await write(5);
    // Cut but caught up moments ago: still within the window.
    expect(inSync()).toEqual(['b1', 'b2']);
    await waitFor(
      async () => {
        await write(1);
        return inSync()?.join() === 'b1';
      },
      'b2 out of sync',
      10_000,
    );
    // A new generation of the same leadership restarts the shipper: b1 is still in sync at once
    // (before any answer of the new shipper), b2 still out.
    await replicator.ship('s', log, { ...REF, generation: 2 }, ['b1', 'b2'], {});
    expect(replicator.reports()[0]?.generation).toBe(2);
    expect(inSync()).toEqual(['b1']);
  });

  it('a_cache_shards_in_sync_followers_are_in_sync_on_its_counter_log_too', async () => {
    const cacheLog = await leaderLog();
    const counterLog = await leaderLog();
    const cut = new Set<string>();
    const replicator = await replicatorTo(cut);
    const write = (log: SegmentLog, n: number) =>
      log.append(Array.from({ length: n }, (_, i) => new TextEncoder().encode(`r${i}`)));
    const followers = ['b1', 'b2'];
    await replicator.ship('c', cacheLog, REF, followers, { kind: 'cache', genStart: 0 });
    await replicator.ship('c', counterLog, REF, followers, { kind: 'counters', genStart: 0 });
    await write(cacheLog, 3);
    await write(counterLog, 3);
    const report = () => replicator.reports()[0];
    await waitFor(() => report()?.in_sync.length === 2, 'both followers in sync', 10_000);
    expect(report()?.kind).toBe('cache');
    // b2 keeps up on the cache log but is cut on the counter log while adds go on: it leaves
    // the shard's in-sync list though its cache log is level.
    cut.add('b2:counters');
    await waitFor(
      async () => {
        await write(cacheLog, 1);
        await write(counterLog, 1);
        return report()?.in_sync.join() === 'b1';
      },
      'b2 out of sync on the counter log',
      10_000,
    );
    await waitFor(
      () => replicator.confirmed('c', 'b2', 'cache') === cacheLog.tailOffset,
      'b2 level on the cache log',
      10_000,
    );
    expect(report()?.in_sync).toEqual(['b1']);
  });

  it('a_follower_newly_in_sync_asks_for_a_report_until_one_names_it', async () => {
    const log = await leaderLog();
    const cut = new Set<string>(['b2']);
    let asked = 0;
    const replicator = await replicatorTo(cut, {
      onInSyncJoined: () => {
        asked++;
      },
    });
    const write = (n: number) =>
      log.append(Array.from({ length: n }, (_, i) => new TextEncoder().encode(`r${i}`)));
    const level = (f: string) => () => replicator.confirmed('s', f) === log.tailOffset;
    await replicator.ship('s', log, REF, ['b1', 'b2'], { genStart: 0 });
    await write(5);
    await waitFor(() => asked > 0, 'b1 in sync to ask for a report', 10_000);
    expect(replicator.reports()[0]?.in_sync).toContain('b1');
    // Reported: b1 keeping up asks for nothing more.
    const after = asked;
    await write(5);
    await waitFor(level('b1'), 'b1 level again', 10_000);
    expect(asked).toBe(after);
    // b2, cut since the start, is out of sync once the window passes; back, it asks again.
    await waitFor(() => replicator.reports()[0]?.in_sync.join() === 'b1', 'b2 out of sync', 10_000);
    cut.delete('b2');
    await waitFor(() => asked > after, 'b2 newly in sync to ask for a report', 10_000);
    expect(replicator.reports()[0]?.in_sync).toEqual(['b1', 'b2']);
  });

  it('a_follower_that_keeps_failing_is_warned_of_and_said_to_be_back_when_it_answers', async () => {
    const log = await leaderLog();
    const cut = new Set<string>(['b2']);
    const { lines, logger } = capturedLog();
    let backoffs = 0;
    const replicator = await replicatorTo(cut, {
      log: logger,
      backoffsWarnAfter: 3,
      onBackoff: () => {
        backoffs++;
      },
    });
    const said = (msg: string) => lines.filter((l) => l.msg === msg);
    await replicator.ship('s', log, REF, ['b1', 'b2'], { genStart: 0 });
    await log.append([new TextEncoder().encode('r0')]);
    await waitFor(
      () => said('follower not answering; shipping to it is retried').length > 0,
      'a warning about b2',
      10_000,
    );
    const [warning] = said('follower not answering; shipping to it is retried');
    expect(warning).toMatchObject({
      shard: 's',
      log: 'stream',
      follower: 'b2',
      shard_logs: 1,
      backoffs: 3,
    });
    expect(backoffs).toBeGreaterThanOrEqual(3);
    // b1 answers throughout: nothing is said of it.
    expect(lines.some((l) => l.follower === 'b1')).toBe(false);
    cut.delete('b2');
    await waitFor(
      () => said('follower answering again; shipping resumed').length > 0,
      'b2 said to be back',
      10_000,
    );
    expect(said('follower answering again; shipping resumed')[0]).toMatchObject({
      follower: 'b2',
      shard_logs: 1,
    });
    expect(replicator.confirmed('s', 'b2')).toBe(log.tailOffset);
  });

  it('a_follower_not_answering_is_warned_of_with_the_shard_named_as_the_other_log_lines_name_it', async () => {
    // The broker ships under its internal key (kind, tenant, namespace, name and shard joined by
    // NUL: feed-items.ts shardKey). Its other lines name a shard `t1/default/orders/0` ("shard
    // opened", "append failed"); the replication warnings must too, or a search for the shard
    // an operator sees elsewhere misses them (and NULs break some log pipelines).
    const log = await leaderLog();
    const cut = new Set<string>(['b2']);
    const { lines, logger } = capturedLog();
    const replicator = await replicatorTo(cut, { log: logger, backoffsWarnAfter: 3 });
    const key = shardKey('stream', SHARD.tenant, SHARD.namespace, SHARD.stream, SHARD.shard);
    await replicator.ship(key, log, REF, ['b1', 'b2'], { genStart: 0 });
    await log.append([new TextEncoder().encode('r0')]);
    const warned = () =>
      lines.filter((l) => l.msg === 'follower not answering; shipping to it is retried');
    await waitFor(() => warned().length > 0, 'a warning about b2', 10_000);
    expect(warned()[0]).toMatchObject({ follower: 'b2', shard: 't1/default/orders/0' });
  });

  it('a_follower_warned_of_through_a_stopped_shipper_is_warned_of_again_by_the_next', async () => {
    const log = await leaderLog();
    const cut = new Set<string>(['b2']);
    const { lines, logger } = capturedLog();
    const replicator = await replicatorTo(cut, { log: logger, backoffsWarnAfter: 3 });
    const warnings = () =>
      lines.filter((l) => l.msg === 'follower not answering; shipping to it is retried').length;
    await replicator.ship('s', log, REF, ['b1', 'b2'], { genStart: 0 });
    await log.append([new TextEncoder().encode('r0')]);
    await waitFor(() => warnings() === 1, 'a first warning about b2', 10_000);
    // The shard stops shipping (moved away) while b2 is still down, then ships again: the new
    // shipper's failures are a new series, warned of at once, not hidden behind the stopped one.
    await replicator.stop('s');
    await replicator.ship('s', log, REF, ['b1', 'b2'], { genStart: 0 });
    await waitFor(() => warnings() === 2, 'a fresh warning about b2', 10_000);
    expect(lines.filter((l) => l.msg === 'follower answering again; shipping resumed')).toEqual([]);
  });
});
