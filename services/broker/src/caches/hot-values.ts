/**
 * A bounded map of current cache values in front of the LogCache shards, least recently used
 * out first (approximately: a clock), so a get of a hot key answers from memory instead of
 * reading the log. Each value is held as the encoded head of its `cache_value` answer
 * (value-answer.ts, with its frame header), so a hit encodes nothing.
 *
 * It is only ever a copy: every write to the shard goes through the broker, which calls
 * `beginWrite` when the write starts and `endWrite` when it ends; each moves the key's
 * generation. A value read from the log is remembered only if the generation did not move while
 * it was read, so a read racing a write can never leave a stale value behind. A write that
 * succeeded leaves its own value behind only when no other write to the key began, ended or was
 * in flight since it began: then nothing can have replaced it. Expiry is checked on every hit
 * against the value's own absolute expiry.
 */
import { HOT_GENERATIONS_MAX } from '../limits.js';

export interface Hot {
  /** The `cache_value` answer's frame header and UTF-8 JSON up to its request id (value-answer.ts). */
  head: Uint8Array;
  /** Absolute expiry in ms, 0 for none; never later than the stored value's own. */
  expiresAtMillis: number;
}

interface Slot extends Hot {
  /** Hit since it was last placed at the recent end (its second chance at eviction). */
  hit: boolean;
}

/** A point in a key's write history: pass it back to `remember` or `endWrite`. */
export interface HotMark {
  era: number;
  gen: number;
}

export class HotValues {
  private readonly values = new Map<string, Slot>();
  private readonly generations = new Map<string, number>();
  /** Writes in flight per key (an entry only while one is); HOT_GENERATIONS_MAX bounds it too. */
  private readonly writing = new Map<string, number>();
  /** Bumped when the generation map is cleared (its bound): every mark before it is void. */
  private era = 0;
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** The remembered value, or undefined (not remembered, or expired). */
  get(key: string, nowMs: number): Hot | undefined {
    const hot = this.values.get(key);
    if (hot === undefined) return undefined;
    if (hot.expiresAtMillis !== 0 && hot.expiresAtMillis <= nowMs) {
      this.drop(key);
      return undefined;
    }
    // Marked, not moved: eviction gives a hit slot a second chance (a clock), so a hit costs no
    // map delete and re-insert.
    hot.hit = true;
    return hot;
  }

  /** The key's generation now; pass it to `remember` after the read. */
  capture(key: string): HotMark {
    return { era: this.era, gen: this.generations.get(key) ?? 0 };
  }

  /** Remembers a value read from the log, unless a write to the key started since `at`. */
  remember(key: string, at: HotMark, hot: Hot): void {
    if (this.maxBytes === 0 || at.era !== this.era) return;
    if ((this.generations.get(key) ?? 0) !== at.gen) return;
    const size = hot.head.byteLength + key.length;
    if (size > this.maxBytes / 4) return;
    this.drop(key);
    this.values.set(key, { head: hot.head, expiresAtMillis: hot.expiresAtMillis, hit: false });
    this.bytes += size;
    this.evict();
  }

  /** A write to `key` starts: its value is forgotten. Pass the mark to `endWrite`. */
  beginWrite(key: string): HotMark {
    this.invalidate(key);
    if (this.writing.size >= HOT_GENERATIONS_MAX && !this.writing.has(key)) {
      // Bounded: void every mark (no write in flight can then leave its value) and start over.
      this.clear();
      this.writing.clear();
    }
    this.writing.set(key, (this.writing.get(key) ?? 0) + 1);
    return this.capture(key);
  }

  /**
   * The write that `beginWrite` answered `begun` for has ended. `written` is the value it left
   * (absent when it failed or left none); it is remembered only if the write was alone.
   */
  endWrite(key: string, begun: HotMark, written?: Hot): void {
    const left = (this.writing.get(key) ?? 1) - 1;
    if (left > 0) this.writing.set(key, left);
    else this.writing.delete(key);
    const alone =
      left === 0 && begun.era === this.era && (this.generations.get(key) ?? 0) === begun.gen;
    this.invalidate(key);
    if (alone && written !== undefined) this.remember(key, this.capture(key), written);
  }

  /** Forgets the key's value and moves its generation (a write starts or ends). */
  invalidate(key: string): void {
    this.drop(key);
    // Bounded: forget every generation at once and void every read in flight instead.
    if (this.generations.size >= HOT_GENERATIONS_MAX && !this.generations.has(key)) this.clear();
    this.generations.set(key, (this.generations.get(key) ?? 0) + 1);
  }

  /** Forgets every value and voids every read and write in flight (a cache was deleted). */
  clear(): void {
    this.generations.clear();
    this.values.clear();
    this.bytes = 0;
    this.era++;
  }

  /** Least recently placed out first; a slot hit since it was placed moves to the end once. */
  private evict(): void {
    // Each turn evicts a slot or clears a mark, so this ends within two passes over the map.
    while (this.bytes > this.maxBytes) {
      const oldest = this.values.entries().next();
      if (oldest.done) return;
      const [k, slot] = oldest.value;
      this.values.delete(k);
      if (slot.hit) {
        slot.hit = false;
        this.values.set(k, slot);
      } else {
        this.bytes -= slot.head.byteLength + k.length;
      }
    }
  }

  private drop(key: string): void {
    const hot = this.values.get(key);
    if (hot === undefined) return;
    this.values.delete(key);
    this.bytes -= hot.head.byteLength + key.length;
  }
}
