/**
 * Goal: whatever damage a log's files take, open either repairs a tail (only where that is
 * allowed) or refuses with CorruptionError; it never throws anything else, and no record that
 * reads back differs from what was written.
 * Method: a valid multi-segment log is written once; fast-check applies random bit flips,
 * truncations, zero runs and appended bytes to copies of its files (with and without the
 * durable mark), reopens each copy and reads everything back.
 */
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '@felix/testing-harness';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CorruptionError } from '../src/errors.js';
import { DURABLE_MARK_FILE } from '../src/log/layout.js';
import { SegmentLog } from '../src/log/segment-log.js';
import { SHARD, payload, shardDir } from './helpers.js';

const RECORDS = 60;
const sizeOf = (i: number) => 40 + ((i * 37) % 200);
let template: Map<string, Buffer>;
let scratch: { path: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  scratch = await tempDir('felix-fuzz-');
  const root = join(scratch.path, 'template');
  const log = await SegmentLog.open({ root, shard: SHARD, fsync: 'none', segmentBytes: 4096 });
  for (let i = 0; i < RECORDS; i++) await log.append([payload(i, sizeOf(i))]);
  await log.close();
  template = new Map();
  for (const name of await readdir(shardDir(root))) {
    template.set(name, await readFile(join(shardDir(root), name)));
  }
});

afterAll(async () => {
  await scratch.cleanup();
});

const mutation = fc.oneof(
  fc.record({
    kind: fc.constant('flip' as const),
    file: fc.nat(),
    at: fc.nat(),
    bit: fc.nat({ max: 7 }),
  }),
  fc.record({ kind: fc.constant('truncate' as const), file: fc.nat(), cut: fc.nat({ max: 600 }) }),
  fc.record({
    kind: fc.constant('zeros' as const),
    file: fc.nat(),
    at: fc.nat(),
    length: fc.integer({ min: 1, max: 2000 }),
  }),
  fc.record({
    kind: fc.constant('append' as const),
    file: fc.nat(),
    bytes: fc.uint8Array({ maxLength: 300 }),
  }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function damage(files: Map<string, Buffer>, names: string[], m: Mutation): void {
  const name = names[m.file % names.length]!;
  const bytes = files.get(name)!;
  if (m.kind === 'flip') {
    if (bytes.length === 0) return;
    const copy = Buffer.from(bytes);
    copy[m.at % copy.length]! ^= 1 << m.bit;
    files.set(name, copy);
  } else if (m.kind === 'truncate') {
    files.set(name, bytes.subarray(0, Math.max(0, bytes.length - 1 - m.cut)));
  } else if (m.kind === 'zeros') {
    if (bytes.length === 0) return;
    const copy = Buffer.from(bytes);
    const at = m.at % copy.length;
    copy.fill(0, at, Math.min(copy.length, at + m.length));
    files.set(name, copy);
  } else {
    files.set(name, Buffer.concat([bytes, m.bytes]));
  }
}

let run = 0;

describe('recovery fuzz', () => {
  it('a_damaged_log_either_repairs_an_allowed_tail_or_refuses_with_a_corruption_error', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.boolean(),
        fc.array(mutation, { minLength: 1, maxLength: 3 }),
        async (keepMark, onlyIndexes, mutations) => {
          const files = new Map(template);
          if (!keepMark) files.delete(DURABLE_MARK_FILE);
          const names = [...files.keys()]
            .filter((n) => n !== DURABLE_MARK_FILE && (!onlyIndexes || n.endsWith('.index')))
            .sort();
          for (const m of mutations) damage(files, names, m);
          const root = join(scratch.path, `run-${run++}`);
          const dir = shardDir(root);
          await mkdir(dir, { recursive: true });
          for (const [name, bytes] of files) await writeFile(join(dir, name), bytes);
          try {
            await check(root, keepMark, onlyIndexes);
          } finally {
            await rm(root, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 150 },
    );
  }, 120_000);
});

async function check(root: string, keepMark: boolean, onlyIndexes: boolean): Promise<void> {
  let log: SegmentLog;
  try {
    log = await SegmentLog.open({ root, shard: SHARD, fsync: 'none', segmentBytes: 4096 });
  } catch (err) {
    expect(err).toBeInstanceOf(CorruptionError);
    expect(onlyIndexes).toBe(false); // a damaged index alone never stops the log
    return;
  }
  try {
    const seen: number[] = [];
    let next = log.baseOffset;
    for (;;) {
      const r = await log.read(next, { maxRecords: 13 });
      expect(r.kind).toBe('records');
      if (r.kind !== 'records' || r.records.length === 0) break;
      for (const rec of r.records) {
        expect(Buffer.compare(rec.payload, payload(rec.offset, sizeOf(rec.offset)))).toBe(0);
        seen.push(rec.offset);
      }
      next = r.next;
    }
    // What reads back is a contiguous run of the original records from offset 0...
    expect(log.baseOffset).toBe(0);
    expect(seen).toEqual([...Array(seen.length).keys()]);
    expect(log.tailOffset).toBe(seen.length);
    // ...and only a log without its durable mark may have lost a tail.
    if (keepMark || onlyIndexes) expect(seen.length).toBe(RECORDS);
  } catch (err) {
    if (!(err instanceof CorruptionError)) throw err;
    expect(onlyIndexes).toBe(false);
  } finally {
    await log.close();
  }
}
