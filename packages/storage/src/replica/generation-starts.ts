/**
 * A shard's `generations` file: where each generation's records start in its log (the
 * per-generation start map a follower repairs divergence with, docs/replication.md "The fence
 * and divergent suffixes"). A leader records its generation's start when it opens the shard; a
 * follower records a generation's start when it first appends records of it; a truncation
 * forgets the generations whose records it removed. The record at offset `o` was written under
 * the newest generation starting at or below `o` (0: unknown, before the file knew).
 *
 *   u32 magic "FLGS", u16 version, u16 count, count × (u64 generation, u64 start),
 *   u32 CRC-32 over everything before it; all big-endian. At most GENERATION_STARTS_MAX entries
 *   (the oldest are dropped). Saved like the replica file: `generations.tmp`, fdatasync, rename,
 *   directory sync, so a crash leaves the old map or the new one.
 */
import { join } from 'node:path';
import { assert } from '@felix/common';
import { GenerationStartsCorruptError } from '../errors.js';
import { type Io, readFully, replaceFileDurably } from '../io/io.js';
import { GENERATIONS_FILE } from '../log/layout.js';
import { GENERATION_STARTS_MAX } from '../limits.js';
import { crc32Range } from '../segment/checksum.js';
import { readU64, viewOf, writeU64 } from '../segment/format.js';

export const GENERATION_STARTS_MAGIC = 0x464c4753; // "FLGS"
const VERSION = 1;
const HEADER_BYTES = 8;
const ENTRY_BYTES = 16;
const CRC_BYTES = 4;

export interface GenerationStart {
  generation: number;
  start: number;
}

export function encodeGenerationStarts(entries: readonly GenerationStart[]): Uint8Array {
  assert(entries.length <= GENERATION_STARTS_MAX, 'too many generation starts');
  const size = HEADER_BYTES + entries.length * ENTRY_BYTES + CRC_BYTES;
  const out = new Uint8Array(size);
  const v = viewOf(out);
  v.setUint32(0, GENERATION_STARTS_MAGIC);
  v.setUint16(4, VERSION);
  v.setUint16(6, entries.length);
  entries.forEach((e, i) => {
    writeU64(v, HEADER_BYTES + i * ENTRY_BYTES, e.generation);
    writeU64(v, HEADER_BYTES + i * ENTRY_BYTES + 8, e.start);
  });
  v.setUint32(size - CRC_BYTES, crc32Range(out, 0, 0, size - CRC_BYTES));
  return out;
}

/** The entries, or a reason the bytes are not a generation map (never throws). */
export function decodeGenerationStarts(bytes: Uint8Array): GenerationStart[] | string {
  if (bytes.length < HEADER_BYTES + CRC_BYTES) return `${bytes.length} bytes is too short`;
  const v = viewOf(bytes);
  if (v.getUint32(0) !== GENERATION_STARTS_MAGIC) return 'bad magic';
  if (v.getUint16(4) !== VERSION) return `unknown version ${v.getUint16(4)}`;
  const count = v.getUint16(6);
  if (count > GENERATION_STARTS_MAX) return `${count} entries exceed ${GENERATION_STARTS_MAX}`;
  const size = HEADER_BYTES + count * ENTRY_BYTES + CRC_BYTES;
  if (bytes.length !== size) return `${bytes.length} bytes, expected ${size}`;
  if (v.getUint32(size - CRC_BYTES) !== crc32Range(bytes, 0, 0, size - CRC_BYTES))
    return 'checksum mismatch';
  const out: GenerationStart[] = [];
  for (let i = 0; i < count; i++) {
    const generation = readU64(v, HEADER_BYTES + i * ENTRY_BYTES);
    const start = readU64(v, HEADER_BYTES + i * ENTRY_BYTES + 8);
    if (generation < 0 || start < 0) return 'a field exceeds the safe integer range';
    const prev = out[out.length - 1];
    if (prev && (generation <= prev.generation || start < prev.start))
      return 'entries out of order';
    out.push({ generation, start });
  }
  return out;
}

export class GenerationStarts {
  private constructor(
    private readonly io: Io,
    private readonly dir: string,
    private entries: GenerationStart[],
  ) {}

  /** Reads the shard's map (absent: empty); a present file that does not decode fails. */
  static async open(io: Io, dir: string): Promise<GenerationStarts> {
    const path = join(dir, GENERATIONS_FILE);
    if (!(await io.exists(path))) return new GenerationStarts(io, dir, []);
    const file = await io.open(path, 'read');
    let bytes: Uint8Array;
    try {
      const size = await file.size();
      // Bounded before allocating: a full map is 4 KiB and change.
      const max = HEADER_BYTES + GENERATION_STARTS_MAX * ENTRY_BYTES + CRC_BYTES;
      if (size > max) throw new GenerationStartsCorruptError(path, `${size} bytes exceed ${max}`);
      bytes = new Uint8Array(size);
      await readFully(file, bytes, 0, size, 0);
    } finally {
      await file.close();
    }
    const entries = decodeGenerationStarts(bytes);
    if (typeof entries === 'string') throw new GenerationStartsCorruptError(path, entries);
    return new GenerationStarts(io, dir, entries);
  }

  get all(): readonly GenerationStart[] {
    return this.entries;
  }

  /** The newest generation with records in the map (0 when none). */
  get last(): number {
    return this.entries[this.entries.length - 1]?.generation ?? 0;
  }

  /** The generation that wrote the record at `offset` and where it starts (0/0: unknown). */
  at(offset: number): GenerationStart {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i]!;
      if (e.start <= offset) return e;
    }
    return { generation: 0, start: 0 };
  }

  /** Records that `generation`'s records start at `start` (no-op unless newer than the last). */
  async begin(generation: number, start: number): Promise<void> {
    if (generation <= this.last) return;
    const next = [...this.entries.filter((e) => e.start < start), { generation, start }];
    await this.save(next.slice(-GENERATION_STARTS_MAX));
  }

  /** The log was cut at `offset`: generations whose records all went are forgotten. */
  async truncated(offset: number): Promise<void> {
    const next = this.entries.filter((e) => e.start < offset);
    if (next.length !== this.entries.length) await this.save(next);
  }

  private async save(entries: GenerationStart[]): Promise<void> {
    const path = join(this.dir, GENERATIONS_FILE);
    await replaceFileDurably(this.io, this.dir, path, encodeGenerationStarts(entries));
    this.entries = entries;
  }
}
