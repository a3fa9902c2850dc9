/**
 * Goal: the segment log assigns offsets in append order, reads back exactly what was
 * appended within its budgets, group-commits flushes, and fails safely on write and flush
 * errors. Method: real files in a scratch directory, with a FaultyIo where a fault is needed;
 * synchronisation through the log's own promises and `waitFor`, never sleeps.
 */
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@felix/testing-harness';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  CorruptionError,
  LogClosedError,
  LogPoisonedError,
  WriteFailedError,
  WritesRefusedError,
} from '../src/errors.js';
import { DelegatingFile, DelegatingIo } from '../src/io/delegating-io.js';
import { FaultyIo } from '../src/io/faulty-io.js';
import type { IoFile, OpenMode } from '../src/io/io.js';
import { nodeIo } from '../src/io/node-io.js';
import { WRITE_INLINE_BYTES_MAX, WRITE_INLINE_UNSYNCED_BYTES_MAX } from '../src/limits.js';
import { indexFileName, segmentFileName } from '../src/log/layout.js';
import { openLog, payload, readAll, scratchRoot, shardDir, text } from './helpers.js';

describe('SegmentLog', () => {
  it('appended_batches_read_back_in_offset_order_across_segments', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096 });
    const expected: string[] = [];
    for (let b = 0; b < 40; b++) {
      const batch = [payload(b * 3, 100), payload(b * 3 + 1, 10), payload(b * 3 + 2, 300)];
      const { first, next } = await log.append(batch);
      expect(first).toBe(b * 3);
      expect(next).toBe(b * 3 + 3);
      batch.forEach((p, k) => {
        expected.push(`${first + k}:${text(p)}`);
      });
    }
    expect(log.segmentCount).toBeGreaterThan(3);
    expect(log.tailOffset).toBe(120);
    expect(log.durableOffset).toBe(120);
    expect(await readAll(log, undefined, 7)).toEqual(expected);
    expect(await readAll(log, 55, 7)).toEqual(expected.slice(55));
    await log.close();
    const reopened = await openLog(root, { segmentBytes: 4096 });
    expect(reopened.tailOffset).toBe(120);
    expect(reopened.recovered.filter((a) => a.kind !== 'rewriteIndex')).toEqual([]);
    expect(await readAll(reopened, undefined, 7)).toEqual(expected);
    const more = await reopened.append([payload(999)]);
    expect(more.first).toBe(120);
    await reopened.close();
  });

  it('a_read_returns_at_least_one_record_within_its_budgets', async () => {
    const root = await scratchRoot();
    const log = await openLog(root);
    await log.append([payload(0, 1000), payload(1, 1000), payload(2, 1000), payload(3, 1000)]);
    const one = await log.read(0, { maxBytes: 10 });
    expect(one.kind === 'records' && one.records.map((r) => r.offset)).toEqual([0]);
    expect(one.kind === 'records' && one.next).toBe(1);
    const two = await log.read(1, { maxBytes: 2000 });
    expect(two.kind === 'records' && two.records.map((r) => r.offset)).toEqual([1, 2]);
    const capped = await log.read(0, { maxRecords: 3 });
    expect(capped.kind === 'records' && capped.records.length).toBe(3);
    const atTail = await log.read(4);
    expect(atTail).toEqual({ kind: 'records', records: [], next: 4 });
    await log.close();
  });

  it('a_trimmed_offset_is_distinguishable_from_an_empty_range', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096, retention: { maxBytes: 9000 } });
    for (let i = 0; i < 60; i++) await log.append([payload(i, 200)]);
    const deleted = await log.enforceRetention();
    expect(deleted).toBeGreaterThan(0);
    expect(log.baseOffset).toBeGreaterThan(0);
    const below = await log.read(0);
    expect(below).toEqual({ kind: 'trimmed', requested: 0, oldest: log.baseOffset });
    const atTail = await log.read(log.tailOffset);
    expect(atTail).toEqual({ kind: 'records', records: [], next: log.tailOffset });
    const oldest = await log.read(log.baseOffset, { maxRecords: 1 });
    expect(oldest.kind === 'records' && oldest.records[0]?.offset).toBe(log.baseOffset);
    await log.close();
  });

  it('concurrent_appenders_share_one_flush', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io });
    const before = io.datasyncs;
    const gate = io.holdDatasyncs();
    const firstAppend = log.append([payload(0)]);
    await waitFor(() => io.heldDatasyncs === 1, 'the first flush to start');
    const rest = Array.from({ length: 16 }, (_, i) => log.append([payload(i + 1)]));
    await waitFor(() => log.writtenOffset === 17, 'all appends to be written');
    gate.release();
    const results = await Promise.all([firstAppend, ...rest]);
    expect(results.map((r) => r.first).sort((a, b) => a - b)).toEqual([...Array(17).keys()]);
    // One flush for the first append, one shared by the sixteen that waited behind it.
    expect(io.datasyncs - before).toBe(2);
    expect(log.durableOffset).toBe(17);
    await log.close();
  });

  it('a_failed_write_consumes_no_offsets', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io });
    await log.append([payload(0), payload(1)]);
    io.failWrites('ENOSPC', { partialBytes: 20 });
    await expect(log.append([payload(2), payload(3)])).rejects.toBeInstanceOf(WriteFailedError);
    expect(log.tailOffset).toBe(2);
    await new Promise<void>((r) => setImmediate(r));
    io.failWrites('EIO');
    await expect(log.append([payload(4)])).rejects.toBeInstanceOf(WriteFailedError);
    // An append made in the turn a write failed fails with it: the next turn's is written.
    await new Promise<void>((r) => setImmediate(r));
    const after = await log.append([payload(5)]);
    expect(after).toEqual({ first: 2, next: 3 });
    expect(await readAll(log, undefined, 7)).toEqual(['0:record-0-', '1:record-1-', '2:record-5-']);
    await log.close();
    const reopened = await openLog(root);
    expect(reopened.recovered.filter((a) => a.kind !== 'rewriteIndex')).toEqual([]);
    expect(await readAll(reopened, undefined, 7)).toEqual([
      '0:record-0-',
      '1:record-1-',
      '2:record-5-',
    ]);
    await reopened.close();
  });

  it('a_failed_write_fails_the_batches_queued_behind_it_and_those_made_before_the_next_turn', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo, { noInlineWrites: true });
    const log = await openLog(root, { io });
    await log.append([payload(0)]);
    let release!: () => void;
    io.failWrites('ENOSPC', { until: new Promise<void>((r) => (release = r)) });
    const failing = log.append([payload(1)]);
    await waitFor(() => io.heldWrites === 1 || undefined, 'the failing write is in flight');
    // Queued behind the failing write: a caller may count on the first landing before it.
    const behind = log.append([payload(2)]);
    // Made in the turn the failure is reported, before any reaction to it could run.
    let sameTurn: Promise<unknown> | undefined;
    failing.catch(() => {
      sameTurn = log.append([payload(3)]);
    });
    release();
    await expect(failing).rejects.toBeInstanceOf(WriteFailedError);
    await expect(behind).rejects.toBeInstanceOf(WriteFailedError);
    await waitFor(() => sameTurn !== undefined || undefined, 'the same-turn append');
    await expect(sameTurn).rejects.toBeInstanceOf(WriteFailedError);
    // From the next turn on the log writes again, from the failed write's offset.
    await new Promise<void>((r) => setImmediate(r));
    expect(await log.append([payload(4)])).toEqual({ first: 1, next: 2 });
    expect(await readAll(log, undefined, 7)).toEqual(['0:record-0-', '1:record-4-']);
    await log.close();
  });

  it('an_enospc_creating_the_next_segment_fails_that_append_and_a_later_append_succeeds', async () => {
    // A disk that is full for a moment, just when the active segment is full: the one write
    // that fails is the new segment's header. Like any failed write (ENOSPC), it must fail its
    // append without consuming offsets, and the log must write again once there is space.
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, segmentBytes: 4096, preallocateBytes: 0 });
    let i = 0;
    while (log.segmentCount === 1) await log.append([payload(i++, 500)]);
    const rolledAt = log.tailOffset;
    // Fill segment 1 up to its rollover; the next append must create segment 2.
    const nextSegment = (p: string) => p.endsWith('00000000000000000002.log');
    while (log.sizeBytes + 2 * (28 + 500) <= 4096 * 2) await log.append([payload(i++, 500)]);
    expect(log.segmentCount).toBe(2);
    const tail = log.tailOffset;
    expect(tail).toBeGreaterThan(rolledAt);
    io.failWrites('ENOSPC', { match: nextSegment });
    const failed = await log.append([payload(i++, 500)]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(log.tailOffset).toBe(tail);
    // The disk has space again (the fault fired once): the next turn's append is written.
    await new Promise<void>((r) => setImmediate(r));
    const later = await log.append([payload(i, 500)]).then(
      (r) => r,
      (e: unknown) => e,
    );
    // The log refused writes in the failing case; its close may fail the same way.
    await log.close().catch(() => undefined);
    expect(later).toEqual({ first: tail, next: tail + 1 });
    expect(failed).toBeInstanceOf(WriteFailedError);
  });

  it('a_failed_write_that_cannot_be_undone_refuses_writes_until_reopen', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io });
    await log.append([payload(0)]);
    io.failWrites('EIO', { partialBytes: 10 });
    io.failTruncates(1);
    await expect(log.append([payload(1)])).rejects.toBeInstanceOf(WriteFailedError);
    await expect(log.append([payload(2)])).rejects.toBeInstanceOf(WritesRefusedError);
    // The log refused writes after the injected fault; its close may fail the same way.
    await log.close().catch(() => undefined);
    const reopened = await openLog(root);
    expect(reopened.tailOffset).toBe(1);
    expect(reopened.recovered.some((a) => a.kind === 'truncate')).toBe(true);
    await reopened.close();
  });

  it('readers_stop_at_the_durable_offset_once_a_flush_poisons_the_log', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, fsync: 'periodic', flushIntervalMs: 60_000 });
    await log.append([payload(0), payload(1)]);
    await log.flush();
    await log.append([payload(2), payload(3)]);
    const before = await log.read(0);
    expect(before.kind === 'records' && before.records.length).toBe(4);
    io.failDatasyncs('EIO');
    await expect(log.flush()).rejects.toBeInstanceOf(LogPoisonedError);
    expect(log.durableOffset).toBe(2);
    const after = await log.read(0);
    expect(after.kind === 'records' && after.records.map((r) => r.offset)).toEqual([0, 1]);
    expect(after.kind === 'records' && after.next).toBe(2);
    // The log refused writes after the injected fault; its close may fail the same way.
    await log.close().catch(() => undefined);
  });

  it('a_read_under_way_when_a_flush_poisons_the_log_never_reports_corruption', async () => {
    // A `periodic` log's reader sees what is written. A read that took its bound before the
    // failed flush may still be reading when the poisoned log cuts its unsynced records from the
    // file: it must answer what it read (or the poison), not a CorruptionError over sound data.
    const root = await scratchRoot();
    const faulty = new FaultyIo(nodeIo);
    let hold: Promise<void> | undefined;
    let heldReads = 0;
    class HoldReadsFile extends DelegatingFile {
      override async read(b: Uint8Array, o: number, l: number, p: number): Promise<number> {
        if (hold !== undefined && this.path.endsWith('.log')) {
          heldReads++;
          await hold;
        }
        return this.inner.read(b, o, l, p);
      }
    }
    class HoldReadsIo extends DelegatingIo {
      override async open(path: string, mode: OpenMode): Promise<IoFile> {
        return new HoldReadsFile(await this.inner.open(path, mode));
      }
    }
    const log = await openLog(root, {
      io: new HoldReadsIo(faulty),
      fsync: 'periodic',
      flushIntervalMs: 60_000,
      preallocateBytes: 0,
    });
    await log.append([payload(0, 500), payload(1, 500)]);
    await log.flush();
    await log.append([payload(2, 500), payload(3, 500)]);
    let release!: () => void;
    hold = new Promise<void>((r) => {
      release = r;
    });
    const reading = log.read(0).then(
      (r) => (r.kind === 'records' ? r.records.map((rec) => rec.offset) : r),
      (e: unknown) => e,
    );
    await waitFor(() => heldReads > 0, 'the read to reach the segment file');
    faulty.failDatasyncs('EIO');
    await expect(log.flush()).rejects.toBeInstanceOf(LogPoisonedError);
    const segment = join(shardDir(root), segmentFileName(0));
    await waitFor(
      async () => (await stat(segment)).size < 32 + 4 * (28 + 500),
      'the poisoned log to cut its unsynced records',
    );
    hold = undefined;
    release();
    const got = await reading;
    // The log is poisoned by the injected fault: its close fails the same way.
    await log.close().catch(() => undefined);
    // The records below the durable bound, or the poison: never a corruption error.
    expect(got).not.toBeInstanceOf(CorruptionError);
    expect(Array.isArray(got) ? got.slice(0, 2) : got).toEqual(
      Array.isArray(got) ? [0, 1] : expect.any(LogPoisonedError),
    );
  });

  it('a_poisoned_log_fails_every_later_append_flush_and_close', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io });
    await log.append([payload(0)]);
    io.failDatasyncs('EIO');
    await expect(log.append([payload(1)])).rejects.toBeInstanceOf(LogPoisonedError);
    // A later flush would succeed on the device, but the log stays poisoned until reopen.
    await expect(log.append([payload(2)])).rejects.toBeInstanceOf(LogPoisonedError);
    await expect(log.flush()).rejects.toBeInstanceOf(LogPoisonedError);
    await expect(log.close()).rejects.toBeInstanceOf(LogPoisonedError);
    await expect(log.read(0)).rejects.toBeInstanceOf(LogClosedError);
    const reopened = await openLog(root);
    expect(reopened.poisoned).toBe(false);
    await reopened.append([payload(3)]);
    await reopened.close();
  });

  it('an_idle_periodic_log_arms_no_flush_timer', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, fsync: 'periodic', flushIntervalMs: 50 });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const syncsAtOpen = io.datasyncs;
      expect(vi.getTimerCount()).toBe(0);
      const durable = new Promise<number>((r) => log.onDurable(r));
      await log.append([payload(0)]);
      expect(log.durableOffset).toBe(0);
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(50);
      expect(await durable).toBe(1);
      expect(io.datasyncs - syncsAtOpen).toBe(1);
      expect(vi.getTimerCount()).toBe(0);
      vi.advanceTimersByTime(10_000);
      expect(io.datasyncs - syncsAtOpen).toBe(1);
    } finally {
      vi.useRealTimers();
    }
    await log.close();
  });

  it('a_rebuilt_sparse_index_is_byte_identical', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 64 * 1024, fsync: 'none' });
    for (let i = 0; i < 300; i++) await log.append([payload(i, 150 + (i % 7) * 40)]);
    expect(log.segmentCount).toBeGreaterThan(1);
    await log.close();
    const sealedIndex = join(shardDir(root), indexFileName(0));
    const original = await readFile(sealedIndex);
    expect(original.length).toBeGreaterThan(24 + 16 * 5);
    await rm(sealedIndex);
    const reopened = await openLog(root, { segmentBytes: 64 * 1024 });
    expect(reopened.recovered).toContainEqual({ kind: 'rewriteIndex', segmentId: 0 });
    expect(Buffer.compare(await readFile(sealedIndex), original)).toBe(0);
    expect((await readAll(reopened, undefined, 7)).length).toBe(300);
    await reopened.close();
  });

  it('a_damaged_sparse_index_is_rebuilt_and_never_trusted', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 64 * 1024, fsync: 'none' });
    for (let i = 0; i < 300; i++) await log.append([payload(i, 200)]);
    await log.close();
    const sealedIndex = join(shardDir(root), indexFileName(0));
    const original = await readFile(sealedIndex);
    const bad = Buffer.from(original);
    bad[24 + 16 * 3 + 15]! ^= 0x40; // one entry's position now points inside a record
    await (await import('node:fs/promises')).writeFile(sealedIndex, bad);
    const reopened = await openLog(root, { segmentBytes: 64 * 1024 });
    const all = await readAll(reopened, undefined, 7);
    expect(all.length).toBe(300);
    expect(all[50]).toBe(`50:${text(payload(50, 200))}`);
    await reopened.close();
  });

  it('a_seal_cuts_below_every_earlier_record_and_a_trim_deletes_only_whole_segments', async () => {
    const root = await scratchRoot();
    const log = await openLog(root);
    await log.append([payload(0), payload(1)]);
    const pending = log.append([payload(2)]);
    const cut = await log.seal();
    await pending;
    expect(cut).toBe(3);
    expect(log.segmentCount).toBe(2);
    expect(await log.seal()).toBe(3); // an empty active segment is not sealed again
    expect(log.segmentCount).toBe(2);
    await log.append([payload(3)]);
    expect(await log.trimBelow(2)).toBe(0); // segment 0 ends at 3, above the cut
    expect(await log.trimBelow(3)).toBe(1);
    expect(log.baseOffset).toBe(3);
    expect(await log.trimBelow(100)).toBe(0); // never the active segment
    expect(await readAll(log, undefined, 7)).toEqual(['3:record-3-']);
    await log.close();
  });

  it('an_on_commit_append_resolves_only_after_its_flush', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io });
    const gate = io.holdDatasyncs();
    let acked = false;
    const pending = log.append([payload(0)]).then(() => {
      acked = true;
    });
    await waitFor(() => io.heldDatasyncs === 1, 'the flush to reach the disk');
    expect(log.writtenOffset).toBe(1);
    expect(acked).toBe(false);
    expect(log.durableOffset).toBe(0);
    // Under onCommit a reader does not see the record before it is durable either.
    const early = await log.read(0);
    expect(early.kind === 'records' && early.records.length).toBe(0);
    gate.release();
    await pending;
    expect(log.durableOffset).toBe(1);
    await log.close();
  });

  it('an_append_written_resolves_before_its_sync_and_the_next_one_is_written_meanwhile', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io });
    const gate = io.holdDatasyncs();
    // A follower's pipelined append: written, then waited for apart.
    expect(await log.appendWritten([payload(0), payload(1)])).toEqual({ first: 0, next: 2 });
    let held = false;
    const durable = log.waitDurable(2).then(() => {
      held = true;
    });
    await waitFor(() => io.heldDatasyncs === 1, 'the flush to reach the disk');
    expect(await log.appendWritten([payload(2)])).toEqual({ first: 2, next: 3 });
    expect(log.writtenOffset).toBe(3);
    expect(held).toBe(false);
    expect(log.durableOffset).toBe(0);
    gate.release();
    await durable;
    await log.waitDurable(3);
    expect(log.durableOffset).toBe(3);
    expect(await readAll(log, undefined, 7)).toEqual(['0:record-0-', '1:record-1-', '2:record-2-']);
    await log.close();
  });
  it('a_log_without_fsync_syncs_only_at_seal_flush_and_close', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, fsync: 'none', segmentBytes: 4096 });
    const atOpen = io.datasyncs;
    for (let i = 0; i < 10; i++) await log.append([payload(i, 100)]);
    expect(io.datasyncs).toBe(atOpen);
    expect(log.durableOffset).toBe(0);
    const r = await log.read(0);
    expect(r.kind === 'records' && r.records.length).toBe(10);
    await log.flush();
    expect(io.datasyncs).toBe(atOpen + 1);
    expect(log.durableOffset).toBe(10);
    for (let i = 10; i < 40; i++) await log.append([payload(i, 100)]);
    expect(log.segmentCount).toBe(2); // the seal synced the first segment
    expect(log.durableOffset).toBeGreaterThan(10);
    const beforeClose = io.datasyncs;
    await log.close();
    expect(io.datasyncs).toBe(beforeClose + 1);
  });

  it('staged_batches_apply_in_offset_order_however_their_callers_are_scheduled', async () => {
    const root = await scratchRoot();
    const log = await openLog(root);
    const staged = await Promise.all(Array.from({ length: 12 }, (_, i) => log.stage([payload(i)])));
    const applied: number[] = [];
    // Callers resume in reverse order; their turns still apply in offset order.
    await Promise.all(
      [...staged].reverse().map(async (s) => {
        await log.waitDurable(s.next);
        await s.turn.wait();
        applied.push(s.first);
        s.turn.release();
      }),
    );
    expect(applied).toEqual(staged.map((s) => s.first).sort((a, b) => a - b));
    expect(new Set(staged.map((s) => s.first)).size).toBe(12);
    await log.close();
  });

  it('reads_return_exactly_what_was_appended_under_any_budget', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { fsync: 'none', segmentBytes: 256 * 1024 });
    const sizes = [0, 5, 70_000, 3, 200_000, 4096, 1, 65_536, 90_000, 12, 300_000, 7];
    for (let round = 0; round < 3; round++) {
      await log.append(sizes.map((n, i) => payload(round * 100 + i, n)));
    }
    const expected = [0, 1, 2].flatMap((round) => sizes.map((n, i) => payload(round * 100 + i, n)));
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: expected.length - 1 }),
        fc.integer({ min: 1, max: 400_000 }),
        fc.integer({ min: 1, max: 40 }),
        async (from, maxBytes, maxRecords) => {
          let next = from;
          while (next < expected.length) {
            const r = await log.read(next, { maxBytes, maxRecords });
            if (r.kind !== 'records') throw new Error('unexpected trim');
            expect(r.records.length).toBeGreaterThanOrEqual(1);
            expect(r.records.length).toBeLessThanOrEqual(maxRecords);
            const bytes = r.records.reduce((n, x) => n + x.payload.length, 0);
            if (r.records.length > 1) expect(bytes).toBeLessThanOrEqual(maxBytes);
            for (const rec of r.records) {
              expect(rec.offset).toBe(next);
              expect(Buffer.compare(rec.payload, expected[next]!)).toBe(0);
              next++;
            }
            expect(r.next).toBe(next);
          }
        },
      ),
      { numRuns: 40 },
    );
    await log.close();
  });

  it('opening_a_new_shard_syncs_every_new_directory_into_its_parent', async () => {
    const scratch = await scratchRoot();
    const root = join(scratch, 'a', 'b');
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io });
    const dir = shardDir(root);
    // Each new component is synced into its parent, then the directory holding the new
    // segment file and the mark.
    expect(io.syncedDirs.slice(0, 3)).toEqual([scratch, join(scratch, 'a'), root]);
    expect(io.syncedDirs).toContain(dir);
    await log.close();
    const again = new FaultyIo(nodeIo);
    const reopened = await openLog(root, { io: again });
    expect(again.syncedDirs[0]).toBe(root); // an existing shard directory re-syncs its parent
    await reopened.close();
  });

  it('an_on_commit_batch_up_to_the_inline_bound_is_written_on_the_calling_thread', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 0 });
    const segmentWrites = () => io.inlineWritePaths.filter((p) => p.endsWith('.log')).length;
    await log.append([payload(0, 100), payload(1, 100)]);
    expect(segmentWrites()).toBe(1);
    // A batch past the bound goes through the thread pool; so does every write under `none`,
    // where nothing bounds the dirty pages.
    await log.append([payload(2, WRITE_INLINE_BYTES_MAX)]);
    expect(segmentWrites()).toBe(1);
    await log.close();
    const lazy = await openLog(root, { io, fsync: 'none', preallocateBytes: 0 });
    await lazy.append([payload(3, 100)]);
    expect(segmentWrites()).toBe(1);
    await lazy.close();
    const reopened = await openLog(root);
    expect(await readAll(reopened, undefined, 7)).toHaveLength(4);
    await reopened.close();
  });

  it('a_periodic_batch_is_written_on_the_calling_thread_until_unsynced_bytes_pass_their_bound', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, {
      io,
      fsync: 'periodic',
      flushIntervalMs: 60_000,
      preallocateBytes: 0,
    });
    const segmentWrites = () => io.inlineWritePaths.filter((p) => p.endsWith('.log')).length;
    await log.append([payload(0, 100)]);
    expect(segmentWrites()).toBe(1);
    // No sync runs (its interval is a minute away): the inline writes stop once the next
    // one would leave more than the bound unsynced, and the pool takes the rest.
    const size = WRITE_INLINE_BYTES_MAX / 2;
    const inlineAtMost = Math.floor(WRITE_INLINE_UNSYNCED_BYTES_MAX / size);
    let offset = 1;
    for (; offset <= inlineAtMost + 2; offset++) await log.append([payload(offset, size)]);
    const inline = segmentWrites();
    expect(inline).toBeGreaterThan(inlineAtMost / 2);
    expect(inline).toBeLessThanOrEqual(inlineAtMost);
    await log.append([payload(offset++, 100)]);
    expect(segmentWrites()).toBe(inline);
    // A completed sync covers them: the next small batch is written inline again.
    await log.flush();
    await log.append([payload(offset++, 100)]);
    expect(segmentWrites()).toBe(inline + 1);
    await log.close();
    const reopened = await openLog(root);
    expect(await readAll(reopened, undefined, 7)).toHaveLength(offset);
    await reopened.close();
  });

  it('an_on_commit_append_is_answered_before_its_durable_mark_write_starts', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 0 });
    const before = io.writes;
    await log.append([payload(0)]);
    // The data write only: the mark's write waits until the answer's turn is over.
    expect(io.writes - before).toBe(1);
    await waitFor(() => io.writes - before === 2, 'the durable mark to be written');
    await log.close();
  });

  it('a_durable_mark_is_written_on_the_calling_thread_when_no_mark_write_is_queued', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 0 });
    const before = io.writes;
    await log.append([payload(0)]);
    await waitFor(() => io.writes - before === 2, 'the durable mark to be written');
    // The segment write and then the mark, both without a thread-pool round trip.
    const [segment, mark] = io.inlineWritePaths.slice(-2);
    expect(segment?.endsWith('.log')).toBe(true);
    expect(mark?.endsWith('.log')).toBe(false);
    await log.close();
    const reopened = await openLog(root);
    expect(await readAll(reopened, undefined, 7)).toHaveLength(1);
    await reopened.close();
  });

  it('an_append_is_written_before_the_event_loop_moves_to_its_next_phase', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 0 });
    const before = io.writes;
    const nextPhase = new Promise<number>((resolve) => setImmediate(() => resolve(io.writes)));
    const appended = log.append([payload(0)]);
    expect(await nextPhase).toBe(before + 1);
    await appended;
    await log.close();
  });

  it('an_append_after_close_is_refused', async () => {
    const root = await scratchRoot();
    const log = await openLog(root);
    await log.append([payload(0)]);
    await log.close();
    await expect(log.stage([payload(1)])).rejects.toBeInstanceOf(LogClosedError);
    await expect(log.append([payload(1)])).rejects.toBeInstanceOf(LogClosedError);
    await expect(log.close()).rejects.toBeInstanceOf(LogClosedError);
  });
});
