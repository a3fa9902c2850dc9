/**
 * Goal: every log that rides with a shard ships under its own kinds to its own follower log:
 * the replica server routes each kind to the directory of its log, accepts a log only where
 * this broker follows the log's owning shard (the stream shard for group cursors and dead
 * letters, the cache shard for counters), and a compacted cache log ships by offset, so a
 * follower holds the leader's records at the leader's offsets and replays to the same values;
 * a group delete's batch of dead-letter removals reaches a follower as the leader's records.
 * Method: ShardShippers over real leader logs (one per kind, and a LogCache compacting its
 * own), followers that are ReplicaServers over real logs in temp dirs, links that record the
 * kinds they carry.
 */
import { readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import {
  LogCache,
  type LogOptions,
  SegmentLog,
  SegmentLogPort,
  openDeadLetterStore,
} from '@felix/storage';
import { tempDir, waitFor } from '@felix/testing-harness';
import {
  INTERNAL_ERROR,
  type InternalMessage,
  batchChecksum,
  encodeInternalMessage,
} from '@felix/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { ReplicaServer } from '../src/follower/replica-server.js';
import { REPLICA_LOGS, REPLICA_LOG_KINDS, type ReplicaLogKind } from '../src/log-kind.js';
import { RebuildSlots } from '../src/leader/rebuild-slots.js';
import { ShardShipper, type PeerLink } from '../src/leader/shard-shipper.js';
import { SHARD, decodeFrame, shardRef } from './support/sim.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function root(): Promise<string> {
  const dir = await tempDir('felix-log-kinds-');
  cleanups.push(dir.cleanup);
  return dir.path;
}

const utf8 = new TextEncoder();
const text = (b: Uint8Array | undefined) =>
  b === undefined ? undefined : new TextDecoder().decode(b);

/** Counts the rebuilds that found every slot taken. */
class CountingSlots extends RebuildSlots {
  refusals = 0;
  override take(): (() => void) | null {
    const release = super.take();
    if (release === null) this.refusals++;
    return release;
  }
}

/** A follower whose logs live under `<root>/<kind>`, following the shards `follows` names. */
function follower(dir: string, follows: (log: ReplicaLogKind) => boolean): ReplicaServer {
  const server = new ReplicaServer({
    logOptions: (s, log) => logOptions(dir, log, s.shard),
    assignment: (_s, log) =>
      follows(log) ? { generation: 1 } : { generation: 1, follower: false },
  });
  cleanups.push(() => server.close());
  return server;
}

function logOptions(dir: string, log: ReplicaLogKind, shard = SHARD.shard): LogOptions {
  return { root: join(dir, log), shard: { ...SHARD, shard }, fsync: 'onCommit' };
}

/** A link straight into `server` that records the kind of each frame it carries. */
class RecordingLink implements PeerLink {
  readonly kinds = new Set<string>();
  constructor(private readonly server: ReplicaServer) {}
  request(frame: Uint8Array): Promise<Uint8Array> {
    this.kinds.add(decodeFrame(frame).kind);
    return this.server.handle(frame);
  }
}

async function readAll(log: SegmentLog, from = log.baseOffset): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  let at = from;
  while (at < log.tailOffset) {
    const r = await log.read(at);
    if (r.kind !== 'records') throw new Error(`trimmed at ${at}`);
    for (const rec of r.records) out.push(rec.payload.slice());
    at = r.next;
  }
  return out;
}

/** The follower's copy of `log`, read after the server released it. */
async function followerCopy(
  server: ReplicaServer,
  dir: string,
  log: ReplicaLogKind,
): Promise<{ base: number; payloads: Uint8Array[] }> {
  await server.release(shardRef(1), log);
  const copy = await SegmentLog.open(logOptions(dir, log));
  try {
    return { base: copy.baseOffset, payloads: await readAll(copy) };
  } finally {
    await copy.close();
  }
}

function shipper(log: SegmentLog, kind: ReplicaLogKind, link: PeerLink): ShardShipper {
  const s = new ShardShipper({
    log,
    shard: shardRef(1),
    logKind: kind,
    followers: [{ nodeId: 'f', link, start: Math.max(log.baseOffset, log.tailOffset - 1) }],
  });
  cleanups.push(() => s.stop());
  return s;
}

