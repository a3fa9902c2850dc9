/**
 * Maps and sets keyed by stream offsets (non-negative safe integers) for a group's in-flight
 * bookkeeping: open addressing with linear probing and backward-shift deletion, keys in a
 * Float64Array. A consumer group adds and removes every record it hands out, so these tables
 * churn at the drain rate while their size stays near the records in flight. V8's Map does not
 * take that well past about 2,000 entries: in a micro-run of a four-consumer drain's pattern
 * (Node 20) a set plus a delete cost about 0.1 µs up to 2,000 standing and 0.6-2.3 µs from
 * 2,100 on, where four consumers with polls ahead and acks in transit keep it. These tables grow
 * at half full and shrink only after staying below an eighth full for as many deletes as they have
 * slots, so a size that swings back and forth, or empties and refills, does not resize them. Iteration walks a snapshot, not insertion order (no caller needs that order).
 */
import { OFFSET_TABLE_SLOTS_MIN } from '../limits.js';

const EMPTY = -1;
/** 2^32, to take a key's high bits. */
const HIGH = 4_294_967_296;

class OffsetTable<V> {
  protected slots: Float64Array;
  protected vals: Array<V | undefined>;
  private mask: number;
  private shift: number;
  private count = 0;
  /** Most entries held, and deletes made, since shrinking was last considered. */
  private peak = 0;
  private deletes = 0;

  constructor() {
    this.slots = new Float64Array(0);
    this.vals = [];
    this.mask = 0;
    this.shift = 0;
    this.alloc(OFFSET_TABLE_SLOTS_MIN);
  }

  get size(): number {
    return this.count;
  }

  /** Slots of the table now (its memory); a size that moves back and forth must not move it. */
  get slotCount(): number {
    return this.slots.length;
  }

  private alloc(slots: number): void {
    this.slots = new Float64Array(slots).fill(EMPTY);
    this.vals = new Array<V | undefined>(slots).fill(undefined);
    this.mask = slots - 1;
    this.shift = 32 - Math.log2(slots);
  }

  /** The slot a key hashes to (Fibonacci hashing of its low and high 32 bits). */
  private home(key: number): number {
    const mixed = (key >>> 0) ^ Math.imul((key / HIGH) >>> 0, 0x85eb_ca6b);
    return Math.imul(mixed, 0x9e37_79b1) >>> this.shift;
  }

  /** The slot holding `key`, or -1. */
  protected find(key: number): number {
    const keys = this.slots;
    let i = this.home(key);
    for (;;) {
      const k = keys[i]!;
      if (k === key) return i;
      if (k === EMPTY) return -1;
      i = (i + 1) & this.mask;
    }
  }

  has(key: number): boolean {
    return this.count > 0 && this.find(key) >= 0;
  }

  protected put(key: number, value: V | undefined): void {
    const keys = this.slots;
    let i = this.home(key);
    for (;;) {
      const k = keys[i]!;
      if (k === key) {
        this.vals[i] = value;
        return;
      }
      if (k === EMPTY) break;
      i = (i + 1) & this.mask;
    }
    keys[i] = key;
    this.vals[i] = value;
    this.count++;
    if (this.count > this.peak) this.peak = this.count;
    if (this.count * 2 > keys.length) this.resize(keys.length * 2);
  }

  delete(key: number): boolean {
    if (this.count === 0) return false;
    let hole = this.find(key);
    if (hole < 0) return false;
    const keys = this.slots;
    const vals = this.vals;
    const mask = this.mask;
    // Backward shift: move later entries of the probe run into the hole when their home slot
    // does not lie cyclically in (hole, j], so every lookup still finds them without tombstones.
    let j = hole;
    for (;;) {
      j = (j + 1) & mask;
      const k = keys[j]!;
      if (k === EMPTY) break;
      const h = this.home(k);
      const stays = hole <= j ? hole < h && h <= j : hole < h || h <= j;
      if (stays) continue;
      keys[hole] = k;
      vals[hole] = vals[j];
      hole = j;
    }
    keys[hole] = EMPTY;
    vals[hole] = undefined;
    this.count--;
    // Shrink only a table that stayed under an eighth full for as many deletes as it has slots:
    // a set that empties and refills (finished offsets above a gap) keeps its table, one whose
    // size settled low gives the memory back, and the work stays O(1) per delete.
    if (++this.deletes >= keys.length) {
      if (this.peak * 8 < keys.length && keys.length > OFFSET_TABLE_SLOTS_MIN) {
        let slots = OFFSET_TABLE_SLOTS_MIN;
        while (slots < this.peak * 4) slots *= 2;
        this.resize(slots);
      }
      this.deletes = 0;
      this.peak = this.count;
    }
    return true;
  }

  clear(): void {
    this.count = 0;
    this.peak = 0;
    this.deletes = 0;
    this.alloc(OFFSET_TABLE_SLOTS_MIN);
  }

  /** The keys, as a new array (safe to change the table while walking it). */
  keys(): number[] {
    const out: number[] = [];
    const keys = this.slots;
    for (let i = 0; i < keys.length; i++) if (keys[i]! !== EMPTY) out.push(keys[i]!);
    return out;
  }

  private resize(slots: number): void {
    const keys = this.slots;
    const vals = this.vals;
    this.alloc(slots);
    this.count = 0;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      if (k !== EMPTY) this.put(k, vals[i]);
    }
  }
}

/** Offset -> value. */
export class OffsetMap<V> extends OffsetTable<V> {
  get(key: number): V | undefined {
    if (this.size === 0) return undefined;
    const i = this.find(key);
    return i < 0 ? undefined : this.vals[i];
  }

  set(key: number, value: V): this {
    this.put(key, value);
    return this;
  }

  /** The values, as a new array. */
  values(): V[] {
    const out: V[] = [];
    const keys = this.slots;
    for (let i = 0; i < keys.length; i++) if (keys[i]! !== EMPTY) out.push(this.vals[i]!);
    return out;
  }

  /** [offset, value] pairs, from a snapshot. */
  [Symbol.iterator](): IterableIterator<[number, V]> {
    return this.keys()
      .map((k): [number, V] => [k, this.get(k)!])
      [Symbol.iterator]();
  }
}

/** A set of offsets. */
export class OffsetSet extends OffsetTable<undefined> {
  add(key: number): this {
    this.put(key, undefined);
    return this;
  }

  /** The offsets, from a snapshot (deleting while walking is safe). */
  [Symbol.iterator](): IterableIterator<number> {
    return this.keys()[Symbol.iterator]();
  }
}
