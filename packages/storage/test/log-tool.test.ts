/**
 * Goal: felix-log-tool dumps every record of any directory in the segment format, verifies
 * without writing, and names corruption the way open does.
 * Method: the tool runs in-process on real directories (one written by SegmentLog, one laid
 * out by hand with newer record kinds) with captured output; files are hashed before and
 * after verify.
 */
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DURABLE_MARK_FILE, indexFileName, segmentFileName } from '../src/log/layout.js';
import {
  FLAG_GENERATION_START,
  SEGMENT_HEADER_BYTES,
  encodeRecord,
  encodeSegmentHeader,
} from '../src/segment/format.js';
import { runLogTool } from '../src/tool/cli.js';
import { openLog, payload, scratchRoot, shardDir } from './helpers.js';

async function tool(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runLogTool(args, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}

async function snapshot(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const n of (await readdir(dir)).sort())
    files[n] = (await readFile(join(dir, n))).toString('hex');
  return files;
}

describe('felix-log-tool', () => {
  it('dump_prints_one_json_line_per_record', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096 });
    for (let i = 0; i < 50; i++) await log.append([payload(i, 120)], { timestampMicros: 1000 + i });
    await log.close();
    const { code, out } = await tool(['dump', shardDir(root)]);
    expect(code).toBe(0);
    expect(out).toHaveLength(50);
    const lines = out.map((l) => JSON.parse(l) as Record<string, unknown>);
    lines.forEach((l, i) => {
      expect(l).toEqual({
        offset: i,
        timestamp_micros: 1000 + i,
        flags: 0,
        payload: Buffer.from(payload(i, 120)).toString('base64'),
      });
    });
  });

  it('dump_reads_records_written_by_another_implementation', async () => {
    const root = await scratchRoot();
    const dir = join(root, 'foreign');
    await (await import('node:fs/promises')).mkdir(dir);
    const enc = new TextEncoder();
    const gen = new Uint8Array(8);
    await writeFile(
      join(dir, segmentFileName(3)),
      Buffer.concat([
        encodeSegmentHeader({ baseOffset: 40, createdAtMicros: 1, version: 6 }),
        encodeRecord(40, 5, gen, { flags: FLAG_GENERATION_START }),
        encodeRecord(41, 6, enc.encode('a'), {
          tag: { producerId: 2n ** 63n + 5n, sequence: 9n, count: 2 },
        }),
        encodeRecord(42, 6, enc.encode('b'), {
          flags: 0x4000_0000,
          publisher: enc.encode('alice'),
        }),
      ]),
    );
    const { code, out } = await tool(['dump', dir]);
    expect(code).toBe(0);
    const lines = out.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.offset)).toEqual([40, 41, 42]);
    expect(lines[0]?.flags).toBe(FLAG_GENERATION_START);
    expect(lines[1]?.producer).toEqual({
      producer_id: '9223372036854775813',
      sequence: '9',
      count: 2,
    });
    expect(lines[1]?.payload).toBe(Buffer.from('a').toString('base64'));
    expect(lines[2]?.publisher).toBe(Buffer.from('alice').toString('base64'));
    expect(lines[2]?.payload).toBe(Buffer.from('b').toString('base64'));
  });

  it('verify_summarises_a_clean_log_and_names_corruption_without_writing', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096 });
    for (let i = 0; i < 80; i++) await log.append([payload(i, 120)]);
    await log.close();
    const dir = shardDir(root);
    const clean = await tool(['verify', dir]);
    expect(clean.code).toBe(0);
    expect(clean.out[0]).toMatch(/^ok: \d+ segments, 80 records, base 0, tail 80, \d+ bytes$/);
    // Rot one payload byte inside the first (sealed) segment, which open alone would not scan.
    const seg = join(dir, segmentFileName(0));
    const bytes = await readFile(seg);
    const at = SEGMENT_HEADER_BYTES + 3 * (28 + 120);
    bytes[at + 28 + 7]! ^= 0x20;
    await writeFile(seg, bytes);
    await rm(join(dir, indexFileName(1)));
    const before = await snapshot(dir);
    const bad = await tool(['verify', dir]);
    expect(bad.code).toBe(1);
    expect(bad.err[0]).toBe(
      `corrupt: RecordChecksum in ${dir} segment 0 at byte ${at}: record at offset 3`,
    );
    expect(await snapshot(dir)).toEqual(before);
    expect(before[DURABLE_MARK_FILE]).toBeDefined();
  });
});
