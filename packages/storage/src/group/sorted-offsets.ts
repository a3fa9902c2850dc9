/**
 * A sorted set of offsets in chunks (each sorted, each above the one before), so an insert or a
 * delete moves at most one chunk's entries, finding the chunk and the place in it are binary
 * searches, and reading the next `n` above an offset costs log(size) + n. About 9 bytes an
 * offset (a JS array of numbers). A spliced array keeps the room it grew to, so a chunk deletes
 * left under a quarter of its room is copied afresh (merged with a neighbour when it is small):
 * the room held stays within a few times the offsets, whatever was deleted.
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

/** `xs` copied as two halves. */
function halves(xs: number[]): number[][] {
  const half = xs.length >>> 1;
  return [xs.slice(0, half), xs.slice(half)];
}

export class SortedOffsets {
  private readonly chunks: number[][] = [];
  /** Per chunk, the most entries it held since it was last copied (what its array has room for). */
  private readonly room: number[] = [];
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
    for (const c of set.chunks) set.room.push(c.length);
    return set;
  }

  get size(): number {
    return this.count;
  }

  /** Adds `offset`; answers false when it was there. */
  add(offset: number): boolean {
    if (this.chunks.length === 0) {
      this.place(0, 0, [[offset]]);
      this.count++;
      return true;
    }
    // The chunk whose last entry is at least `offset`, else the last (the offset is above all).
    const c = Math.min(this.chunkFor(offset), this.chunks.length - 1);
    const chunk = this.chunks[c]!;
    const at = searchUp(chunk, offset, false);
    if (chunk[at] === offset) return false;
    this.count++;
    if (at === chunk.length && c === this.chunks.length - 1) {
      // Above every offset (dead letters mostly come in order): a full last chunk stays full.
      if (chunk.length < DEAD_LETTER_INDEX_CHUNK_ENTRIES) chunk.push(offset);
      else this.place(c + 1, 0, [[offset]]);
    } else chunk.splice(at, 0, offset);
    this.room[c] = Math.max(this.room[c]!, chunk.length);
    if (chunk.length > 2 * DEAD_LETTER_INDEX_CHUNK_ENTRIES) this.place(c, 1, halves(chunk));
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
    const small = chunk.length < DEAD_LETTER_INDEX_CHUNK_ENTRIES / 4 && this.chunks.length > 1;
    if (chunk.length === 0) this.place(c, 1, []);
    else if (small || 4 * chunk.length < this.room[c]!) this.recopy(c);
    return true;
  }

  /** Copies chunk `c` afresh, merged with a neighbour when it is small (split if that is big). */
  private recopy(c: number): void {
    const chunk = this.chunks[c]!;
    if (chunk.length >= DEAD_LETTER_INDEX_CHUNK_ENTRIES / 4 || this.chunks.length === 1) {
      this.place(c, 1, [chunk.slice()]);
      return;
    }
    const lo = c + 1 < this.chunks.length ? c : c - 1;
    const merged = this.chunks[lo]!.concat(this.chunks[lo + 1]!);
    this.place(
      lo,
      2,
      merged.length > 2 * DEAD_LETTER_INDEX_CHUNK_ENTRIES ? halves(merged) : [merged],
    );
  }

  /** Replaces `count` chunks from `at` with `parts`, each fresh (its room its length). */
  private place(at: number, count: number, parts: number[][]): void {
    this.chunks.splice(at, count, ...parts);
    this.room.splice(at, count, ...parts.map((p) => p.length));
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
