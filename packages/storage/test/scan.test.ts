/**
 * Goal: a segment scan reaches the same verdict whatever its chunk size, so reading ahead
 * and carrying unfinished records between chunks never changes what recovery decides.
 * Method: fast-check builds segment files of random records (some larger than a chunk and
 * than the carry room), optionally damages one byte or cuts the tail, and compares a scan in
 * small chunks with one that holds the whole file at once. A second property puts a zero
 * tail (a preallocated segment's unused bytes) after whole or torn records.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nodeIo } from '../src/io/node-io.js';
import { ZERO_TAIL_BLOCK_BYTES } from '../src/limits.js';
import { SEGMENT_HEADER_BYTES, encodeRecord, encodeSegmentHeader } from '../src/segment/format.js';
import { ScanBuffer, scanSegment } from '../src/segment/scan.js';
import { SparseIndex } from '../src/segment/sparse-index.js';
import { scratchRoot } from './helpers.js';

describe('segment scan', () => {
  it('a_scan_reaches_the_same_verdict_whatever_its_chunk_size', async () => {
    const root = await scratchRoot();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            { weight: 20, arbitrary: fc.nat({ max: 3000 }) },
            { weight: 1, arbitrary: fc.constant(300_000) },
          ),
          {
            minLength: 1,
            maxLength: 40,
          },
        ),
        fc.integer({ min: 29, max: 20_000 }),
        fc.option(fc.tuple(fc.nat(), fc.constantFrom('flip', 'cut', 'zeros')), { nil: undefined }),
        async (sizes, chunk, damage) => {
          const parts = [encodeSegmentHeader({ baseOffset: 50, createdAtMicros: 1 })];
          sizes.forEach((size, i) => {
            parts.push(encodeRecord(50 + i, i, new Uint8Array(size).fill(i & 0xff)));
          });
          let bytes = Buffer.concat(parts);
          if (damage !== undefined) {
            const at = SEGMENT_HEADER_BYTES + (damage[0] % (bytes.length - SEGMENT_HEADER_BYTES));
            if (damage[1] === 'flip') bytes[at]! ^= 0x10;
            else if (damage[1] === 'cut') bytes = bytes.subarray(0, at);
            else bytes.fill(0, at);
          }
          const path = join(root, `seg-${n++}.log`);
          await writeFile(path, bytes);
          const file = await nodeIo.open(path, 'read');
          try {
            const scan = async (buffer: ScanBuffer) => {
              const index = new SparseIndex(50, 4096);
              const r = await scanSegment(
                file,
                bytes.length,
                { position: SEGMENT_HEADER_BYTES, expectedOffset: 50, version: 3, index },
                buffer,
              );
              return { r, index: Buffer.from(index.encode()).toString('hex') };
            };
            const whole = await scan(new ScanBuffer(bytes.length + 1));
            const small = await scan(new ScanBuffer(chunk));
            expect(small).toEqual(whole);
            if (damage === undefined) {
              expect(whole.r.records).toBe(sizes.length);
              expect(whole.r.endPosition).toBe(bytes.length);
            }
          } finally {
            await file.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a_zero_tail_ends_the_data_and_never_hides_a_torn_record', async () => {
    const root = await scratchRoot();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat({ max: 2000 }), { minLength: 1, maxLength: 30 }),
        fc.nat(),
        fc.integer({ min: 1, max: 20_000 }),
        fc.integer({ min: 29, max: 20_000 }),
        async (sizes, cutAt, zeros, chunk) => {
          const parts = [encodeSegmentHeader({ baseOffset: 7, createdAtMicros: 1 })];
          const ends: number[] = [];
          let at = SEGMENT_HEADER_BYTES;
          sizes.forEach((size, i) => {
            const rec = encodeRecord(7 + i, i, new Uint8Array(size).fill((i % 255) + 1));
            parts.push(rec);
            at += rec.length;
            ends.push(at);
          });
          const records = Buffer.concat(parts);
          // Keep the records up to any byte (a whole record or part of one), then zeros.
          const cut = SEGMENT_HEADER_BYTES + (cutAt % (records.length - SEGMENT_HEADER_BYTES + 1));
          const bytes = Buffer.concat([records.subarray(0, cut), new Uint8Array(zeros)]);
          const whole = ends.filter((e) => e <= cut).length;
          const boundary = whole === 0 ? SEGMENT_HEADER_BYTES : ends[whole - 1]!;
          const path = join(root, `zero-${n++}.log`);
          await writeFile(path, bytes);
          const file = await nodeIo.open(path, 'read');
          try {
            const r = await scanSegment(
              file,
              bytes.length,
              { position: SEGMENT_HEADER_BYTES, expectedOffset: 7, version: 3 },
              new ScanBuffer(chunk),
            );
            // Every whole record before the zeros is kept, nothing past them is made up.
            expect(r.records).toBe(whole);
            expect(r.nextOffset).toBe(7 + whole);
            expect(r.endPosition).toBe(boundary);
            expect(r.damage?.position).toBe(boundary);
            const torn = bytes.subarray(boundary, cut);
            if (torn.every((b) => b === 0)) {
              // Nothing of the next record was written: the data simply ends here.
              expect(r.damage?.allZero).toBe(true);
              expect(r.damage?.zeroTail).toBe(true);
            } else {
              // Part of a record was written: never taken for a clean end. It is a lost-block
              // tail only when its zeros start on a block boundary inside the record.
              expect(r.damage?.allZero).toBe(false);
              let last = cut - 1;
              while (bytes[last] === 0) last--;
              const zeroStart = last + 1;
              expect(r.damage?.zeroTail).toBe(
                zeroStart % ZERO_TAIL_BLOCK_BYTES === 0 && zeroStart < ends[whole]!,
              );
            }
          } finally {
            await file.close();
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
