/**
 * Goal: a new leader's generation-start record (docs/storage-format.md, flag bit 29, body the
 * u64 generation) is written into a version 4 segment, takes one offset, is skipped by every
 * reader, read back by replication with its flag, survives a reopen, and a follower stores it
 * with its mark and never takes a plain record with the same bytes for it.
 * Method: real segment logs in a scratch directory.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { projectionRoot } from '../src/cache/projection-store.js';
import { FollowerAppender } from '../src/log/follower-append.js';
import { SegmentLog } from '../src/log/segment-log.js';
import { segmentFileName } from '../src/log/layout.js';
import {
  FLAG_GENERATION_START,
  decodeGenerationStartBody,
  encodeGenerationStartBody,
} from '../src/segment/format.js';
import { openLog, payload, scratchRoot, shardDir } from './helpers.js';
import { SHARD, openDiskCache, openDiskCounters, tempDir } from './projection-support/disk.js';

function generationBody(g: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(g));
  return b;
}

describe('generation-start records', () => {
  it('a_generation_start_record_rolls_to_a_version_4_segment_and_only_replication_reads_it', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { fsync: 'onCommit', preallocateBytes: 0 });
    await log.append([payload(0), payload(1)]);
    const gs = await log.appendGenerationStart(7);
    expect(gs).toEqual({ first: 2, next: 3 });
    await log.append([payload(3)]);
    const plain = await log.read(0);
    expect(plain.kind === 'records' && plain.records.map((r) => r.offset)).toEqual([0, 1, 3]);
    const raw = await log.read(0, { includeGenerationStarts: true });
    if (raw.kind !== 'records') throw new Error('trimmed');
    expect(raw.records.map((r) => r.offset)).toEqual([0, 1, 2, 3]);
    expect(raw.records[2]!.flags & FLAG_GENERATION_START).toBe(FLAG_GENERATION_START);
    expect(Buffer.from(raw.records[2]!.payload)).toEqual(Buffer.from(generationBody(7)));
    await log.close();
    // The first segment stays version 3; the record went into a new version 4 segment.
    const second = await readFile(join(shardDir(root), segmentFileName(1)));
    expect(second.readUInt16BE(4)).toBe(4);
    const first = await readFile(join(shardDir(root), segmentFileName(0)));
    expect(first.readUInt16BE(4)).toBe(3);
    const again = await openLog(root);
    expect(again.tailOffset).toBe(4);
    const r = await again.read(2);
    expect(r.kind === 'records' && r.records.map((x) => x.offset)).toEqual([3]);
    await again.close();
  });

  it('a_generation_start_record_after_a_seal_raises_the_empty_active_segment_to_version_4', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { fsync: 'onCommit' });
    await log.append([payload(0)]);
    await log.seal();
    await log.appendGenerationStart(2);
    await log.append([payload(2)]);
    await log.close();
    const active = await readFile(join(shardDir(root), segmentFileName(1)));
    expect(active.readUInt16BE(4)).toBe(4);
    const again = await openLog(root);
    const raw = await again.read(0, { includeGenerationStarts: true });
    expect(raw.kind === 'records' && raw.records.map((r) => r.offset)).toEqual([0, 1, 2]);
    await again.close();
  });

  it('a_follower_stores_a_generation_start_record_with_its_mark_and_a_plain_twin_conflicts', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { fsync: 'onCommit', preallocateBytes: 0 });
    const appender = new FollowerAppender(log);
    const body = generationBody(3);
    const flags = [0, FLAG_GENERATION_START, 0];
    expect(await appender.appendAt(0, [payload(0), body, payload(2)], { flags })).toEqual({
      kind: 'appended',
      tail: 3,
    });
    // A resend with the same marks is compared, not written again.
    expect(await appender.appendAt(0, [payload(0), body, payload(2)], { flags })).toEqual({
      kind: 'appended',
      tail: 3,
    });
    // The same bytes as a plain record are another record.
    expect(await appender.appendAt(1, [body])).toEqual({ kind: 'conflict', at: 1 });
    const raw = await log.read(0, { includeGenerationStarts: true });
    expect(raw.kind === 'records' && raw.records.map((r) => r.flags)).toEqual(flags);
    await log.close();
  });

  it('cache_and_counter_replay_ignore_a_generation_start_record', async () => {
    const dir = await tempDir('felix-genstart-projections-');
    try {
      const first = await openDiskCache(dir.path, { fsync: 'onCommit' });
      await first.cache.put('k', new TextEncoder().encode('v1'));
      await first.cache.close();
      const counters = await openDiskCounters(dir.path, { fsync: 'onCommit' });
      await counters.counters.add('hits', 5n);
      await counters.counters.close();
      // As a leader of those logs would: a generation start in the middle of each.
      for (const kind of ['caches', 'counters'] as const) {
        const log = await SegmentLog.open({ root: projectionRoot(dir.path, kind), shard: SHARD });
        await log.appendGenerationStart(4);
        await log.close();
      }
      const cache = await openDiskCache(dir.path, { fsync: 'onCommit' });
      expect(new TextDecoder().decode(await cache.cache.get('k'))).toBe('v1');
      await cache.cache.put('k', new TextEncoder().encode('v2'));
      expect(new TextDecoder().decode(await cache.cache.get('k'))).toBe('v2');
      await cache.cache.close();
      const again = await openDiskCounters(dir.path, { fsync: 'onCommit' });
      expect(await again.counters.get('hits')).toBe(5n);
      expect(await again.counters.add('hits', 1n)).toBe(6n);
      await again.counters.close();
      const reopened = await openDiskCounters(dir.path);
      expect(await reopened.counters.get('hits')).toBe(6n);
      await reopened.counters.close();
    } finally {
      await dir.cleanup();
    }
  });
});

describe('a generation-start record body', () => {
  it('a_generation_start_body_decodes_its_generation_and_any_other_bytes_to_none_without_throwing', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (g) => {
        expect(decodeGenerationStartBody(encodeGenerationStartBody(g))).toBe(g);
      }),
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 16 }), (bytes) => {
        const g = decodeGenerationStartBody(bytes);
        expect(g === undefined || (bytes.length === 8 && Number.isSafeInteger(g) && g > 0)).toBe(
          true,
        );
      }),
    );
    expect(decodeGenerationStartBody(new Uint8Array(8))).toBeUndefined();
    expect(decodeGenerationStartBody(new Uint8Array(8).fill(0xff))).toBeUndefined();
  });
});
