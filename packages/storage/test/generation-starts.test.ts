/**
 * Goal: the `generations` file (where each generation's records start) decodes only what was
 * encoded, answers any bytes with entries or a reason, names the generation that wrote an
 * offset, forgets what a truncation removed, and survives a reopen.
 * Method: fast-check over the pure codec (round trips, random bytes, single flipped bits); the
 * file over a temp directory.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { GenerationStartsCorruptError } from '../src/errors.js';
import { nodeIo } from '../src/io/node-io.js';
import { GENERATIONS_FILE } from '../src/log/layout.js';
import {
  GenerationStarts,
  decodeGenerationStarts,
  encodeGenerationStarts,
} from '../src/replica/generation-starts.js';

/** Strictly increasing generations with non-decreasing starts. */
const maps = fc
  .array(fc.tuple(fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 0, max: 1_000 })), {
    maxLength: 40,
  })
  .map((steps) => {
    let generation = 0;
    let start = 0;
    return steps.map(([g, s]) => {
      generation += g;
      start += s;
      return { generation, start };
    });
  });

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

describe('generation starts', () => {
  it('the_generation_starts_decoder_answers_any_bytes_with_entries_or_a_reason', () => {
    fc.assert(
      fc.property(maps, (entries) => {
        expect(decodeGenerationStarts(encodeGenerationStarts(entries))).toEqual(entries);
      }),
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const r = decodeGenerationStarts(bytes);
        expect(typeof r === 'string' || Array.isArray(r)).toBe(true);
      }),
    );
    fc.assert(
      fc.property(maps, fc.nat(), (entries, at) => {
        const bytes = encodeGenerationStarts(entries);
        const bit = at % (bytes.length * 8);
        bytes[bit >> 3]! ^= 1 << (bit & 7);
        expect(typeof decodeGenerationStarts(bytes)).toBe('string');
      }),
    );
  });

  it('a_generation_map_names_the_writer_of_each_offset_and_forgets_what_a_truncation_removed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'felix-gens-'));
    dirs.push(dir);
    const map = await GenerationStarts.open(nodeIo, dir);
    expect(map.at(5)).toEqual({ generation: 0, start: 0 });
    await map.begin(3, 0);
    await map.begin(5, 40);
    await map.begin(4, 50); // older than the last: ignored
    expect(map.at(39)).toEqual({ generation: 3, start: 0 });
    expect(map.at(40)).toEqual({ generation: 5, start: 40 });
    const again = await GenerationStarts.open(nodeIo, dir);
    expect(again.all).toEqual(map.all);
    await again.truncated(40);
    expect(again.all).toEqual([{ generation: 3, start: 0 }]);
    await again.begin(6, 40);
    expect((await GenerationStarts.open(nodeIo, dir)).at(41)).toEqual({ generation: 6, start: 40 });
    await writeFile(join(dir, GENERATIONS_FILE), 'not a map');
    await expect(GenerationStarts.open(nodeIo, dir)).rejects.toBeInstanceOf(
      GenerationStartsCorruptError,
    );
  });
});
