/**
 * Goal: a leader's shipper can read what its log has written before the log's fsync of it
 * ends (`readWritten`), and the newest records come from the log's memory of them
 * (`keepRecent`) rather than a read of the segment file; `read` still stops at the durable
 * bound under onCommit. Method: real files with a FaultyIo holding fdatasync, and an Io that
 * counts segment file reads; waits on the log's own state, never sleeps.
 */
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { FaultyIo } from '../src/io/faulty-io.js';
import type { Io, IoFile } from '../src/io/io.js';
import { nodeIo } from '../src/io/node-io.js';
import { FLAG_GENERATION_START } from '../src/segment/format.js';
import { openLog, payload, scratchRoot, text } from './helpers.js';

/** Passes every call to nodeIo and counts reads of segment files. */
function countingIo(): { io: Io; reads: () => number } {
  let reads = 0;
  const io: Io = Object.create(nodeIo) as Io;
  io.open = async (path, mode): Promise<IoFile> => {
    const file = await nodeIo.open(path, mode);
    if (!path.endsWith('.log')) return file;
    const counted: IoFile = Object.create(file) as IoFile;
    counted.read = (buffer, offset, length, position) => {
      reads++;
      return file.read(buffer, offset, length, position);
    };
    return counted;
  };
  return { io, reads: () => reads };
}

describe('SegmentLog readWritten', () => {
  it('a_written_record_reads_through_read_written_before_its_fsync_ends', async () => {
    const io = new FaultyIo(nodeIo);
    const log = await openLog(await scratchRoot(), { io, fsync: 'onCommit' });
    await log.append([payload(0)]);
    const gate = io.holdDatasyncs();
    const appended = log.append([payload(1), payload(2)]);
    await waitFor(() => io.heldDatasyncs === 1 && log.writtenOffset === 3, 'the held fsync');
    const durableRead = await log.read(1);
    expect(durableRead.kind === 'records' && durableRead.records.length).toBe(0);
    const written = await log.readWritten(0);
    if (written.kind !== 'records') throw new Error('unexpected trim');
    expect(written.records.map((r) => `${r.offset}:${text(r.payload)}`)).toEqual([
      '0:record-0-',
      '1:record-1-',
      '2:record-2-',
    ]);
    expect(log.durableOffset).toBe(1);
    gate.release();
    await appended;
    await log.close();
  });

  it('the_newest_written_records_read_from_memory_once_kept_and_older_ones_from_the_file', async () => {
    const counting = countingIo();
    const log = await openLog(await scratchRoot(), { io: counting.io, fsync: 'onCommit' });
    await log.append([payload(0), payload(1)]);
    log.keepRecent(1024);
    const seen: number[] = [];
    const unlisten = log.onWritten((w) => seen.push(w));
    await log.append([payload(2), payload(3)]);
    await log.append([payload(4)]);
    const before = counting.reads();
    const kept = await log.readWritten(2, { maxRecords: 2 });
    if (kept.kind !== 'records') throw new Error('unexpected trim');
    expect(kept.records.map((r) => `${r.offset}:${text(r.payload)}`)).toEqual([
      '2:record-2-',
      '3:record-3-',
    ]);
    expect(kept.next).toBe(4);
    expect(counting.reads()).toBe(before);
    expect(seen).toEqual([4, 5]);
    // Written before the log kept anything: read from the file, the same bytes.
    const older = await log.readWritten(0, { maxRecords: 2 });
    if (older.kind !== 'records') throw new Error('unexpected trim');
    expect(older.records.map((r) => text(r.payload))).toEqual(['record-0-', 'record-1-']);
    expect(counting.reads()).toBeGreaterThan(before);
    log.keepRecent(0);
    const after = counting.reads();
    await log.readWritten(4);
    expect(counting.reads()).toBeGreaterThan(after);
    unlisten();
    await log.close();
  });

  it('records_past_the_kept_bytes_drop_oldest_first_and_read_back_from_the_file', async () => {
    const counting = countingIo();
    const log = await openLog(await scratchRoot(), { io: counting.io, fsync: 'onCommit' });
    // Each payload is 10-11 bytes: 40 bytes keep the newest three or four records.
    log.keepRecent(40);
    for (let i = 0; i < 12; i++) await log.append([payload(i)]);
    const before = counting.reads();
    const newest = await log.readWritten(10);
    if (newest.kind !== 'records') throw new Error('unexpected trim');
    expect(newest.records.map((r) => `${r.offset}:${text(r.payload)}`)).toEqual([
      '10:record-10-',
      '11:record-11-',
    ]);
    expect(counting.reads()).toBe(before);
    const dropped = await log.readWritten(2, { maxRecords: 3 });
    if (dropped.kind !== 'records') throw new Error('unexpected trim');
    expect(dropped.records.map((r) => `${r.offset}:${text(r.payload)}`)).toEqual([
      '2:record-2-',
      '3:record-3-',
      '4:record-4-',
    ]);
    expect(counting.reads()).toBeGreaterThan(before);
    await log.close();
  });

  it('a_kept_generation_start_record_reads_from_memory_with_its_flag', async () => {
    const counting = countingIo();
    const log = await openLog(await scratchRoot(), { io: counting.io, fsync: 'onCommit' });
    await log.append([payload(0)]);
    log.keepRecent(1024);
    await log.appendGenerationStart(7);
    await log.append([payload(2)]);
    const before = counting.reads();
    const kept = await log.readWritten(1, { includeGenerationStarts: true });
    if (kept.kind !== 'records') throw new Error('unexpected trim');
    // Shipped from memory, the start record must stay a start record (a plain one with its
    // eight bytes would reach followers' readers as data).
    expect(kept.records.map((r) => r.flags)).toEqual([FLAG_GENERATION_START, 0]);
    expect(counting.reads()).toBe(before);
    // A reader that did not ask for start records gets none, from memory as from the file.
    const plain = await log.readWritten(1);
    log.keepRecent(0);
    const file = await log.readWritten(1, { includeGenerationStarts: true });
    const filePlain = await log.readWritten(1);
    if (plain.kind !== 'records' || file.kind !== 'records' || filePlain.kind !== 'records')
      throw new Error('unexpected trim');
    expect(file.records.map((r) => r.flags)).toEqual(kept.records.map((r) => r.flags));
    expect(plain.records.map((r) => r.offset)).toEqual([2]);
    expect(filePlain.records.map((r) => r.offset)).toEqual([2]);
    await log.close();
  });
});
