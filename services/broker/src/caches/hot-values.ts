/**
 * A bounded, least-recently-used map of current cache values in front of a LogCache shard, so a
 * get of a hot key answers from memory instead of reading the log. It is only ever a copy: every
 * write to the shard goes through the broker, which bumps the key's generation when the write
 * starts and again when it ends; a value read from the log is remembered only if the key's
 * generation did not move while it was read, so a read racing a write can never leave a stale
 * value behind. Expiry is checked on every hit against the value's own absolute expiry.
 */
import { HOT_GENERATIONS_MAX } from '../limits.js';

interface Hot {
  value: Uint8Array;
  expiresAtMillis: number;
}

export class HotValues {
  private readonly values = new Map<string, Hot>();
  private readonly generations = new Map<string, number>();
  /** Bumped when the generation map is cleared (its bound): every capture before it is void. */
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
    // Refresh its place in the recency order.
    this.values.delete(key);
    this.values.set(key, hot);
    return hot;
  }

  /** The key's generation now; pass it to `remember` after the read. */
  capture(key: string): { era: number; gen: number } {
    return { era: this.era, gen: this.generations.get(key) ?? 0 };
  }

  /** Remembers a value read from the log, unless a write to the key started since `at`. */
  remember(key: string, at: { era: number; gen: number }, hot: Hot): void {
    if (this.maxBytes === 0 || at.era !== this.era) return;
    if ((this.generations.get(key) ?? 0) !== at.gen) return;
    const size = hot.value.byteLength + key.length;
    if (size > this.maxBytes / 4) return;
    this.drop(key);
    this.values.set(key, hot);
    this.bytes += size;
    for (const [k] of this.values) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(k);
    }
  }

  /** A write to `key` starts or ends: forget its value and move its generation. */
  invalidate(key: string): void {
    this.drop(key);
    if (this.generations.size >= HOT_GENERATIONS_MAX && !this.generations.has(key)) {
      // Bounded: forget every generation at once and void every read in flight instead.
      this.generations.clear();
      this.values.clear();
      this.bytes = 0;
      this.era++;
    }
    this.generations.set(key, (this.generations.get(key) ?? 0) + 1);
  }

  private drop(key: string): void {
    const hot = this.values.get(key);
    if (hot === undefined) return;
    this.values.delete(key);
    this.bytes -= hot.value.byteLength + key.length;
  }
}
