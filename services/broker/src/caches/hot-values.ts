/**
 * A bounded map of current cache values in front of the LogCache shards, least recently used
 * out first (approximately: a clock), so a get of a hot key answers from memory instead of
 * reading the log. Each value is held as the encoded head of its `cache_value` answer
 * (@felix/wire's `valueAnswerHead`, with its frame header), so a hit encodes nothing, and as
 * the value's bytes, which a binary answer (a client that negotiated FEATURE_HI_CACHE_BINARY)
 * carries as they are. Both count against the byte bound.
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
  /** The `cache_value` answer's frame header and UTF-8 JSON up to its request id
   *  (`valueAnswerHead`). */
  head: Uint8Array;
  /** The value itself (the same bytes the head carries in base64). */
  value: Uint8Array;
  /** Absolute expiry in ms, 0 for none; never later than the stored value's own. */
  expiresAtMillis: number;
}

interface Slot extends Hot {
  /** Hit since it was last placed at the recent end (its second chance at eviction). */
  hit: boolean;
  /** Where it is held, for eviction. */
  scope: HotScope;
  key: string;
}

/** A point in a key's write history: pass it back to `remember` or `endWrite`. */
export interface HotMark {
  era: number;
  gen: number;
}

/**
 * The hot values of one cache shard, keyed by the cache key itself: a get is one Map lookup of
 * the request's key string (no scope prefix built and hashed per get). Made by `HotValues.scope`;
 * the broker keeps one per cache name and shard (cache-service.ts), never one per config object.
 */
export class HotScope {
  readonly values = new Map<string, Slot>();
  readonly generations = new Map<string, number>();
  /** Writes in flight per key (an entry only while one is). */
  readonly writing = new Map<string, number>();
}

export class HotValues {
  /** Every scope made (one per cache shard served): `clear` empties them all. */
  private readonly scopes = new Set<HotScope>();
  /** Every remembered slot, least recently placed first (the clock's order). */
  private readonly order = new Set<Slot>();
  /** Keys with a generation, over all scopes; HOT_GENERATIONS_MAX bounds it. */
  private generationCount = 0;
  /** Keys with a write in flight, over all scopes; HOT_GENERATIONS_MAX bounds it too. */
  private writingCount = 0;
  /** Bumped when the generation maps are cleared (their bound): every mark before it is void. */
  private era = 0;
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** A new scope (one cache shard's keys), emptied with every other by `clear`. */
  scope(): HotScope {
    const scope = new HotScope();
    this.scopes.add(scope);
    return scope;
  }

  /** The remembered value, or undefined (not remembered, or expired). */
  get(scope: HotScope, key: string, nowMs: number): Hot | undefined {
    const hot = scope.values.get(key);
    if (hot === undefined) return undefined;
    if (hot.expiresAtMillis !== 0 && hot.expiresAtMillis <= nowMs) {
      this.drop(scope, key);
      return undefined;
    }
    // Marked, not moved: eviction gives a hit slot a second chance (a clock), so a hit costs no
    // delete and re-insert.
    hot.hit = true;
    return hot;
  }

  /** The key's generation now; pass it to `remember` after the read. */
  capture(scope: HotScope, key: string): HotMark {
    return { era: this.era, gen: scope.generations.get(key) ?? 0 };
  }

  /** Remembers a value read from the log, unless a write to the key started since `at`. */
  remember(scope: HotScope, key: string, at: HotMark, hot: Hot): void {
    if (this.maxBytes === 0 || at.era !== this.era) return;
    if ((scope.generations.get(key) ?? 0) !== at.gen) return;
    const size = hotBytes(hot, key);
    if (size > this.maxBytes / 4) return;
    this.drop(scope, key);
    const slot: Slot = {
      head: hot.head,
      value: hot.value,
      expiresAtMillis: hot.expiresAtMillis,
      hit: false,
      scope,
      key,
    };
    scope.values.set(key, slot);
    this.order.add(slot);
    this.bytes += size;
    this.evict();
  }

  /** A write to `key` starts: its value is forgotten. Pass the mark to `endWrite`. */
  beginWrite(scope: HotScope, key: string): HotMark {
    this.invalidate(scope, key);
    const writing = scope.writing.get(key);
    if (this.writingCount >= HOT_GENERATIONS_MAX && writing === undefined) {
      // Bounded: void every mark (no write in flight can then leave its value) and start over.
      this.clear();
      for (const s of this.scopes) s.writing.clear();
      this.writingCount = 0;
      scope.writing.set(key, 1);
    } else {
      if (writing === undefined) this.writingCount++;
      scope.writing.set(key, (writing ?? 0) + 1);
    }
    return this.capture(scope, key);
  }

  /**
   * The write that `beginWrite` answered `begun` for has ended. `written` is the value it left
   * (absent when it failed or left none); it is remembered only if the write was alone.
   */
  endWrite(scope: HotScope, key: string, begun: HotMark, written?: Hot): void {
    const left = (scope.writing.get(key) ?? 1) - 1;
    if (left > 0) scope.writing.set(key, left);
    else if (scope.writing.delete(key)) this.writingCount--;
    const alone =
      left === 0 && begun.era === this.era && (scope.generations.get(key) ?? 0) === begun.gen;
    this.invalidate(scope, key);
    if (alone && written !== undefined)
      this.remember(scope, key, this.capture(scope, key), written);
  }

  /** Forgets the key's value and moves its generation (a write starts or ends). */
  invalidate(scope: HotScope, key: string): void {
    this.drop(scope, key);
    let gen = scope.generations.get(key);
    // Bounded: forget every generation at once and void every read in flight instead.
    if (gen === undefined && this.generationCount >= HOT_GENERATIONS_MAX) this.clear();
    gen = scope.generations.get(key);
    if (gen === undefined) this.generationCount++;
    scope.generations.set(key, (gen ?? 0) + 1);
  }

  /** Forgets every value and voids every read and write in flight (a cache was deleted). */
  clear(): void {
    for (const s of this.scopes) {
      s.generations.clear();
      s.values.clear();
    }
    this.order.clear();
    this.generationCount = 0;
    this.bytes = 0;
    this.era++;
  }

  /** Least recently placed out first; a slot hit since it was placed moves to the end once. */
  private evict(): void {
    // Each turn evicts a slot or clears a mark, so this ends within two passes over the set.
    while (this.bytes > this.maxBytes) {
      const oldest = this.order.values().next();
      if (oldest.done) return;
      const slot = oldest.value;
      this.order.delete(slot);
      if (slot.hit) {
        slot.hit = false;
        this.order.add(slot);
      } else {
        slot.scope.values.delete(slot.key);
        this.bytes -= hotBytes(slot, slot.key);
      }
    }
  }

  private drop(scope: HotScope, key: string): void {
    const hot = scope.values.get(key);
    if (hot === undefined) return;
    scope.values.delete(key);
    this.order.delete(hot);
    this.bytes -= hotBytes(hot, key);
  }
}

/** What a remembered value counts against the bound: its answer head, its value, its key. */
function hotBytes(hot: Hot, key: string): number {
  return hot.head.byteLength + hot.value.byteLength + key.length;
}
