// Goal: the logs riding with a shard live, on a follower, exactly where the broker keeps them as
// leader, so a broker that stops leading a shard releases them, its replica server follows them
// in place, and when it leads again its projections (cache index, counter sums, group cursors and
// dead letters) replay what the replica appended. Method: a CacheService and a GroupRegistry over
// one temp data dir; a ReplicaServer over the same dir (the broker's follower log options); the
// riding logs opened, written, released; one record of each kind appended through the replica
// server; the services read it back.
import { tempDir } from '@felix/testing-harness';
import { ReplicaServer, type ReplicaLogKind, recordsFrame } from '@felix/replication';
import {
  InternalFrameDecoder,
  INTERNAL_ERROR,
  type InternalMessage,
  decodeInternalMessage,
} from '@felix/wire';
import { encodeCacheRecord, encodeCounterRecord, encodeCursor } from '@felix/storage';
import { afterEach, describe, expect, it } from 'vitest';
import { CacheService } from '../src/caches/cache-service.js';
import type { ProjectionMetrics } from '../src/caches/projection-metrics.js';
import { followerLogOptions } from '../src/cluster/internal-node.js';
import { labelLeaderGeneration, ridingLogsOf } from '../src/cluster/riding-logs.js';
import type { BrokerConfig, CacheConfig } from '../src/config/types.js';
import { GroupRegistry } from '../src/groups/registry.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const metrics = {
  groupsInMemory: { set: () => undefined },
  groupRecordsSkipped: { inc: () => undefined },
} as unknown as ProjectionMetrics;

const UTF8 = new TextEncoder();
const CACHE = { tenant: 't1', namespace: 'default', name: 'jobs', shards: 1 } as CacheConfig;
const ID = { tenant: 't1', namespace: 'default', stream: 'jobs', shard: 0 };
const REF = { tenantId: 't1', namespace: 'default', stream: 'jobs', shard: 0, generation: 2 };

function answerOf(bytes: Uint8Array): InternalMessage {
  return decodeInternalMessage(new InternalFrameDecoder().push(bytes)[0]!);
}

