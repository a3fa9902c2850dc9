/**
 * Goal: recovery repairs exactly the tails a crash can leave (a short final record, a
 * zero-filled tail, anything past the durable mark) and refuses everything else with a
 * CorruptionError that names the shard directory, segment, byte position and kind.
 * Method: write a real log, damage its files byte by byte, reopen, and compare what reads
 * back with what was written.
 */
import { appendFile, readFile, readdir, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CorruptionError } from '../src/errors.js';
import { nodeIo } from '../src/io/node-io.js';
import { encodeDurableMark } from '../src/log/durable-mark.js';
import { DURABLE_MARK_FILE, indexFileName, segmentFileName } from '../src/log/layout.js';
import { planRecovery } from '../src/log/recovery.js';
import {
  FLAG_GENERATION_START,
  SEGMENT_HEADER_BYTES,
  encodeRecord,
  encodeSegmentHeader,
} from '../src/segment/format.js';
import { openLog, payload, readAll, scratchRoot, shardDir, text } from './helpers.js';

/** A closed log of `n` records of 100 bytes; returns the expected reads. */
async function writeLog(root: string, n: number, segmentBytes?: number): Promise<string[]> {
  const log = await openLog(root, segmentBytes === undefined ? {} : { segmentBytes });
  const expected: string[] = [];
  for (let i = 0; i < n; i++) {
    await log.append([payload(i, 100)]);
    expected.push(`${i}:${text(payload(i, 100))}`);
  }
  await log.close();
  return expected;
}

const RECORD = 28 + 100;
const READ_BACK = resolve(import.meta.dirname, 'fixtures/log-read-back.ts');
const REPO = resolve(import.meta.dirname, '../../..');