function request(kind: InternalMessage['kind'], payloads: Uint8Array[]): Uint8Array {
  const base = { correlationId: 3, shard: shardRef(1) };
  if (kind.endsWith('Bootstrap'))
    return encodeInternalMessage({ ...base, kind, baseOffset: 0 } as InternalMessage);
  const checksum = batchChecksum(payloads);
  return encodeInternalMessage({
    ...base,
    kind,
    firstOffset: 0,
    checksum,
    payloads,
  } as InternalMessage);
}

describe('the logs riding with a shard', () => {
  it('each_log_of_a_shard_ships_under_its_own_kind_to_its_own_follower_log', async () => {
    const leaderDir = await root();
    const followerDir = await root();
    const server = follower(followerDir, () => true);
    const link = new RecordingLink(server);
    const leaders = new Map<ReplicaLogKind, SegmentLog>();
    for (const kind of REPLICA_LOG_KINDS) {
      const log = await SegmentLog.open(logOptions(leaderDir, kind));
      cleanups.push(() => log.close());
      // Each log its own length and contents, so a misrouted batch cannot pass for another's.
      const count = 5 + REPLICA_LOG_KINDS.indexOf(kind) * 7;
      await log.append(Array.from({ length: count }, (_, i) => utf8.encode(`${kind}-${i}`)));
      leaders.set(kind, log);
    }
    const shippers = REPLICA_LOG_KINDS.map((k) => shipper(leaders.get(k)!, k, link));
    await waitFor(
      () =>
        REPLICA_LOG_KINDS.every(
          (k, i) => shippers[i]!.confirmed('f') === leaders.get(k)!.tailOffset,
        ),
      'every log confirmed by the follower',
      10_000,
    );
    for (const s of shippers) await s.stop();
    for (const kind of REPLICA_LOG_KINDS) {
      const copy = await followerCopy(server, followerDir, kind);
      expect(copy.payloads.map(text)).toEqual((await readAll(leaders.get(kind)!)).map(text));
    }
    const records = REPLICA_LOG_KINDS.map((k) => REPLICA_LOGS[k].records);
    expect([...link.kinds].sort()).toEqual([...records].sort());
  });

  it('a_follower_accepts_a_log_only_where_it_follows_the_shard_owning_that_log', async () => {
    const dir = await root();
    // This broker follows the stream shard (so its group state) but not the cache shard of the
    // same name (so neither its cache log nor its counters).
    const server = follower(dir, (log) => REPLICA_LOGS[log].owner === 'stream');
    const one = [utf8.encode('x')];
    for (const kind of REPLICA_LOG_KINDS) {
      for (const message of [REPLICA_LOGS[kind].records, REPLICA_LOGS[kind].bootstrap]) {
        const answer = decodeFrame(await server.handle(request(message, one)));
        if (REPLICA_LOGS[kind].owner === 'stream') {
          expect(answer, `${message}`).toMatchObject({ kind: 'ReplicateOk' });
          expect(server.status(shardRef(1), kind)).toBeDefined();
        } else {
          expect(answer, `${message}`).toMatchObject({
            kind: 'ReplicateError',
            code: INTERNAL_ERROR.Unauthorized,
          });
          expect(server.status(shardRef(1), kind)).toBeUndefined();
        }
      }
    }
    // Nothing was opened for the refused logs: their directories were never made.
    expect((await readdir(dir)).sort()).toEqual(['deadLetters', 'groupCursors', 'stream']);
  });

  it('a_kind_that_ships_no_log_is_refused_as_unsupported', async () => {
    const server = follower(await root(), () => true);
    // An answer kind sent as a request (a rebuild, once the example here, is served now).
    const answer = encodeInternalMessage({ kind: 'ForwardCacheOk', correlationId: 8 });
    expect(decodeFrame(await server.handle(answer))).toMatchObject({
      kind: 'ReplicateError',
      correlationId: 8,
      code: INTERNAL_ERROR.UnsupportedKind,
    });
  });

  it('a_bootstrap_of_one_log_leaves_the_other_logs_of_the_shard_alone', async () => {
    const dir = await root();
    const server = follower(dir, () => true);
    const stream = decodeFrame(
      await server.handle(request('ReplicateRecords', [utf8.encode('s')])),
    );
    expect(stream).toMatchObject({ kind: 'ReplicateOk', durableOffset: 1 });
    const offer = encodeInternalMessage({
      kind: 'ReplicateCacheBootstrap',
      correlationId: 4,
      shard: shardRef(1),
      baseOffset: 40,
    });
    expect(decodeFrame(await server.handle(offer))).toMatchObject({
      kind: 'ReplicateOk',
      durableOffset: 40,
    });
    expect(server.status(shardRef(1), 'cache')).toMatchObject({ base: 40, tail: 40 });
    expect(server.status(shardRef(1), 'stream')).toMatchObject({ base: 0, tail: 1 });
  });

  it('a_follower_of_a_compacted_cache_log_holds_the_leaders_records_at_the_leaders_offsets', async () => {
    const leaderDir = await root();
    const port = await SegmentLogPort.open({
      ...logOptions(leaderDir, 'cache'),
      segmentBytes: 4096,
    });
    const cache = await LogCache.open({ log: port, compaction: { auto: false } });
    cleanups.push(() => cache.close());
    const log = port.segmentLog;
    const earlyDir = await root();
    const early = follower(earlyDir, () => true);
    const shipping = shipper(log, 'cache', new RecordingLink(early));
    // Every key written several times: most records are dead when the pass runs.
    for (let round = 0; round < 6; round++)
      for (let k = 0; k < 40; k++) await cache.put(`k${k}`, utf8.encode(`r${round}-${k}`));
    await cache.delete('k7');
    await waitFor(() => shipping.confirmed('f') === log.tailOffset, 'the early follower', 10_000);
    const pass = await cache.compact();
    expect(pass.trimmed).toBe(true);
    expect(log.baseOffset).toBeGreaterThan(0);
    await cache.put('after', utf8.encode('compaction'));
    await waitFor(() => shipping.confirmed('f') === log.tailOffset, 'the copies shipped', 10_000);
    await shipping.stop();
    const leaderRecords = await readAll(log);
    // Shipped before and after the pass: the follower holds the leader's log at the leader's
    // offsets, byte-identical from the leader's new base on; below it, it holds what it has not
    // trimmed yet (riding-trim.test.ts: it trims once told the base, by whole segments of its own).
    const earlyCopy = await followerCopy(early, earlyDir, 'cache');
    expect(earlyCopy.base).toBeLessThanOrEqual(log.baseOffset);
    expect(earlyCopy.payloads.slice(log.baseOffset - earlyCopy.base)).toEqual(leaderRecords);
    // A follower that joins after the pass is offered the leader's base and holds exactly its log.
    const lateDir = await root();
    const late = follower(lateDir, () => true);
    const joining = shipper(log, 'cache', new RecordingLink(late));
    await waitFor(() => joining.confirmed('f') === log.tailOffset, 'the late follower', 10_000);
    await joining.stop();
    const lateCopy = await followerCopy(late, lateDir, 'cache');
    expect(lateCopy.base).toBe(log.baseOffset);
    expect(lateCopy.payloads).toEqual(leaderRecords);
    // Either copy, opened as a cache, replays to the leader's values.
    for (const dir of [earlyDir, lateDir]) {
      const replica = await LogCache.open({
        log: await SegmentLogPort.open(logOptions(dir, 'cache')),
        compaction: { auto: false },
      });
      for (let k = 0; k < 40; k++)
        expect(text(await replica.get(`k${k}`))).toBe(text(await cache.get(`k${k}`)));
      expect(await replica.get('k7')).toBeUndefined();
      expect(text(await replica.get('after'))).toBe('compaction');
      await replica.close();
    }
  });

  it('a_cache_follower_behind_a_compaction_cut_is_halted_and_keeps_its_records', async () => {
    const port = await SegmentLogPort.open({
      ...logOptions(await root(), 'cache'),
      segmentBytes: 4096,
    });
    const cache = await LogCache.open({ log: port, compaction: { auto: false } });
    cleanups.push(() => cache.close());
    const log = port.segmentLog;
    const dir = await root();
    const server = follower(dir, () => true);
    for (let k = 0; k < 40; k++) await cache.put(`k${k}`, utf8.encode(`first-${k}`));
    const first = shipper(log, 'cache', new RecordingLink(server));
    await waitFor(() => first.confirmed('f') === log.tailOffset, 'the follower', 10_000);
    await first.stop();
    const held = log.tailOffset;
    // Unreachable while the leader writes on and compacts past everything it holds.
    for (let round = 0; round < 6; round++)
      for (let k = 0; k < 40; k++) await cache.put(`k${k}`, utf8.encode(`r${round}-${k}`));
    expect((await cache.compact()).trimmed).toBe(true);
    expect(log.baseOffset).toBeGreaterThan(held);
    const stops: string[] = [];
    const again = new ShardShipper({
      log,
      shard: shardRef(1),
      logKind: 'cache',
      followers: [{ nodeId: 'f', link: new RecordingLink(server), start: log.tailOffset - 1 }],
      onStopped: (_id, reason) => stops.push(reason),
    });
    cleanups.push(() => again.stop());
    await waitFor(() => stops.length > 0, 'the cursor to halt', 10_000);
    expect(stops).toEqual(['needs_bootstrap']);
    const copy = await followerCopy(server, dir, 'cache');
    expect(copy.base).toBe(0);
    expect(copy.payloads.length).toBe(held);
  });

  it('a_cache_follower_behind_a_compaction_cut_is_rebuilt_at_the_base_and_replays_the_leaders_values', async () => {
    const port = await SegmentLogPort.open({
      ...logOptions(await root(), 'cache'),
      segmentBytes: 4096,
    });
    const cache = await LogCache.open({ log: port, compaction: { auto: false } });
    cleanups.push(() => cache.close());
    const log = port.segmentLog;
    const dir = await root();
    const server = follower(dir, () => true);
    for (let k = 0; k < 40; k++) await cache.put(`k${k}`, utf8.encode(`first-${k}`));
    const first = shipper(log, 'cache', new RecordingLink(server));
    await waitFor(() => first.confirmed('f') === log.tailOffset, 'the follower', 10_000);
    await first.stop();
    for (let round = 0; round < 6; round++)
      for (let k = 0; k < 40; k++) await cache.put(`k${k}`, utf8.encode(`r${round}-${k}`));
    await cache.delete('k7');
    expect((await cache.compact()).trimmed).toBe(true);
    const events: string[] = [];
    const slots = new RebuildSlots();
    const link = new RecordingLink(server);
    const again = new ShardShipper({
      log,
      shard: shardRef(1),
      logKind: 'cache',
      followers: [{ nodeId: 'f', link, start: log.tailOffset - 1 }],
      rebuild: { slots, afterMs: 20 },
      onStopped: (_id, reason) => events.push(reason),
      onRebuilt: (_id, offset) => events.push(`rebuilt at ${offset}`),
    });
    cleanups.push(() => again.stop());
    await waitFor(() => again.confirmed('f') === log.tailOffset, 'the rebuilt follower', 10_000);
    expect(events).toEqual(['needs_bootstrap', `rebuilt at ${log.baseOffset}`]);
    expect(link.kinds.has('ReplicateRebuild')).toBe(true);
    expect(slots.running).toBe(0);
    expect(again.caughtUpAtMs('f')).toBeDefined();
    await again.stop();
    const copy = await followerCopy(server, dir, 'cache');
    expect(copy.base).toBe(log.baseOffset);
    const replica = await LogCache.open({
      log: await SegmentLogPort.open(logOptions(dir, 'cache')),
      compaction: { auto: false },
    });
    for (let k = 0; k < 40; k++)
      expect(text(await replica.get(`k${k}`))).toBe(text(await cache.get(`k${k}`)));
    expect(await replica.get('k7')).toBeUndefined();
    await replica.close();
  });

  it('a_rebuild_waits_for_a_free_slot_and_one_that_fails_is_tried_again', async () => {
    const leaderLog = await SegmentLog.open({
      ...logOptions(await root(), 'stream'),
      segmentBytes: 4096,
    });
    cleanups.push(() => leaderLog.close());
    const dir = await root();
    const server = follower(dir, () => true);
    // The follower's copy: records 0..9 of an older history, all below the base to come.
    const held = await SegmentLog.open(logOptions(dir, 'stream'));
    await held.append(Array.from({ length: 10 }, (_, i) => utf8.encode(`old-${i}`)));
    await held.close();
    for (let i = 0; i < 400; i++) await leaderLog.append([utf8.encode(`r${i}`.padEnd(64, '.'))]);
    await leaderLog.trimBelow(200);
    expect(leaderLog.baseOffset).toBeGreaterThan(10);
    const slots = new CountingSlots(1);
    const busy = slots.take()!; // another shard's rebuild holds the broker's one slot
    let refuseRebuilds = 1;
    const sent: string[] = [];
    const link: PeerLink = {
      request: (frame) => {
        const kind = decodeFrame(frame).kind;
        sent.push(kind);
        if (kind === 'ReplicateRebuild' && refuseRebuilds-- > 0)
          return Promise.reject(new Error('link down'));
        return server.handle(frame);
      },
    };
    const rebuilt: number[] = [];
    const s = new ShardShipper({
      log: leaderLog,
      shard: shardRef(1),
      followers: [{ nodeId: 'f', link, start: 10 }],
      rebuild: { slots, afterMs: 10 },
      onRebuilt: (_id, offset) => rebuilt.push(offset),
    });
    cleanups.push(() => s.stop());
    // Halted, due for a rebuild, and refused a slot: no rebuild went.
    await waitFor(() => slots.refusals > 0, 'a rebuild to find the slot taken', 10_000);
    expect(sent).toContain('ReplicateBootstrap');
    expect(sent).not.toContain('ReplicateRebuild');
    busy();
    await waitFor(() => rebuilt.length === 1, 'the rebuild after one failure', 10_000);
    expect(sent.filter((k) => k === 'ReplicateRebuild').length).toBe(2);
    expect(rebuilt).toEqual([leaderLog.baseOffset]);
    await waitFor(() => s.confirmed('f') === leaderLog.tailOffset, 'the catch-up', 10_000);
  });

  it('a_stalled_group_log_never_holds_up_its_shards_stream_records', async () => {
    const leaderDir = await root();
    const server = follower(await root(), () => true);
    // One link for the shard's logs, as in the broker: group-cursor batches get no answer.
    const link: PeerLink = {
      request: (frame, timeoutMs) =>
        decodeFrame(frame).kind === REPLICA_LOGS.groupCursors.records
          ? new Promise((_, reject) => setTimeout(() => reject(new Error('no answer')), timeoutMs))
          : server.handle(frame),
    };
    const logs = new Map<ReplicaLogKind, SegmentLog>();
    const shippers: ShardShipper[] = [];
    for (const kind of ['stream', 'groupCursors'] as const) {
      const log = await SegmentLog.open(logOptions(leaderDir, kind));
      cleanups.push(() => log.close());
      logs.set(kind, log);
      const s = new ShardShipper({
        log,
        shard: shardRef(1),
        logKind: kind,
        answerTimeoutMs: 50,
        followers: [{ nodeId: 'f', link, start: 0 }],
      });
      cleanups.push(() => s.stop());
      shippers.push(s);
    }
    const [stream, groups] = shippers as [ShardShipper, ShardShipper];
    await logs.get('groupCursors')!.append([utf8.encode('cursor')]);
    for (let i = 0; i < 200; i++) await logs.get('stream')!.append([utf8.encode(`r${i}`)]);
    await waitFor(() => stream.confirmed('f') === 200, 'the stream records confirmed', 10_000);
    expect(groups.confirmed('f')).toBe(0);
  });

  it('a_group_deletes_batched_dead_letter_removals_reach_a_follower_as_the_leaders_records', async () => {
    const leaderDir = await root();
    const dead = openDeadLetterStore({ root: leaderDir, fsync: 'onCommit' });
    cleanups.push(() => dead.close());
    const offsets = [...Array(40).keys()];
    await Promise.all(offsets.map((o) => dead.record(SHARD, 'g', o)));
    await dead.record(SHARD, 'other', 3);
    expect(await dead.redrive(SHARD, 'g', 5)).toBe(true);
    const log = await dead.log(SHARD);
    const followerDir = await root();
    const server = follower(followerDir, () => true);
    const shipping = shipper(log, 'deadLetters', new RecordingLink(server));
    // The group delete's page: one batch of delete records, shipped as the log's records are.
    expect(await dead.removeLowest(SHARD, 'g', 100)).toBe(40);
    await waitFor(() => shipping.confirmed('f') === log.tailOffset, 'the removal shipped', 10_000);
    await shipping.stop();
    const copy = await followerCopy(server, followerDir, 'deadLetters');
    expect(copy.payloads).toEqual(await readAll(log));
    // The follower's copy, opened where a broker leading the shard keeps it, lists what the
    // leader's does: nothing of the deleted group, the other group's entry.
    await rename(join(followerDir, 'deadLetters'), join(followerDir, 'dead-letters'));
    const promoted = openDeadLetterStore({ root: followerDir });
    cleanups.push(() => promoted.close());
    expect(await promoted.list(SHARD, 'g')).toEqual([]);
    expect(await promoted.list(SHARD, 'other')).toEqual([{ offset: 3, state: 'dead' }]);
  });
});
