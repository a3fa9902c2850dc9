/**
 * Goal: a follower of a log riding with a shard (cache, counters, group cursors, dead letters)
 * drops what its leader's compaction dropped, and only once it holds every entry that
 * compaction restated at the tail, so its copy stays bounded and still replays to the leader's
 * values; a follower that does not know the trim message is not asked again.
 * Method: ShardShippers over real leader projections (LogCache, CounterLog) compacting their
 * own logs, followers that are ReplicaServers over real logs in temp dirs, links that record
 * or hold what they carry, and trim frames sent to a ReplicaServer directly.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CounterLog,
  LogCache,
  type LogOptions,
  ReplicaFile,
  SegmentLog,
  SegmentLogPort,
  decodeCursor,
  encodeCursor,
  nodeIo,
  shardDirName,
} from '@felix/storage';
import { tempDir, waitFor } from '@felix/testing-harness';
import { INTERNAL_ERROR, encodeInternalMessage } from '@felix/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { recordsFrame, trimFrame } from '../src/frames.js';
import { ReplicaServer } from '../src/follower/replica-server.js';
import type { ReplicaLogKind } from '../src/log-kind.js';
import { type PeerLink, ShardShipper } from '../src/leader/shard-shipper.js';
import { SHARD, decodeFrame, shardRef } from './support/sim.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function root(): Promise<string> {
  const dir = await tempDir('felix-riding-trim-');
  cleanups.push(dir.cleanup);
  return dir.path;
}

const utf8 = new TextEncoder();
const text = (b: Uint8Array | undefined) =>
  b === undefined ? undefined : new TextDecoder().decode(b);
/** Values long enough that a few rounds of writes fill several 4 KiB segments. */
const filler = 'v'.repeat(100);

function logOptions(dir: string, log: ReplicaLogKind, segmentBytes = 4096): LogOptions {
  return { root: join(dir, log), shard: SHARD, fsync: 'onCommit', segmentBytes };
}

/** A follower of every log of the test shard at generation 1. */
function follower(
  dir: string,
  extra: { floorAtCommit?: boolean; segmentBytes?: number } = {},
): ReplicaServer {
  const server = new ReplicaServer({
    logOptions: (_s, log) => logOptions(dir, log, extra.segmentBytes),
    assignment: () => ({ generation: 1 }),
    retentionStopsAtCommit: () => extra.floorAtCommit ?? false,
  });
  cleanups.push(() => server.close());
  return server;
}

/** How many segment files the follower's copy of `log` has. */
async function segments(dir: string, log: ReplicaLogKind): Promise<number> {
  const names = await readdir(join(dir, log, shardDirName(SHARD)));
  return names.filter((n) => n.endsWith('.log')).length;
}