async function expectCorruption(root: string, kind: string, segmentId: number, position: number) {
  const err = await openLog(root).then(
    async (log) => {
      await log.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CorruptionError);
  const c = err as CorruptionError;
  expect(c.kind).toBe(kind);
  expect(c.site).toEqual({ shardDir: shardDir(root), segmentId, position });
  expect(c.message).toContain(shardDir(root));
  expect(c.message).toContain(`segment ${segmentId}`);
  expect(c.message).toContain(`byte ${position}`);
}

describe('recovery', () => {
  it('a_torn_tail_is_truncated_on_open', async () => {
    const root = await scratchRoot();
    const expected = await writeLog(root, 10);
    const seg = join(shardDir(root), segmentFileName(0));
    const cleanSize = (await stat(seg)).size;
    // Without a durable mark only the shape of the damage decides.
    await rm(join(shardDir(root), DURABLE_MARK_FILE));
    const torn = encodeRecord(10, 1, payload(10, 100)).subarray(0, 70);
    await appendFile(seg, torn);
    const log = await openLog(root);
    expect(log.recovered).toContainEqual(
      expect.objectContaining({
        kind: 'truncate',
        segmentId: 0,
        from: cleanSize + 70,
        to: cleanSize,
      }),
    );
    expect(await readAll(log)).toEqual(expected);
    expect((await log.append([payload(10, 100)])).first).toBe(10);
    await log.close();
    // A header cut short is torn the same way.
    await rm(join(shardDir(root), DURABLE_MARK_FILE));
    await appendFile(seg, encodeRecord(11, 1, payload(11, 100)).subarray(0, 13));
    const again = await openLog(root);
    expect(again.tailOffset).toBe(11);
    await again.close();
  });

  it('a_zero_filled_tail_is_truncated_on_open', async () => {
    const root = await scratchRoot();
    const expected = await writeLog(root, 10);
    const seg = join(shardDir(root), segmentFileName(0));
    await rm(join(shardDir(root), DURABLE_MARK_FILE));
    const size = (await stat(seg)).size;
    await appendFile(seg, new Uint8Array(3000));
    const log = await openLog(root);
    expect(log.recovered).toContainEqual(expect.objectContaining({ kind: 'truncate', to: size }));
    expect(await readAll(log)).toEqual(expected);
    await log.close();
  });

  it('a_record_zeroed_from_a_block_boundary_is_a_torn_tail', async () => {
    const root = await scratchRoot();
    await writeLog(root, 20);
    const seg = join(shardDir(root), segmentFileName(0));
    await rm(join(shardDir(root), DURABLE_MARK_FILE));
    // Record 7 spans the 1024-byte boundary; zero from there to the end of the file.
    const bytes = await readFile(seg);
    expect(SEGMENT_HEADER_BYTES + 7 * RECORD).toBeLessThan(1024);
    expect(SEGMENT_HEADER_BYTES + 8 * RECORD).toBeGreaterThan(1024);
    bytes.fill(0, 1024);
    await writeFile(seg, bytes);
    const log = await openLog(root);
    expect(log.tailOffset).toBe(7);
    await log.close();
  });

  it('zeros_followed_by_data_refuse_to_open', async () => {
    const root = await scratchRoot();
    await writeLog(root, 20);
    const seg = join(shardDir(root), segmentFileName(0));
    await rm(join(shardDir(root), DURABLE_MARK_FILE));
    const bytes = await readFile(seg);
    const at = SEGMENT_HEADER_BYTES + 5 * RECORD;
    bytes.fill(0, at, at + 2 * RECORD);
    await writeFile(seg, bytes);
    await expectCorruption(root, 'RecordHeaderChecksum', 0, at);
  });

  it('interior_corruption_refuses_to_open_and_names_the_position', async () => {
    const root = await scratchRoot();
    await writeLog(root, 20);
    const seg = join(shardDir(root), segmentFileName(0));
    const bytes = await readFile(seg);
    const at = SEGMENT_HEADER_BYTES + 6 * RECORD;
    bytes[at + 28 + 50]! ^= 0x01; // one bit of record 6's payload
    await writeFile(seg, bytes);
    await expectCorruption(root, 'RecordChecksum', 0, at);
    bytes[at + 28 + 50]! ^= 0x01;
    bytes[at + 9]! ^= 0x80; // one bit of record 6's offset field
    await writeFile(seg, bytes);
    await expectCorruption(root, 'RecordHeaderChecksum', 0, at);
  });

  it('verify_all_on_open_refuses_rot_inside_a_sealed_segment', async () => {
    const root = await scratchRoot();
    const opts = { segmentBytes: 4096, indexSpacingBytes: 512 };
    const log = await openLog(root, opts);
    for (let i = 0; i < 120; i++) await log.append([payload(i, 100)]);
    await log.close();
    const seg = join(shardDir(root), segmentFileName(0));
    const bytes = await readFile(seg);
    const at = SEGMENT_HEADER_BYTES + 2 * RECORD;
    bytes[at + 28 + 3]! ^= 0x08; // before segment 0's last index entry: open alone skips it
    await writeFile(seg, bytes);
    const quick = await openLog(root, opts);
    await quick.close();
    const err = await openLog(root, { ...opts, verifyAllOnOpen: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptionError);
    expect((err as CorruptionError).site).toEqual({
      shardDir: shardDir(root),
      segmentId: 0,
      position: at,
    });
  });

  it('damage_inside_the_durable_mark_is_never_cut_away', async () => {
    const root = await scratchRoot();
    await writeLog(root, 20);
    const seg = join(shardDir(root), segmentFileName(0));
    // The mark says all 20 records were synced, so a missing tail is damage, not a torn write.
    const size = (await stat(seg)).size;
    await truncate(seg, size - 50);
    await expectCorruption(root, 'Truncated', 0, SEGMENT_HEADER_BYTES + 19 * RECORD);
  });

  it('anything_past_the_durable_mark_is_repaired', async () => {
    const root = await scratchRoot();
    await writeLog(root, 20);
    const dir = shardDir(root);
    const seg = join(dir, segmentFileName(0));
    // Unsynced appends after the mark, the middle one rotten: cut from the rotten record on,
    // which inside the mark would refuse to open.
    const more = [20, 21, 22].map((i) => encodeRecord(i, 1, payload(i, 100)));
    more[1]![40]! ^= 0xff;
    for (const r of more) await appendFile(seg, r);
    const log = await openLog(root);
    expect(log.tailOffset).toBe(21);
    expect(
      log.recovered.some((a) => a.kind === 'truncate' && a.reason.includes('durable mark')),
    ).toBe(true);
    await log.close();
  });

  it('a_log_with_more_segments_than_the_fd_limit_opens', async () => {
    const root = await scratchRoot();
    const fdLimit = 400; // above the sealed files reads keep open, below the segment count
    const log = await openLog(root, { fsync: 'none', segmentBytes: 4096, preallocateBytes: 0 });
    const records = 1200;
    for (let i = 0; i < records; i++) await log.append([payload(i, 1900)]);
    const segments = log.segmentCount;
    await log.close();
    expect(segments).toBeGreaterThan(fdLimit);
    // A process of its own, under the low limit: its open plans recovery over every segment.
    const { stdout } = await promisify(execFile)(
      'sh',
      [
        '-c',
        `ulimit -n ${fdLimit} && exec "$0" --import tsx "$1" "$2"`,
        process.execPath,
        READ_BACK,
        root,
      ],
      { cwd: REPO, timeout: 60_000 },
      // A failed child printed what failed: the comparison below shows it.
    ).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? String(err) }));
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
      records,
      last: text(payload(records - 1, 1900).subarray(0, 16)),
      segments,
    });
  });

  it('an_offset_gap_between_segments_refuses_to_open', async () => {
    const root = await scratchRoot();
    await writeLog(root, 120, 4096);
    const dir = shardDir(root);
    await rm(join(dir, segmentFileName(1)));
    await rm(join(dir, indexFileName(1)));
    const plan = await planRecovery(nodeIo, dir, { indexSpacingBytes: 4096 }).catch(
      (e: unknown) => e,
    );
    expect(plan).toBeInstanceOf(CorruptionError);
    expect((plan as CorruptionError).kind).toBe('OffsetOutOfOrder');
    expect((plan as CorruptionError).site.segmentId).toBe(2);
    expect((plan as CorruptionError).detail).toMatch(/expected \d+, found \d+/);
  });

  it('a_bad_segment_header_refuses_to_open', async () => {
    const root = await scratchRoot();
    await writeLog(root, 120, 4096);
    const seg = join(shardDir(root), segmentFileName(1));
    const bytes = await readFile(seg);
    bytes[12]! ^= 0x04; // base offset bit
    await writeFile(seg, bytes);
    await expectCorruption(root, 'SegmentHeaderChecksum', 1, 24);
  });

  it('a_blank_newest_segment_left_by_an_unfinished_roll_is_discarded', async () => {
    const root = await scratchRoot();
    const expected = await writeLog(root, 10);
    const dir = shardDir(root);
    await writeFile(join(dir, segmentFileName(1)), new Uint8Array(20));
    const log = await openLog(root);
    expect(log.recovered).toContainEqual(expect.objectContaining({ kind: 'delete', segmentId: 1 }));
    expect(await readAll(log)).toEqual(expected);
    expect((await log.append([payload(10, 100)])).first).toBe(10);
    await log.close();
  });

  it('an_empty_segment_between_two_that_meet_is_deleted', async () => {
    const root = await scratchRoot();
    const expected = await writeLog(root, 60, 4096);
    const dir = shardDir(root);
    // Renumber the newest segment and leave an empty file where it was (a lost roll race).
    const names = (await readdir(dir)).filter((n) => n.endsWith('.log')).sort();
    const last = names.length - 1;
    const lastBytes = await readFile(join(dir, names[last]!));
    await writeFile(join(dir, segmentFileName(last + 1)), lastBytes);
    await writeFile(join(dir, names[last]!), new Uint8Array(0));
    await rm(join(dir, DURABLE_MARK_FILE));
    const log = await openLog(root, { segmentBytes: 4096 });
    expect(log.recovered).toContainEqual(
      expect.objectContaining({ kind: 'delete', segmentId: last }),
    );
    expect(await readAll(log)).toEqual(expected);
    await log.close();
  });

  it('a_blank_only_segment_restarts_an_empty_log', async () => {
    const root = await scratchRoot();
    const first = await openLog(root);
    await first.close();
    const dir = shardDir(root);
    await writeFile(join(dir, segmentFileName(0)), new Uint8Array(SEGMENT_HEADER_BYTES));
    await rm(join(dir, DURABLE_MARK_FILE));
    const log = await openLog(root);
    expect(log.tailOffset).toBe(0);
    expect((await log.append([payload(0)])).first).toBe(0);
    await log.close();
  });

  it('a_newest_segment_whose_header_reads_as_zeros_over_records_refuses_to_open', async () => {
    // Segment 1 holds acknowledged (synced) records 7.. when its first sector is lost. A header
    // is synced before any record goes in, so no unfinished roll leaves zeros there with data
    // behind them; the durable mark on disk still names segment 0, as a power loss soon after
    // the roll leaves it (the roll's mark for segment 1 is not synced). The only segment in
    // the same state refuses to open; segment 1 must not be deleted with its records either.
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096 });
    let i = 0;
    while (log.segmentCount < 2 || log.tailOffset < 12) await log.append([payload(i++, 500)]);
    const tail = log.tailOffset;
    await log.close();
    const dir = shardDir(root);
    const seg0 = (await stat(join(dir, segmentFileName(0)))).size;
    const seg1Path = join(dir, segmentFileName(1));
    const seg1 = await readFile(seg1Path);
    seg1.fill(0, 0, SEGMENT_HEADER_BYTES);
    await writeFile(seg1Path, seg1);
    await writeFile(
      join(dir, DURABLE_MARK_FILE),
      encodeDurableMark({ segmentId: 0, syncedBytes: seg0 }),
    );
    const reopened = await openLog(root, { segmentBytes: 4096 }).then(
      async (l) => {
        const state = { tail: l.tailOffset, recovered: l.recovered };
        await l.close();
        return state;
      },
      (e: unknown) => e,
    );
    expect(reopened, `records up to ${tail} were acknowledged`).toBeInstanceOf(CorruptionError);
  });

  it('generation_start_records_are_skipped_but_consume_offsets', async () => {
    const root = await scratchRoot();
    const first = await openLog(root);
    await first.close();
    const dir = shardDir(root);
    // A version 4 segment as a replicating writer lays it out: base 100, a generation start.
    const gen = new Uint8Array(8);
    new DataView(gen.buffer).setBigUint64(0, 7n);
    const parts = [
      encodeSegmentHeader({ baseOffset: 100, createdAtMicros: 5, version: 4 }),
      encodeRecord(100, 10, payload(100)),
      encodeRecord(101, 11, gen, { flags: FLAG_GENERATION_START }),
      encodeRecord(102, 12, payload(102)),
    ];
    await writeFile(join(dir, segmentFileName(0)), Buffer.concat(parts));
    await rm(join(dir, indexFileName(0)));
    await rm(join(dir, DURABLE_MARK_FILE));
    const log = await openLog(root);
    expect(log.baseOffset).toBe(100);
    expect(log.tailOffset).toBe(103);
    const r = await log.read(100);
    expect(r.kind === 'records' && r.records.map((x) => x.offset)).toEqual([100, 102]);
    const fromGen = await log.read(101);
    expect(fromGen.kind === 'records' && fromGen.records.map((x) => x.offset)).toEqual([102]);
    expect((await log.append([payload(103)])).first).toBe(103);
    await log.close();
  });
});
