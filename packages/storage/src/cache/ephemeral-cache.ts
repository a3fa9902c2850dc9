/**
 * EphemeralCache: the cache API (put/get/delete/TTL/watch) held in memory only, for brokers
 * without durable storage. Versions and watch offsets come from an in-process counter, so
 * watches start live or retained; nothing survives a restart. Expiry is checked on read, and
 * `expireDue` (the owner's timer) removes expired keys nobody reads.
 */
import { ProjectionClosedError, ProjectionInputError, WatchStartError } from '../errors.js';
import { CACHE_VALUE_BYTES_MAX } from '../limits.js';
import { copyBytes } from '@felix/common';
import { checkKeyBytes, encodeKey } from './record.js';
import {
  type CacheChange,
  type CacheWatch,
  type SnapshotEntry,
  type WatchFilter,
  WatchHub,
  type WatchOptions,
  type WatchStart,
  matchesFilter,
} from './watch.js';

export interface PutOptions {
  /** Time to live in ms from now; absent or 0 = never expires. */
  ttlMs?: number;
}

/** A key's current value with its version (offset of the put that wrote it) and expiry. */
export interface CacheEntry {
  value: Uint8Array;
  version: number;
  expiresAtMillis: number;
}

interface Slot {
  value: Uint8Array;
  version: number;
  expiresAtMillis: number;
}

export function expiryFor(ttlMs: number | undefined, nowMs: number): number {
  if (ttlMs === undefined || ttlMs === 0) return 0;
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 0) {
    throw new ProjectionInputError(`ttlMs ${ttlMs} is not a non-negative integer`);
  }
  return nowMs + ttlMs;
}

export function isExpired(expiresAtMillis: number, nowMs: number): boolean {
  return expiresAtMillis !== 0 && expiresAtMillis <= nowMs;
}

export class EphemeralCache {
  private readonly slots = new Map<string, Slot>();
  /** Where `expireDue` goes on from: a Map iterator stays valid across deletes and inserts. */
  private sweep: Iterator<[string, Slot]> | undefined;
  private next = 0;
  private closed = false;
  private readonly hub: WatchHub;
  private readonly now: () => number;

  constructor(opts: { now?: () => number } = {}) {
    this.now = opts.now ?? Date.now;
    this.hub = new WatchHub({
      frontier: () => this.next,
      baseOffset: () => this.next,
      snapshot: (filter, nowMs) => this.snapshot(filter, nowMs),
      snapshotValue: async (e) => {
        const s = this.slots.get(e.key);
        return s !== undefined && s.version === e.version ? s.value : undefined;
      },
      replay: () => {
        throw new WatchStartError('an in-memory cache keeps no history to replay');
      },
    });
  }

  async put(key: string, value: Uint8Array, opts: PutOptions = {}): Promise<number> {
    return this.putNow(key, value, opts);
  }

  /**
   * `put` without a promise: stored (and published to watches) before it returns, its failures
   * thrown here. The broker answers an in-memory put in the turn its request arrived with it.
   * The cache keeps a copy of `value`.
   */
  putNow(key: string, value: Uint8Array, opts: PutOptions = {}): number {
    return this.store(key, value, opts, true);
  }

  /**
   * `putNow` of a value the caller hands over: kept as given, not copied. The caller never
   * writes to it again and it is no view of memory used for anything else (the broker's frame
   * readers decode each value into an allocation of its own, so a second copy is waste).
   */
  putNowHandedOver(key: string, value: Uint8Array, opts: PutOptions = {}): number {
    return this.store(key, value, opts, false);
  }