describe('logs riding with a shard in the broker', () => {
  it('a_demoted_leaders_riding_logs_are_followed_in_place_and_replayed_when_it_leads_again', async () => {
    const dir = await tempDir();
    cleanups.push(dir.cleanup);
    const config = {
      caches: [CACHE],
      durable: { data_dir: dir.path, segment_bytes: 1 << 20 },
      broker: { cache_hot_bytes: 1 << 20, watch_queue_capacity: 16 },
    } as unknown as BrokerConfig;
    const caches = new CacheService(config);
    const registry = new GroupRegistry(dir.path, metrics, {
      cursor_fsync: 'onCommit',
      cursor_fsync_interval_ms: 250,
    });
    cleanups.push(
      () => caches.close(),
      () => registry.close(),
    );
    const riding = ridingLogsOf(caches, { shardState: registry });
    const replicas = new ReplicaServer({
      logOptions: (s, log) => followerLogOptions(config, s, log),
      assignment: () => ({ generation: 2 }),
    });
    cleanups.push(() => replicas.close());
    // As leader: written through the services, each riding log opened to ship.
    await (await caches.cache(CACHE, 0)).put('k', UTF8.encode('leader'));
    expect(await (await caches.counters(CACHE, 0)).add('n', 5n)).toBe(5n);
    await registry.cursors.commit(ID, 'workers', 3);
    await registry.deadLetters.record(ID, 'workers', 1);
    const kinds = ['cache', 'counters', 'groupCursors', 'deadLetters'] as const;
    const tails = new Map<ReplicaLogKind, number>();
    for (const kind of kinds) tails.set(kind, (await riding.open(ID, kind))!.tailOffset);
    const payloads: Record<(typeof kinds)[number], Uint8Array> = {
      cache: encodeCacheRecord({
        op: 'put',
        key: 'k',
        expiresAtMillis: 0,
        value: UTF8.encode('replica'),
      }),
      counters: encodeCounterRecord({ op: 'delta', key: 'n', value: 4n }),
      groupCursors: encodeCacheRecord({
        op: 'put',
        key: 'workers',
        expiresAtMillis: 0,
        value: encodeCursor(7),
      }),
      deadLetters: encodeCacheRecord({
        op: 'put',
        key: 'workers\u001f6',
        expiresAtMillis: 0,
        value: new Uint8Array(),
      }),
    };
    const ship = async (kind: (typeof kinds)[number]) =>
      answerOf(
        await replicas.handle(recordsFrame(1, REF, tails.get(kind)!, [payloads[kind]], kind)),
      );
    // While this broker leads, its follower copy cannot open: the leader's log holds the lock.
    expect(await ship('cache')).toMatchObject({
      kind: 'ReplicateError',
      code: INTERNAL_ERROR.StorageFailed,
    });
    // Demoted: both owners' riding logs close, and the replica server follows them in place.
    await riding.release(ID, 'cache');
    await riding.release(ID, 'stream');
    for (const kind of kinds)
      expect(await ship(kind), kind).toMatchObject({
        kind: 'ReplicateOk',
        durableOffset: tails.get(kind)! + 1,
      });
    // Meanwhile nothing here reopens them: a request still in flight is refused.
    await expect(caches.cache(CACHE, 0)).rejects.toMatchObject({ reason: 'not_leader' });
    await expect(registry.cursors.position(ID, 'workers')).rejects.toThrow(/released/);
    // Leading again: the follower copies close first, then the projections replay them.
    for (const kind of kinds) await replicas.release(REF, kind);
    riding.admit(ID, 'cache');
    riding.admit(ID, 'stream');
    expect(new TextDecoder().decode(await (await caches.cache(CACHE, 0)).get('k'))).toBe('replica');
    expect(await (await caches.counters(CACHE, 0)).get('n')).toBe(9n);
    expect(await registry.cursors.position(ID, 'workers')).toBe(7);
    expect((await registry.deadLetters.list(ID, 'workers')).map((d) => d.offset)).toEqual([1, 6]);
  });

  it('a_cache_leaders_own_writes_are_labelled_so_a_successor_batch_at_its_tail_is_asked_to_overlap_them', async () => {
    // A broker that led the cache from its first write never followed its log: without the
    // label its records carry no generation, and a successor's batch starting exactly at its
    // tail (a shipper restarted for a follower-set change starts at the leader's own tail) was
    // appended above them, keeping the deposed leader's unshipped writes under the successor's.
    const dir = await tempDir();
    cleanups.push(dir.cleanup);
    const config = {
      caches: [CACHE],
      durable: { data_dir: dir.path, segment_bytes: 1 << 20 },
      broker: { cache_hot_bytes: 1 << 20, watch_queue_capacity: 16 },
    } as unknown as BrokerConfig;
    const caches = new CacheService(config);
    cleanups.push(() => caches.close());
    const riding = ridingLogsOf(caches, null);
    // Leads at generation 2: labels its log, then acks three writes no follower got.
    await labelLeaderGeneration((await riding.open(ID, 'cache'))!, 2);
    const cache = await caches.cache(CACHE, 0);
    for (const v of ['a', 'b', 'c']) await cache.put('k', UTF8.encode(v));
    const tail = (await riding.open(ID, 'cache'))!.tailOffset;
    expect(tail).toBe(3);
    await riding.release(ID, 'cache');
    const replicas = new ReplicaServer({
      logOptions: (s, log) => followerLogOptions(config, s, log),
      assignment: () => ({ generation: 3 }),
    });
    cleanups.push(() => replicas.close());
    // Its successor at generation 3 ships from its own tail, which happens to be the same.
    const put = encodeCacheRecord({
      op: 'put',
      key: 'k',
      expiresAtMillis: 0,
      value: UTF8.encode('n'),
    });
    const at3 = { ...REF, generation: 3 };
    expect(
      answerOf(await replicas.handle(recordsFrame(1, at3, tail, [put], 'cache'))),
    ).toMatchObject({
      kind: 'ReplicateError',
      code: INTERNAL_ERROR.LogGap,
      expectedOffset: tail - 1,
    });
    // From one below, the conflict truncates what generation 2 wrote (nothing was committed).
    const from0 = [0, 1, 2, 3].map((i) =>
      encodeCacheRecord({ op: 'put', key: 'k', expiresAtMillis: 0, value: UTF8.encode(`n${i}`) }),
    );
    const answer = answerOf(
      await replicas.handle(recordsFrame(2, at3, tail - 1, from0.slice(2), 'cache')),
    );
    const settled =
      answer.kind === 'ReplicateError' && answer.code === INTERNAL_ERROR.LogGap
        ? answerOf(
            await replicas.handle(
              recordsFrame(
                3,
                at3,
                answer.expectedOffset,
                from0.slice(answer.expectedOffset),
                'cache',
              ),
            ),
          )
        : answer;
    expect(settled).toMatchObject({ kind: 'ReplicateOk', durableOffset: 4 });
    await replicas.release(REF, 'cache');
    riding.admit(ID, 'cache');
    expect(new TextDecoder().decode(await (await caches.cache(CACHE, 0)).get('k'))).toBe('n3');
  });
});
