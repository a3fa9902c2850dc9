/**
 * Goal: a segment scan reaches the same verdict whatever its chunk size, so reading ahead
 * and carrying unfinished records between chunks never changes what recovery decides.
 * Method: fast-check builds segment files of random records (some larger than a chunk and
 * than the carry room), optionally damages one byte or cuts the tail, and compares a scan in
 * small chunks with one that holds the whole file at once.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nodeIo } from '../src/io/node-io.js';
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
});
