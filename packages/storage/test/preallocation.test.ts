/**
 * Goal: preallocating the active segment (zeros written and synced ahead of its data, so a
 * group commit's fdatasync has no size change to commit) never changes what the log holds:
 * a write never lands in a range being zeroed, sealed and closed segments hold their data
 * only, a crash's zero tail is cut on open with every acknowledged record kept, a tail of
 * zeros below the durable mark refuses to open, and preallocation failures either leave the
 * segment growing by its writes (no space) or poison the log (its sync failed).
 * Method: real files in a scratch directory, FaultyIo to hold or fail preallocation steps,
 * file copies taken while a log is open to stand for a process that died.
 */
import { cp, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { CorruptionError, LogPoisonedError } from '../src/errors.js';
import { FaultyIo } from '../src/io/faulty-io.js';
import { nodeIo } from '../src/io/node-io.js';
import { DURABLE_MARK_FILE, segmentFileName } from '../src/log/layout.js';
import { PREALLOCATE_GAP_BYTES } from '../src/limits.js';
import { planRecovery } from '../src/log/recovery.js';
import { SEGMENT_HEADER_BYTES } from '../src/segment/format.js';
import { openLog, payload, readAll, scratchRoot, shardDir, text } from './helpers.js';

const RECORD = 28 + 100;

const segSize = async (root: string, id: number) =>
  (await stat(join(shardDir(root), segmentFileName(id)))).size;

describe('preallocation', () => {
  it('the_active_segment_is_preallocated_ahead_of_its_data_and_close_cuts_the_zeros', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 64 * 1024 });
    // An idle log preallocates nothing.
    expect(await segSize(root, 0)).toBe(SEGMENT_HEADER_BYTES);
    const expected: string[] = [];
    for (let i = 0; i < 10; i++) {
      await log.append([payload(i, 100)]);
      expected.push(`${i}:${text(payload(i, 100))}`);
    }
    await waitFor(() => io.preallocations >= 1, 'a preallocation step');
    const data = SEGMENT_HEADER_BYTES + 10 * RECORD;
    expect(log.sizeBytes).toBe(data);
    expect(await segSize(root, 0)).toBeGreaterThan(data);
    expect(await readAll(log)).toEqual(expected);
    await log.close();
    expect(await segSize(root, 0)).toBe(data);
    const reopened = await openLog(root);
    expect(reopened.recovered.filter((a) => a.kind !== 'rewriteIndex')).toEqual([]);
    expect(await readAll(reopened)).toEqual(expected);
    await reopened.close();
  });

  it('a_write_never_lands_in_a_range_being_preallocated', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    // Small steps, so many run while waves of concurrent appends are being written.
    const log = await openLog(root, { io, preallocateBytes: 2048, segmentBytes: 64 * 1024 });
    const expected: string[] = [];
    let i = 0;
    for (let wave = 0; wave < 30; wave++) {
      const batch: Array<Promise<unknown>> = [];
      for (let k = 0; k < 1 + (wave % 7) * 3; k++, i++) {
        batch.push(log.append([payload(i, 40 + ((i * 37) % 300))]));
        expected.push(`${i}:${text(payload(i, 40 + ((i * 37) % 300)))}`);
      }
      await Promise.all(batch);
    }
    expect(io.writesIntoPreallocation).toBe(0);
    expect(io.preallocations).toBeGreaterThan(3);
    expect(await readAll(log)).toEqual(expected);
    await log.close();
    const reopened = await openLog(root);
    expect(await readAll(reopened)).toEqual(expected);
    await reopened.close();
  });

  it('a_write_waits_for_the_preallocation_step_zeroing_its_range', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 64 * 1024 });
    const gate = io.holdPreallocations();
    // The first write grows the file and starts a step past a gap; the step is held.
    const big = (i: number) => payload(i, 8192);
    await log.append([big(0)]);
    await waitFor(() => io.heldPreallocations === 1, 'the step to start');
    const rest = Array.from({ length: 40 }, (_, i) => log.append([big(i + 1)]));
    // Writes fill the gap up to where the step's zeros start, and go no further while it runs.
    const record = 28 + 8192;
    const fitInGap = Math.floor(PREALLOCATE_GAP_BYTES / record);
    await waitFor(() => log.writtenOffset === 1 + fitInGap, 'the gap to fill');
    expect(io.heldPreallocations).toBe(1);
    gate.release();
    await Promise.all(rest);
    expect(io.writesIntoPreallocation).toBe(0);
    const expected = Array.from({ length: 41 }, (_, i) => `${i}:${text(big(i))}`);
    expect(await readAll(log)).toEqual(expected);
    await log.close();
  });

  it('the_first_writes_of_a_segment_land_in_a_gap_instead_of_waiting_for_its_first_step', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 64 * 1024 });
    const gate = io.holdPreallocations();
    await log.append([payload(0, 100)]);
    await waitFor(() => io.heldPreallocations === 1, 'the step to start');
    // These resolve (written and synced) while the step is still held.
    await Promise.all(Array.from({ length: 20 }, (_, i) => log.append([payload(i + 1, 100)])));
    expect(io.heldPreallocations).toBe(1);
    expect(log.durableOffset).toBe(21);
    gate.release();
    await log.close();
    expect(io.writesIntoPreallocation).toBe(0);
  });

  it('a_sealed_segment_holds_its_data_and_no_preallocated_zeros', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, segmentBytes: 8192, preallocateBytes: 4096 });
    for (let i = 0; i < 200; i++) await log.append([payload(i, 100)]);
    expect(log.segmentCount).toBeGreaterThan(3);
    expect(io.preallocations).toBeGreaterThan(3);
    const plan = await planRecovery(nodeIo, shardDir(root), { indexSpacingBytes: 4096 });
    for (const seg of plan.segments.slice(0, -1)) {
      expect(await segSize(root, seg.id)).toBe(seg.bytes);
    }
    await log.close();
  });

  it('a_dead_process_leaves_a_preallocated_tail_that_the_next_open_cuts', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 64 * 1024 });
    const expected: string[] = [];
    for (let i = 0; i < 30; i++) {
      await log.append([payload(i, 100)]);
      expected.push(`${i}:${text(payload(i, 100))}`);
    }
    await waitFor(() => io.preallocations >= 1, 'a preallocation step');
    // A copy of the files while the log is open is what a killed process leaves behind.
    const copy = await scratchRoot();
    await cp(root, copy, { recursive: true });
    await log.close();
    const data = SEGMENT_HEADER_BYTES + 30 * RECORD;
    expect(await segSize(copy, 0)).toBeGreaterThan(data);
    const reopened = await openLog(copy);
    expect(reopened.recovered).toContainEqual(
      expect.objectContaining({ kind: 'truncate', segmentId: 0, to: data }),
    );
    expect(await readAll(reopened)).toEqual(expected);
    expect((await reopened.append([payload(30, 100)])).first).toBe(30);
    await reopened.close();
  });

  it('a_sealed_segment_whose_zero_tail_survived_a_crash_still_opens', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096 });
    const expected: string[] = [];
    for (let i = 0; i < 60; i++) {
      await log.append([payload(i, 100)]);
      expected.push(`${i}:${text(payload(i, 100))}`);
    }
    expect(log.segmentCount).toBeGreaterThan(1);
    await log.close();
    // As if the seal's cut of the zeros had not reached the disk.
    const seg0 = join(shardDir(root), segmentFileName(0));
    await writeFile(seg0, Buffer.concat([await readFile(seg0), new Uint8Array(3000)]));
    const reopened = await openLog(root, { segmentBytes: 4096, verifyAllOnOpen: true });
    expect(reopened.recovered).toContainEqual(
      expect.objectContaining({ kind: 'truncate', segmentId: 0 }),
    );
    expect(await readAll(reopened)).toEqual(expected);
    await reopened.close();
  });

  it('a_sealed_segment_with_records_zeroed_away_refuses_to_open', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096 });
    for (let i = 0; i < 60; i++) await log.append([payload(i, 100)]);
    await log.close();
    // The last two records of segment 0 read as zeros: segment 1 no longer continues it.
    const seg0 = join(shardDir(root), segmentFileName(0));
    const bytes = await readFile(seg0);
    const at = bytes.length - 2 * RECORD;
    bytes.fill(0, at);
    await writeFile(seg0, bytes);
    const err = await openLog(root, { segmentBytes: 4096, verifyAllOnOpen: true }).then(
      (l) => l.close(),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CorruptionError);
    expect((err as CorruptionError).kind).toBe('OffsetOutOfOrder');
    expect((err as CorruptionError).site.segmentId).toBe(1);
  });

  it('a_zero_tail_that_starts_below_the_durable_mark_refuses_to_open', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { preallocateBytes: 64 * 1024 });
    for (let i = 0; i < 20; i++) await log.append([payload(i, 100)]);
    await log.close();
    // The mark says all 20 records were synced; zeros where the last two were are data lost.
    const seg = join(shardDir(root), segmentFileName(0));
    const bytes = await readFile(seg);
    const at = SEGMENT_HEADER_BYTES + 18 * RECORD;
    bytes.fill(0, at);
    await writeFile(seg, Buffer.concat([bytes, new Uint8Array(8192)]));
    const err = await openLog(root).then(
      (l) => l.close(),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CorruptionError);
    expect((err as CorruptionError).site).toEqual({
      shardDir: shardDir(root),
      segmentId: 0,
      position: at,
    });
    // Without the mark the same bytes are an unsynced tail, and are cut.
    await writeFile(join(shardDir(root), DURABLE_MARK_FILE), new Uint8Array(0));
    const reopened = await openLog(root);
    expect(reopened.tailOffset).toBe(18);
    await reopened.close();
  });

  it('a_preallocation_without_space_leaves_the_segment_growing_by_its_writes', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 64 * 1024 });
    io.failPreallocation('write');
    const expected: string[] = [];
    for (let i = 0; i < 20; i++) {
      await log.append([payload(i, 100)]);
      expected.push(`${i}:${text(payload(i, 100))}`);
    }
    expect(log.poisoned).toBe(false);
    expect(io.preallocations).toBe(0);
    expect(await segSize(root, 0)).toBe(SEGMENT_HEADER_BYTES + 20 * RECORD);
    expect(await readAll(log)).toEqual(expected);
    await log.close();
  });

  it('a_failed_preallocation_sync_poisons_the_log', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 64 * 1024 });
    const gate = io.holdPreallocations();
    await log.append([payload(0, 100)]);
    await waitFor(() => io.heldPreallocations === 1, 'the step to start');
    io.failPreallocation('sync');
    gate.release();
    await waitFor(() => log.poisoned, 'the failed step to poison the log');
    await expect(log.append([payload(1, 100)])).rejects.toBeInstanceOf(LogPoisonedError);
    expect(log.durableOffset).toBe(1);
    await expect(log.close()).rejects.toBeInstanceOf(LogPoisonedError);
    const reopened = await openLog(root);
    expect(await readAll(reopened)).toEqual([`0:${text(payload(0, 100))}`]);
    await reopened.close();
  });

  it('an_append_whose_flush_ends_beside_a_preallocation_sync_waits_for_that_syncs_outcome', async () => {
    // Linux reports a write-back error to one of two concurrent fdatasyncs of a file: if the
    // step's sync took it, the flush's success says nothing about the records it covered.
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 64 * 1024 });
    const zeros = io.holdPreallocations();
    await log.append([payload(0, 100)]);
    await waitFor(() => io.heldPreallocations === 1, 'the step to start');
    const sync = io.holdPreallocationSyncs();
    io.failPreallocation('sync');
    zeros.release();
    await waitFor(() => io.heldPreallocationSyncs === 1, "the step's sync to start");
    const flushes = io.datasyncsDone;
    const settled = log.append([payload(1, 100)]).then(
      () => 'acknowledged',
      (err: unknown) => err,
    );
    await waitFor(() => io.datasyncsDone > flushes, "the append's flush to end");
    sync.release();
    expect(await settled).toBeInstanceOf(LogPoisonedError);
    expect(log.durableOffset).toBe(1);
    await expect(log.close()).rejects.toBeInstanceOf(LogPoisonedError);
  });

  it('a_close_whose_cut_of_the_zeros_fails_still_closes_and_the_next_open_cuts_them', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 64 * 1024 });
    for (let i = 0; i < 5; i++) await log.append([payload(i, 100)]);
    await waitFor(() => io.preallocations >= 1, 'a preallocation step');
    io.failTruncates(1);
    await log.close();
    const data = SEGMENT_HEADER_BYTES + 5 * RECORD;
    expect(await segSize(root, 0)).toBeGreaterThan(data);
    const reopened = await openLog(root);
    expect(reopened.recovered).toContainEqual(
      expect.objectContaining({ kind: 'truncate', segmentId: 0, to: data }),
    );
    expect(reopened.tailOffset).toBe(5);
    await reopened.close();
  });

  it('a_log_with_preallocation_off_writes_no_zeros', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const log = await openLog(root, { io, preallocateBytes: 0 });
    for (let i = 0; i < 20; i++) await log.append([payload(i, 100)]);
    expect(io.preallocations).toBe(0);
    expect(await segSize(root, 0)).toBe(SEGMENT_HEADER_BYTES + 20 * RECORD);
    await log.close();
  });
});
