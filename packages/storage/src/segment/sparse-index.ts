/**
 * The sparse index of one segment (reference §3.5): a 24-byte `FLSI` header and 16-byte
 * `(offset, position)` entries, the first record plus one record every `spacing` bytes.
 * Indexes are never trusted: they only pick where a scan starts, and one that fails any check
 * is rebuilt from the segment. The entry rule depends only on record positions, so an index
 * rebuilt by a scan is byte-identical to one built while appending.
 */
import { SEGMENT_HEADER_BYTES, readU64, viewOf, writeU64 } from './format.js';

export const INDEX_MAGIC = 0x464c5349; // "FLSI"
export const INDEX_HEADER_BYTES = 24;
export const INDEX_ENTRY_BYTES = 16;
export const INDEX_VERSION_WRITTEN = 3;

export class SparseIndex {
  readonly offsets: number[] = [];
  readonly positions: number[] = [];

  constructor(
    readonly baseOffset: number,
    readonly spacing: number,
  ) {}

  get length(): number {
    return this.offsets.length;
  }

  /** Offers a record; it becomes an entry when the spacing rule says so. Returns whether it did. */
  offer(offset: number, position: number): boolean {
    const n = this.positions.length;
    if (n > 0 && position < this.positions[n - 1]! + this.spacing) return false;
    this.offsets.push(offset);
    this.positions.push(position);
    return true;
  }

  /** Drops entries at or past `position` (after a tail repair or a failed write). */
  truncateAt(position: number): void {
    let n = this.positions.length;
    while (n > 0 && this.positions[n - 1]! >= position) n--;
    this.offsets.length = n;
    this.positions.length = n;
  }

  /** Position to start scanning for `offset`: the greatest entry at or below it. */
  lookup(offset: number): { offset: number; position: number } {
    let lo = 0;
    let hi = this.offsets.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.offsets[mid]! <= offset) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (found < 0) return { offset: this.baseOffset, position: SEGMENT_HEADER_BYTES };
    return { offset: this.offsets[found]!, position: this.positions[found]! };
  }

  last(): { offset: number; position: number } | undefined {
    const n = this.offsets.length;
    if (n === 0) return undefined;
    return { offset: this.offsets[n - 1]!, position: this.positions[n - 1]! };
  }

  /** The whole index file. */
  encode(): Uint8Array {
    const out = new Uint8Array(INDEX_HEADER_BYTES + this.offsets.length * INDEX_ENTRY_BYTES);
    const v = viewOf(out);
    v.setUint32(0, INDEX_MAGIC);
    v.setUint16(4, INDEX_VERSION_WRITTEN);
    v.setUint16(6, 0);
    writeU64(v, 8, this.baseOffset);
    writeU64(v, 16, 0);
    this.encodeEntries(out, INDEX_HEADER_BYTES, 0, this.offsets.length);
    return out;
  }

  /** Entries `[from, to)` as bytes, for appending to the index file. */
  encodeRange(from: number, to: number): Uint8Array {
    const out = new Uint8Array((to - from) * INDEX_ENTRY_BYTES);
    this.encodeEntries(out, 0, from, to);
    return out;
  }

  private encodeEntries(out: Uint8Array, at: number, from: number, to: number): void {
    const v = viewOf(out);
    for (let i = from; i < to; i++) {
      const p = at + (i - from) * INDEX_ENTRY_BYTES;
      writeU64(v, p, this.offsets[i]!);
      writeU64(v, p + 8, this.positions[i]!);
    }
  }

  /**
   * Reads an index file for a segment with the given base and size. Returns null when anything
   * is off (the caller rebuilds); a torn final entry is ignored.
   */
  static decode(
    bytes: Uint8Array,
    baseOffset: number,
    segmentBytes: number,
    spacing: number,
  ): SparseIndex | null {
    if (bytes.length < INDEX_HEADER_BYTES) return null;
    const v = viewOf(bytes);
    if (v.getUint32(0) !== INDEX_MAGIC) return null;
    const version = v.getUint16(4);
    if (version < 2 || version > 4 || v.getUint16(6) !== 0) return null;
    if (readU64(v, 8) !== baseOffset) return null;
    const index = new SparseIndex(baseOffset, spacing);
    const count = Math.floor((bytes.length - INDEX_HEADER_BYTES) / INDEX_ENTRY_BYTES);
    let prevOffset = -1;
    let prevPosition = -1;
    for (let i = 0; i < count; i++) {
      const p = INDEX_HEADER_BYTES + i * INDEX_ENTRY_BYTES;
      const offset = readU64(v, p);
      const position = readU64(v, p + 8);
      if (offset <= prevOffset || position <= prevPosition || offset < baseOffset) return null;
      if (position < SEGMENT_HEADER_BYTES || position >= segmentBytes) return null;
      if (i === 0 && (offset !== baseOffset || position !== SEGMENT_HEADER_BYTES)) return null;
      index.offsets.push(offset);
      index.positions.push(position);
      prevOffset = offset;
      prevPosition = position;
    }
    return index;
  }
}
