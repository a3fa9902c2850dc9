/**
 * Goal: a cache shard's replica report speaks of its cache log (its offsets, its commit mark),
 * so a follower it names as rebuilt is named at a cache-log offset (the control plane's merge
 * sets that follower's stored offset to the `base` it is given, and promotion compares that
 * offset with the cache log's bound), and it stays named across the leader's next generation.
 * Found by a review: the counter log's base was sent, and the name was dropped at a new
 * generation.
 * Method: the broker's Replicator shipping a cache shard's cache and counter logs (real
 * LogCaches, the counter log compacted so its base rises far past the cache log's tail) to one
 * follower through in-memory links; the follower's link is cut per log. Waits on conditions.
 */
import { join } from 'node:path';
import {
  type PeerLink,
  type ReplicaLogKind,
  ReplicaServer,
  REPLICA_LOG_KINDS,
  REPLICA_LOGS,
  shippingKindOf,
} from '@felix/replication';
import { LogCache, type LogOptions, SegmentLogPort } from '@felix/storage';
import { cleanupScope, waitFor } from '@felix/testing-harness';
import { InternalFrameDecoder, type ShardRef, decodeInternalMessage } from '@felix/wire';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { PeerPool } from '../src/cluster/peer-pool.js';
import { Replicator, type ReplicatorDeps } from '../src/cluster/replicator.js';

const SHARD = { tenant: 't1', namespace: 'default', stream: 'sessions', shard: 0 };
const REF: ShardRef = {
  tenantId: SHARD.tenant,
  namespace: SHARD.namespace,
  stream: SHARD.stream,
  shard: SHARD.shard,
  generation: 1,
};
const utf8 = new TextEncoder();
const filler = 'v'.repeat(100);

const scope = cleanupScope();
afterEach(() => scope.run());

async function root(): Promise<string> {
  return (await scope.tempDir('felix-rebuilt-report-')).path;
}

function logOptions(dir: string, log: ReplicaLogKind): LogOptions {
  return { root: join(dir, log), shard: SHARD, fsync: 'onCommit', segmentBytes: 4096 };
}

/** The log a replication frame is for. */
function logOf(frame: Uint8Array): ReplicaLogKind | undefined {
  const [decoded] = new InternalFrameDecoder().push(frame);
  const m = decodeInternalMessage(decoded!) as { kind: string; log?: number };
  if (m.log !== undefined) return REPLICA_LOG_KINDS.find((k) => REPLICA_LOGS[k].wire === m.log);
  return shippingKindOf(m.kind)?.log;
}

async function openCache(dir: string, log: ReplicaLogKind) {
  const port = await SegmentLogPort.open(logOptions(dir, log));
  const cache = await LogCache.open({ log: port, compaction: { auto: false, bytesPerSec: 0 } });
  scope.defer(() => cache.close());
  return { cache, log: port.segmentLog };
}

async function writeRounds(cache: LogCache, rounds: number, tag: string): Promise<void> {
  for (let round = 0; round < rounds; round++)
    for (let k = 0; k < 40; k++) await cache.put(`k${k}`, utf8.encode(`${tag}${round}-${filler}`));
}

describe('a cache shards report names its rebuilt followers', () => {
  it('a_follower_rebuilt_on_the_counter_log_is_not_reported_as_holding_the_cache_log_to_the_counter_base', async () => {
    const leaderDir = await root();
    const cacheLog = await openCache(leaderDir, 'cache');
    const counters = await openCache(leaderDir, 'counters');
    const dir = await root();
    const server = new ReplicaServer({
      logOptions: (_shard: ShardRef, log: ReplicaLogKind) => logOptions(dir, log),
      assignment: () => ({ generation: 1 }),
    });
    scope.defer(() => server.close());
    // b2's link, cut per log.
    const cut = new Set<ReplicaLogKind>();
    const link: PeerLink = {
      request: async (frame) => {
        const log = logOf(frame);
        if (log !== undefined && cut.has(log)) throw new Error(`b2's ${log} is cut`);
        return server.handle(frame);
      },
    } as PeerLink;
    const pool = { link: () => link, close: async () => undefined } as unknown as PeerPool;
    const rep = new Replicator({
      pool,
      log: pino({ level: 'silent' }),
      replicaLagMaxMs: 500,
    } as unknown as ReplicatorDeps);
    scope.defer(() => rep.close());
    await rep.ship('c', cacheLog.log, REF, ['b2'], { kind: 'cache', genStart: 0 });
    await rep.ship('c', counters.log, REF, ['b2'], { kind: 'counters', genStart: 0 });
    await writeRounds(cacheLog.cache, 1, 'a');
    await writeRounds(counters.cache, 1, 'a');
    const holds = (kind: 'cache' | 'counters', log: { tailOffset: number }) =>
      rep.confirmed('c', 'b2', kind) === log.tailOffset;
    await waitFor(
      () => holds('cache', cacheLog.log) && holds('counters', counters.log),
      'b2 holds both logs',
      10_000,
    );
    // b2 goes away: the cache log moves on a little, the counter log a lot and is compacted
    // past what b2 holds (its trim goes once b2 is out of the lag window).
    cut.add('cache');
    cut.add('counters');
    await writeRounds(cacheLog.cache, 1, 'b');
    await writeRounds(counters.cache, 6, 'b');
    const { cut: counterCut } = await counters.cache.compact();
    await waitFor(
      async () => {
        await counters.cache.put('tick', utf8.encode(filler));
        rep.reports();
        return counters.log.baseOffset === counterCut;
      },
      'the counter trim past the window',
      15_000,
    );
    const cacheTail = cacheLog.log.tailOffset;
    expect(counters.log.baseOffset).toBeGreaterThan(cacheTail);
    // b2 is back on its counter log only: halted there, then rebuilt at the counter base. Its
    // cache log still lacks the second round.
    cut.delete('counters');
    await waitFor(
      () => (rep.reports()[0]?.rebuilt?.length ?? 0) > 0,
      'b2 rebuilt on the counter log',
      30_000,
    );
    const report = rep.reports()[0]!;
    const heldOfCache = rep.confirmed('c', 'b2', 'cache');
    expect(heldOfCache).toBeLessThan(cacheTail);
    // What the control plane will store for b2 (mergeReports: the rebuilt base, then raised by
    // the report's offset) must not exceed what b2 holds of the cache log.
    const reported = report.replica_offsets.find((o) => o.node_id === 'b2')!.durable_offset;
    const base = report.rebuilt!.find((r) => r.node_id === 'b2')!.base;
    expect(Math.max(base, reported)).toBeLessThanOrEqual(heldOfCache);
    // The same leader's next generation (its follower set changed, new shippers): b2 is still
    // named rebuilt, so a halt the control plane stored before is taken back (found by the same
    // review: the broker named it only at the generation of the rebuild).
    await rep.ship('c', cacheLog.log, { ...REF, generation: 2 }, ['b2'], {
      kind: 'cache',
      genStart: cacheLog.log.tailOffset,
    });
    const next = rep.reports()[0]!;
    expect(next.generation).toBe(2);
    expect(next.rebuilt?.map((r) => r.node_id)).toEqual(['b2']);
  }, 60_000);
});
