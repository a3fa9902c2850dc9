/**
 * A sorted set of offsets in chunks (each sorted, each above the one before), so an insert or a
 * delete moves at most one chunk's entries, finding the chunk and the place in it are binary
 * searches, and reading the next `n` above an offset costs log(size) + n. About 8 bytes an
 * offset (a JS array of numbers), up to twice that while chunks are half empty.
 */
import { DEAD_LETTER_INDEX_CHUNK_ENTRIES } from '../limits.js';

/** The first index in the sorted `xs` whose value is above `x` (`strict`) or at least `x`. */
function searchUp(xs: readonly number[], x: number, strict: boolean): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const v = xs[mid]!;
    if (v < x || (strict && v === x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class SortedOffsets {
  private readonly chunks: number[][] = [];
  private count = 0;

  /** From offsets in any order (duplicates kept once). */
  static of(offsets: number[]): SortedOffsets {
    const set = new SortedOffsets();
    offsets.sort((a, b) => a - b);
    let chunk: number[] = [];
    for (const o of offsets) {
      if (chunk.length > 0 && chunk[chunk.length - 1] === o) continue;
      if (chunk.length === DEAD_LETTER_INDEX_CHUNK_ENTRIES) {
        set.chunks.push(chunk);
        chunk = [];
      }
      chunk.push(o);
      set.count++;
    }
    if (chunk.length > 0) set.chunks.push(chunk);
    return set;
  }

  get size(): number {
    return this.count;
  }

  /** Adds `offset`; answers false when it was there. */
  add(offset: number): boolean {
    if (this.chunks.length === 0) {
      this.chunks.push([offset]);
      this.count++;
      return true;
    }
    // The chunk whose last entry is at least `offset`, else the last (the offset is above all).
    const c = Math.min(this.chunkFor(offset), this.chunks.length - 1);
    const chunk = this.chunks[c]!;
    const at = searchUp(chunk, offset, false);
    if (chunk[at] === offset) return false;
    chunk.splice(at, 0, offset);
    this.count++;
    if (chunk.length > 2 * DEAD_LETTER_INDEX_CHUNK_ENTRIES) {
      this.chunks.splice(c + 1, 0, chunk.splice(DEAD_LETTER_INDEX_CHUNK_ENTRIES));
    }
    return true;
  }

  /** Removes `offset`; answers false when it was not there. */
  delete(offset: number): boolean {
    const c = this.chunkFor(offset);
    const chunk = this.chunks[c];
    if (chunk === undefined) return false;
    const at = searchUp(chunk, offset, false);
    if (chunk[at] !== offset) return false;
    chunk.splice(at, 1);
    this.count--;
    if (chunk.length === 0) this.chunks.splice(c, 1);
    return true;
  }

  /** Up to `max` offsets strictly above `after`, lowest first. */
  above(after: number, max: number): number[] {
    const out: number[] = [];
    let c = this.chunkFor(after);
    let at = c < this.chunks.length ? searchUp(this.chunks[c]!, after, true) : 0;
    for (; c < this.chunks.length && out.length < max; c++, at = 0) {
      const chunk = this.chunks[c]!;
      for (; at < chunk.length && out.length < max; at++) out.push(chunk[at]!);
    }
    return out;
  }

  /** The first chunk whose last entry is at least `offset` (the chunk count when none is). */
  private chunkFor(offset: number): number {
    let lo = 0;
    let hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = this.chunks[mid]!;
      if (chunk[chunk.length - 1]! < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