/** A link straight into `server` that records the bases of the trims the server answered. */
class RecordingLink implements PeerLink {
  readonly trims: number[] = [];
  constructor(private readonly server: ReplicaServer) {}
  async request(frame: Uint8Array): Promise<Uint8Array> {
    const answer = await this.server.handle(frame);
    const m = decodeFrame(frame);
    if (m.kind === 'ReplicateTrim') this.trims.push(m.baseOffset);
    return answer;
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

async function leaderCache(kind: ReplicaLogKind): Promise<{ cache: LogCache; log: SegmentLog }> {
  const port = await SegmentLogPort.open(logOptions(await root(), kind));
  const cache = await LogCache.open({ log: port, compaction: { auto: false } });
  cleanups.push(() => cache.close());
  return { cache, log: port.segmentLog };
}

/** Every key written `rounds` times: most records are dead when a pass runs. */
async function writeRounds(cache: LogCache, rounds: number, tag = 'r'): Promise<void> {
  for (let round = 0; round < rounds; round++)
    for (let k = 0; k < 40; k++) await cache.put(`k${k}`, utf8.encode(`${tag}${round}-${filler}`));
}

async function readAll(log: SegmentLog): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  let at = log.baseOffset;
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

const baseOf = (server: ReplicaServer, log: ReplicaLogKind) =>
  server.status(shardRef(1), log)?.base ?? 0;

describe('a follower trims the logs riding with its shard', () => {
  it('a_follower_trims_a_riding_log_below_the_leaders_base_once_it_holds_the_restated_entries', async () => {
    const { cache, log } = await leaderCache('cache');
    const dir = await root();
    const server = follower(dir);
    const link = new RecordingLink(server);
    const shipping = shipper(log, 'cache', link);
    await writeRounds(cache, 6);
    await cache.delete('k7');
    await waitFor(() => shipping.confirmed('f') === log.tailOffset, 'the follower', 10_000);
    const before = await segments(dir, 'cache');
    expect(before).toBeGreaterThan(3);
    expect((await cache.compact()).trimmed).toBe(true);
    const base = log.baseOffset;
    expect(base).toBeGreaterThan(0);
    // The pass deletes segments one by one: a trim may name a base on the way, then this one.
    await waitFor(() => link.trims.includes(base), 'the leader to tell its base', 10_000);
    // Whole segments of its own below the leader's base, and nothing it holds past it.
    expect(baseOf(server, 'cache')).toBeGreaterThan(0);
    expect(baseOf(server, 'cache')).toBeLessThanOrEqual(base);
    expect(await segments(dir, 'cache')).toBeLessThan(before);
    await cache.put('after', utf8.encode('the trim'));
    await waitFor(() => shipping.confirmed('f') === log.tailOffset, 'the last put', 10_000);
    await shipping.stop();
    const copy = await followerCopy(server, dir, 'cache');
    expect(copy.payloads.slice(base - copy.base)).toEqual(await readAll(log));
    const replica = await LogCache.open({
      log: await SegmentLogPort.open(logOptions(dir, 'cache')),
      compaction: { auto: false },
    });
    try {
      for (let k = 0; k < 40; k++)
        expect(text(await replica.get(`k${k}`))).toBe(text(await cache.get(`k${k}`)));
      expect(await replica.get('k7')).toBeUndefined();
      expect(text(await replica.get('after'))).toBe('the trim');
    } finally {
      await replica.close();
    }
  });

  it('a_followers_trimmed_group_cursor_and_counter_logs_replay_to_the_leaders_positions_and_sums', async () => {
    const { cache: groups, log: groupLog } = await leaderCache('groupCursors');
    const counterPort = await SegmentLogPort.open(logOptions(await root(), 'counters'));
    const counters = await CounterLog.open({ log: counterPort, compaction: { auto: false } });
    cleanups.push(() => counters.close());
    const counterLog = counterPort.segmentLog;
    const dir = await root();
    const server = follower(dir);
    const link = new RecordingLink(server);
    const shipGroups = shipper(groupLog, 'groupCursors', link);
    const shipCounters = shipper(counterLog, 'counters', link);
    // A cursor write per acked record, as a consumer group's log sees them.
    for (let at = 0; at < 300; at++) await groups.put(`g${at % 12}`, encodeCursor(at));
    await groups.delete('g3');
    for (let i = 0; i < 400; i++) await counters.add(`c${i % 9}`, BigInt(i % 7) - 3n);
    const caughtUp = () =>
      shipGroups.confirmed('f') === groupLog.tailOffset &&
      shipCounters.confirmed('f') === counterLog.tailOffset;
    await waitFor(caughtUp, 'both logs shipped', 10_000);
    expect((await groups.compact()).trimmed).toBe(true);
    expect((await counters.compact()).trimmed).toBe(true);
    await waitFor(
      () => baseOf(server, 'groupCursors') > 0 && baseOf(server, 'counters') > 0,
      'both follower logs trimmed',
      10_000,
    );
    // Writes after the trim replay on top of the restated entries.
    await groups.put('g0', encodeCursor(1_000));
    await counters.add('c0', 5n);
    await waitFor(caughtUp, 'the writes after the trim', 10_000);
    await shipGroups.stop();
    await shipCounters.stop();
    await server.release(shardRef(1), 'groupCursors');
    await server.release(shardRef(1), 'counters');
    const groupCopy = await LogCache.open({
      log: await SegmentLogPort.open(logOptions(dir, 'groupCursors')),
      compaction: { auto: false },
    });
    const counterCopy = await CounterLog.open({
      log: await SegmentLogPort.open(logOptions(dir, 'counters')),
      compaction: { auto: false },
    });
    try {
      for (let g = 0; g < 12; g++) {
        const [mine, leaders] = [await groupCopy.get(`g${g}`), await groups.get(`g${g}`)];
        expect(mine && decodeCursor(mine), `g${g}`).toEqual(leaders && decodeCursor(leaders));
      }
      expect(await groupCopy.get('g3')).toBeUndefined();
      for (let c = 0; c < 9; c++)
        expect(await counterCopy.get(`c${c}`), `c${c}`).toBe(await counters.get(`c${c}`));
    } finally {
      await groupCopy.close();
      await counterCopy.close();
    }
  });

  it('a_trim_seals_a_followers_active_segment_holding_dropped_records_so_the_next_trim_takes_it', async () => {
    const { cache, log } = await leaderCache('cache');
    const dir = await root();
    // Segments far larger than the log: the follower's copy is one active segment that never
    // rolls on its own, so without a seal nothing of it could ever be trimmed.
    const server = follower(dir, { segmentBytes: 1 << 20 });
    const link = new RecordingLink(server);
    const shipping = shipper(log, 'cache', link);
    await writeRounds(cache, 6);
    expect((await cache.compact()).trimmed).toBe(true);
    const first = log.baseOffset;
    await waitFor(() => link.trims.includes(first), 'the first base told', 10_000);
    const sealedAt = server.status(shardRef(1), 'cache')!.tail;
    expect(await segments(dir, 'cache')).toBe(2);
    expect(baseOf(server, 'cache')).toBe(0);
    await writeRounds(cache, 6, 'again');
    expect((await cache.compact()).trimmed).toBe(true);
    const second = log.baseOffset;
    await waitFor(() => link.trims.includes(second), 'the second base told', 10_000);
    // The segment sealed at the first trim ended below the second base: it went whole.
    expect(baseOf(server, 'cache')).toBe(sealedAt);
    await waitFor(() => shipping.confirmed('f') === log.tailOffset, 'the follower', 10_000);
    await shipping.stop();
    const copy = await followerCopy(server, dir, 'cache');
    expect(copy.payloads.slice(second - copy.base)).toEqual(await readAll(log));
  });

  it('a_follower_keeps_its_riding_log_until_it_holds_what_the_leaders_compaction_restated', async () => {
    const { cache, log } = await leaderCache('cache');
    const dir = await root();
    const server = follower(dir);
    let holding = false;
    const sent: string[] = [];
    const link: PeerLink = {
      request: (frame) => {
        const kind = decodeFrame(frame).kind;
        sent.push(kind);
        // The follower cannot be reached for records: the restated entries do not arrive.
        if (holding && kind === 'ReplicateCacheRecords') return Promise.reject(new Error('held'));
        return server.handle(frame);
      },
    };
    const shipping = shipper(log, 'cache', link);
    await writeRounds(cache, 6);
    await waitFor(() => shipping.confirmed('f') === log.tailOffset, 'the follower', 10_000);
    const held = log.tailOffset;
    holding = true;
    expect((await cache.compact()).trimmed).toBe(true);
    expect(log.baseOffset).toBeGreaterThan(0);
    // The loop looks at the base before each attempt: three attempts at the restated entries
    // go by after the base rose, the follower short of them each time.
    const from = sent.length;
    const attempts = () => sent.slice(from).filter((k) => k === 'ReplicateCacheRecords').length;
    await waitFor(() => attempts() >= 3, 'three attempts at the copies', 10_000);
    expect(sent).not.toContain('ReplicateTrim');
    expect(server.status(shardRef(1), 'cache')).toMatchObject({ base: 0, tail: held });
    holding = false;
    await waitFor(() => baseOf(server, 'cache') > 0, 'the trim once it holds them', 10_000);
    expect(server.status(shardRef(1), 'cache')?.tail).toBe(log.tailOffset);
  });

  it('a_follower_that_does_not_know_trims_is_not_asked_again', async () => {
    const { cache, log } = await leaderCache('cache');
    const server = follower(await root());
    const trims: number[] = [];
    const link: PeerLink = {
      request: (frame) => {
        const m = decodeFrame(frame);
        if (m.kind !== 'ReplicateTrim') return server.handle(frame);
        trims.push(m.baseOffset);
        // An older build decodes kind 40 as Unknown and answers it so.
        return Promise.resolve(
          encodeInternalMessage({
            kind: 'ReplicateError',
            correlationId: m.correlationId,
            code: INTERNAL_ERROR.UnsupportedKind,
            expectedOffset: 0,
            detail: 'Unknown is not served',
          }),
        );
      },
    };
    const shipping = shipper(log, 'cache', link);
    const caughtUp = () => shipping.confirmed('f') === log.tailOffset;
    await writeRounds(cache, 6);
    expect((await cache.compact()).trimmed).toBe(true);
    const first = log.baseOffset;
    await waitFor(() => trims.length === 1, 'the first trim', 10_000);
    await writeRounds(cache, 6, 'again');
    expect((await cache.compact()).trimmed).toBe(true);
    expect(log.baseOffset).toBeGreaterThan(first);
    // Each plan is preceded by a look at the trims: by the batch of the second put the follower
    // holds the log's end as it was when the new base was seen, so a trim would be due.
    await cache.put('x', utf8.encode('1'));
    await waitFor(caughtUp, 'the first put', 10_000);
    await cache.put('y', utf8.encode('2'));
    await waitFor(caughtUp, 'the second put', 10_000);
    // One trim only (it may name a base the pass passed on its way: segments go one by one).
    expect(trims).toHaveLength(1);
    expect(trims[0]).toBeLessThanOrEqual(first);
    expect(baseOf(server, 'cache')).toBe(0);
  });

  it('a_trim_deletes_only_whole_sealed_segments_below_the_base_and_only_for_the_current_leader', async () => {
    const dir = await root();
    const server = follower(dir);
    const ask = async (generation: number, base: number, log: ReplicaLogKind = 'cache') =>
      decodeFrame(await server.handle(trimFrame(9, shardRef(generation), log, base)));
    for (let first = 0; first < 300; first += 50) {
      const payloads = Array.from({ length: 50 }, (_, i) => utf8.encode(`${first + i}${filler}`));
      const frame = recordsFrame(first + 1, shardRef(1), first, payloads, 'cache');
      expect(decodeFrame(await server.handle(frame))).toMatchObject({ kind: 'ReplicateOk' });
    }
    const before = await segments(dir, 'cache');
    expect(before).toBeGreaterThan(3);
    expect(await ask(1, 120)).toMatchObject({ kind: 'ReplicateOk', durableOffset: 300 });
    const partial = baseOf(server, 'cache');
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThanOrEqual(120);
    // A deposed leader, and one this follower has had no batch from, trim nothing.
    expect(await ask(0, 1_000)).toMatchObject({ code: INTERNAL_ERROR.FencedEpoch });
    expect(await ask(2, 1_000)).toMatchObject({ code: INTERNAL_ERROR.StaleRoute });
    expect(baseOf(server, 'cache')).toBe(partial);
    // A stream's copy takes its own retention: its leader does not trim it.
    expect(await ask(1, 1_000, 'stream')).toMatchObject({
      code: INTERNAL_ERROR.UnsupportedKind,
    });
    // Past everything it holds: every sealed segment goes; the active one stays, sealed since it
    // holds records below the cut (its own durable end), so the next trim can take it.
    expect(await ask(1, 1_000)).toMatchObject({ kind: 'ReplicateOk', durableOffset: 300 });
    expect(await segments(dir, 'cache')).toBe(2);
    expect(baseOf(server, 'cache')).toBeLessThan(300);
    expect(server.status(shardRef(1), 'cache')).toMatchObject({ tail: 300 });
    const copy = await followerCopy(server, dir, 'cache');
    expect(text(copy.payloads.at(-1))).toBe(`299${filler}`);
  });

  it('a_trim_never_deletes_at_or_above_the_commit_offset_a_follower_floors_its_copy_at', async () => {
    const dir = await root();
    const plain = follower(dir);
    for (let first = 0; first < 300; first += 50) {
      const payloads = Array.from({ length: 50 }, (_, i) => utf8.encode(`${first + i}${filler}`));
      await plain.handle(recordsFrame(first + 1, shardRef(1), first, payloads, 'cache'));
    }
    await plain.close();
    // The copy knows a commit offset of 60 (saved earlier) and floors its retention at it.
    const replica = await ReplicaFile.open(nodeIo, join(dir, 'cache', shardDirName(SHARD)));
    await replica.advanceCommit(60);
    const floored = follower(dir, { floorAtCommit: true });
    const answer = decodeFrame(await floored.handle(trimFrame(9, shardRef(1), 'cache', 1_000)));
    expect(answer).toMatchObject({ kind: 'ReplicateOk', durableOffset: 300 });
    const base = baseOf(floored, 'cache');
    expect(base).toBeGreaterThan(0);
    expect(base).toBeLessThanOrEqual(60);
  });
});