  private store(key: string, value: Uint8Array, opts: PutOptions, copy: boolean): number {
    this.checkOpen();
    checkKeyBytes(key);
    if (value.length > CACHE_VALUE_BYTES_MAX) {
      throw new ProjectionInputError(
        `value of ${value.length} bytes exceeds ${CACHE_VALUE_BYTES_MAX}`,
      );
    }
    const ttl = opts.ttlMs;
    const expiresAtMillis = ttl === undefined || ttl === 0 ? 0 : expiryFor(ttl, this.now());
    const offset = this.next++;
    // Not `value.slice()`: a Node Buffer's slice is a view of the caller's memory.
    const kept = copy ? copyBytes(value) : value;
    this.slots.set(key, { value: kept, version: offset, expiresAtMillis });
    this.hub.publish({ offset, key, op: 'put', value: kept, expiresAtMillis });
    return offset;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    return (await this.getEntry(key))?.value;
  }

  async getEntry(key: string): Promise<CacheEntry | undefined> {
    this.checkOpen();
    const s = this.slots.get(key);
    if (s === undefined) return undefined;
    if (isExpired(s.expiresAtMillis, this.now())) {
      this.slots.delete(key);
      return undefined;
    }
    return { ...s };
  }

  /** Removes a key, answering the value it held (undefined when absent: not a failure). */
  async delete(key: string): Promise<Uint8Array | undefined> {
    this.checkOpen();
    encodeKey(key);
    const prev = await this.getEntry(key);
    this.slots.delete(key);
    const offset = this.next++;
    const change: CacheChange = { offset, key, op: 'delete', expiresAtMillis: 0 };
    this.hub.publish(change);
    return prev?.value;
  }

  /** Keys held (expired ones not yet removed included). */
  get size(): number {
    return this.slots.size;
  }

  /**
   * Removes expired keys, looking at no more than `visitMax` keys from where the previous call
   * stopped (it goes round the whole map over successive calls), and tells watchers of each as a
   * delete. Reads expire keys only when they meet them: a key never read again after its TTL
   * would otherwise stay in memory for good. Answers how many keys it looked at and removed.
   */
  expireDue(visitMax: number): { visited: number; deleted: number } {
    this.checkOpen();
    const nowMs = this.now();
    let visited = 0;
    let deleted = 0;
    while (visited < visitMax) {
      this.sweep ??= this.slots.entries();
      const step = this.sweep.next();
      if (step.done === true) {
        // The end of the map: the sweep starts again from its oldest key, in this call only
        // when it has looked at nothing yet (no key is looked at twice in one call).
        this.sweep = undefined;
        if (visited > 0 || this.slots.size === 0) break;
        this.sweep = this.slots.entries();
        continue;
      }
      visited++;
      const [key, slot] = step.value;
      if (!isExpired(slot.expiresAtMillis, nowMs)) continue;
      this.slots.delete(key);
      deleted++;
      this.hub.publish({ offset: this.next++, key, op: 'delete', expiresAtMillis: 0 });
    }
    return { visited, deleted };
  }

  watch(filter: WatchFilter, start: WatchStart, opts: WatchOptions = {}): CacheWatch {
    this.checkOpen();
    if (start.kind === 'from')
      throw new WatchStartError('an in-memory cache watches live or retained only');
    return this.hub.watch(filter, start, { nowMs: this.now, ...opts });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.hub.closeAll();
  }

  private snapshot(filter: WatchFilter, nowMs: number): SnapshotEntry[] {
    const out: SnapshotEntry[] = [];
    const pick = (key: string, s: Slot) => {
      if (!isExpired(s.expiresAtMillis, nowMs)) {
        out.push({
          key,
          version: s.version,
          expiresAtMillis: s.expiresAtMillis,
          bytes: s.value.byteLength,
        });
      }
    };
    if ('key' in filter) {
      const s = this.slots.get(filter.key);
      if (s !== undefined) pick(filter.key, s);
      return out;
    }
    for (const [key, s] of this.slots) if (matchesFilter(filter, key)) pick(key, s);
    // Write order, as a log-backed cache answers it.
    return out.sort((a, b) => a.version - b.version);
  }

  private checkOpen(): void {
    if (this.closed) throw new ProjectionClosedError('ephemeral cache');
  }
}
