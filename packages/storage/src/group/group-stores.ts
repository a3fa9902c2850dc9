/**
 * Durable consumer-group state (wire-storage §3.7, §5), each a LogCache on its own root with one
 * log per stream shard. Cursor store: key = group name, value = the 8-byte big-endian offset the
 * group resumes from; commits never go backwards. Dead-letter store: key "{group}\u001F{offset}",
 * value empty (dead) or "redriven" (redriven, not yet finished); the entry goes once the
 * redriven record is acknowledged.
 */
import type { LogCache } from '../cache/log-cache.js';
import type { SegmentLog } from '../log/segment-log.js';
import {
  type ProjectionShards,
  type ProjectionStoreOptions,
  cacheShards,
} from '../cache/projection-store.js';
import { GroupStateCorruptError, ProjectionInputError } from '../errors.js';
import {
  CURSOR_MEMO_ENTRIES_MAX,
  DEAD_LETTER_INDEX_ENTRIES_MAX,
  DEAD_LETTER_LIST_MAX,
  DEAD_LETTER_WALK_BATCH_FIRST,
} from '../limits.js';
import { SortedOffsets } from './sorted-offsets.js';
import { ShortLock } from '../cache/short-lock.js';

/** A stream shard, as the segment log names it. */
export interface GroupShard {
  tenant: string;
  namespace: string;
  stream: string;
  shard: number;
}

/** Opens (or returns the open) cache holding one stream shard's entries. */
export interface ShardCaches {
  cache(shard: GroupShard): Promise<LogCache>;
  /** The log under the shard's cache (opening it), for a leader to ship. */
  log(shard: GroupShard): Promise<SegmentLog>;
  /** Closes the shard's cache and keeps it closed until `admit` (then it opens by replay). */
  release(shard: GroupShard): Promise<void>;
  admit(shard: GroupShard): void;
  close(): Promise<void>;
}

const shardKey = (s: GroupShard) => JSON.stringify([s.tenant, s.namespace, s.stream, s.shard]);
const memoKey = (s: GroupShard, group: string) =>
  JSON.stringify([s.tenant, s.namespace, s.stream, s.shard, group]);

function checkOffset(offset: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new ProjectionInputError(`offset ${offset} is not a non-negative safe integer`);
  }
}

export function encodeCursor(offset: number): Uint8Array {
  checkOffset(offset);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(offset), false);
  return out;
}

export function decodeCursor(value: Uint8Array): number {
  if (value.length !== 8)
    throw new GroupStateCorruptError(`cursor of ${value.length} bytes, not 8`);
  // Two 32-bit halves instead of a BigInt: this runs on every cursor commit.
  const view = new DataView(value.buffer, value.byteOffset, 8);
  const hi = view.getUint32(0, false);
  const lo = view.getUint32(4, false);
  if (hi > 0x1f_ffff) {
    throw new GroupStateCorruptError(`cursor ${(BigInt(hi) << 32n) | BigInt(lo)} exceeds 2^53-1`);
  }
  return hi * 0x1_0000_0000 + lo;
}

export class CursorStore {
  private readonly locks = new Map<string, ShortLock>();
  /**
   * Positions as this store last read or wrote them (every write goes through this store, under
   * the shard's lock), so a commit checks "never backwards" without reading its log. Bounded by
   * CURSOR_MEMO_ENTRIES_MAX; a forgotten entry is read from the log again.
   */
  private readonly memo = new Map<string, number>();

  constructor(private readonly caches: ShardCaches) {}

  /** The offset `group` resumes from on `shard`, or undefined when it never committed. */
  async position(shard: GroupShard, group: string): Promise<number | undefined> {
    const value = await (await this.caches.cache(shard)).get(group);
    return value === undefined ? undefined : decodeCursor(value);
  }

  /** Moves the cursor forward to `offset`; a lower offset is ignored. Answers the position. */
  async commit(shard: GroupShard, group: string, offset: number): Promise<number> {
    checkOffset(offset);
    const key = memoKey(shard, group);
    return this.lockFor(shard).run(async () => {
      const cache = await this.caches.cache(shard);
      let at = this.memo.get(key);
      if (at === undefined) {
        const current = await cache.get(group);
        at = current === undefined ? undefined : decodeCursor(current);
      }
      if (at !== undefined && at >= offset) {
        this.remember(key, at);
        return at;
      }
      await cache.put(group, encodeCursor(offset));
      this.remember(key, offset);
      return offset;
    });
  }

  /** Sets the cursor to any offset (seek), backwards included. */
  async seek(shard: GroupShard, group: string, offset: number): Promise<void> {
    const key = memoKey(shard, group);
    await this.lockFor(shard).run(async () => {
      this.memo.delete(key); // a failed write leaves nothing remembered
      await (await this.caches.cache(shard)).put(group, encodeCursor(offset));
      this.remember(key, offset);
    });
  }

  async delete(shard: GroupShard, group: string): Promise<void> {
    const key = memoKey(shard, group);
    await this.lockFor(shard).run(async () => {
      this.memo.delete(key);
      await (await this.caches.cache(shard)).delete(group);
    });
  }

  private remember(key: string, offset: number): void {
    this.memo.delete(key); // re-inserted last: the Map's order is oldest first
    this.memo.set(key, offset);
    if (this.memo.size > CURSOR_MEMO_ENTRIES_MAX) {
      this.memo.delete(this.memo.keys().next().value!);
    }
  }

  /** The log of `shard`'s cursors (opening it), for a leader to ship. */
  log(shard: GroupShard): Promise<SegmentLog> {
    return this.caches.log(shard);
  }

  /** Closes `shard`'s cursor log until `admit`, and forgets the positions remembered of it (a
   *  replica may append to the log before this store opens it again). */
  async release(shard: GroupShard): Promise<void> {
    await this.lockFor(shard).run(async () => {
      const prefix = `${shardKey(shard).slice(0, -1)},`;
      for (const key of [...this.memo.keys()]) if (key.startsWith(prefix)) this.memo.delete(key);
      await this.caches.release(shard);
    });
  }

  /** This broker leads `shard` again: its cursor log may open (by replay). */
  admit(shard: GroupShard): void {
    this.caches.admit(shard);
  }

  close(): Promise<void> {
    return this.caches.close();
  }

  private lockFor(shard: GroupShard): ShortLock {
    const k = shardKey(shard);
    let lock = this.locks.get(k);
    if (lock === undefined) {
      lock = new ShortLock();
      this.locks.set(k, lock);
    }
    return lock;
  }
}

export type DeadLetterState = 'dead' | 'redriven';

export interface DeadLetter {
  offset: number;
  state: DeadLetterState;
}

const SEPARATOR = '\u001F';
const REDRIVEN = new TextEncoder().encode('redriven');

function deadLetterKey(group: string, offset: number): string {
  checkOffset(offset);
  if (group.includes(SEPARATOR)) throw new ProjectionInputError('a group name cannot hold U+001F');
  return `${group}${SEPARATOR}${offset}`;
}

function decodeState(value: Uint8Array): DeadLetterState {
  if (value.length === 0) return 'dead';
  if (value.length === REDRIVEN.length && value.every((b, i) => b === REDRIVEN[i]))
    return 'redriven';
  throw new GroupStateCorruptError(
    `dead-letter value of ${value.length} bytes is neither empty nor redriven`,
  );
}

/** One group's dead-letter index on one open cache, kept up by the cache's key observer. */
interface HeldIndex {
  /** memoKey(shard, group): its place in the store's recency order. */
  key: string;
  cache: LogCache;
  group: string;
  prefix: string;
  offsets: SortedOffsets;
}

export interface DeadLetterStoreOptions {
  /** Offsets kept indexed over all groups (DEAD_LETTER_INDEX_ENTRIES_MAX); tests lower it. */
  indexEntriesMax?: number;
}

function parseOffset(key: string, prefixLength: number): number {
  const offset = Number(key.slice(prefixLength));
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new GroupStateCorruptError(`dead-letter key ${key}`);
  }
  return offset;
}

export class DeadLetterStore {
  private readonly locks = new Map<string, ShortLock>();
  /**
   * Per open cache, the groups indexed on it. Each index is built from the cache's keys on the
   * group's first page and then kept by the cache itself: it tells every key that enters or
   * leaves its index, in apply order, whoever wrote it (this store, records replicated behind
   * it, expiry). A cache opened again (the shard released and led again, replaying what its
   * replica appended meanwhile) is another object, so an index of the closed one is never used.
   */
  private readonly indexed = new WeakMap<LogCache, Map<string, HeldIndex>>();
  /** Every index held, least recently paged first. */
  private readonly held = new Map<string, HeldIndex>();
  private heldEntries = 0;
  private readonly indexEntriesMax: number;

  constructor(
    private readonly caches: ShardCaches,
    opts: DeadLetterStoreOptions = {},
  ) {
    this.indexEntriesMax = opts.indexEntriesMax ?? DEAD_LETTER_INDEX_ENTRIES_MAX;
  }

  /** Records `offset` as given up on by `group` (written before the cursor moves past it). */
  async record(shard: GroupShard, group: string, offset: number): Promise<void> {
    const key = deadLetterKey(group, offset);
    await (await this.caches.cache(shard)).put(key, new Uint8Array());
  }

  /**
   * The group's dead letters above `after` (all when omitted), lowest offset first, at most
   * `limit` (and DEAD_LETTER_LIST_MAX). A page shorter than asked is the last: the next page
   * starts after the last offset of this one.
   */
  async list(
    shard: GroupShard,
    group: string,
    limit = DEAD_LETTER_LIST_MAX,
    after = -1,
  ): Promise<DeadLetter[]> {
    deadLetterKey(group, 0);
    const want = Math.min(limit, DEAD_LETTER_LIST_MAX);
    const out: DeadLetter[] = [];
    if (want <= 0) return out;
    await this.walk(shard, group, after, want, (d) => {
      out.push(d);
      return out.length < want;
    });
    return out;
  }

  /**
   * Visits the group's dead letters above `after` (all when omitted), lowest offset first. A
   * visit answering false ends the walk, so a page reads no entry beyond the one that tells it
   * more remain.
   */
  async each(
    shard: GroupShard,
    group: string,
    visit: (d: DeadLetter) => unknown,
    after = -1,
  ): Promise<void> {
    await this.walk(shard, group, after, DEAD_LETTER_WALK_BATCH_FIRST, visit);
  }

  /**
   * Reads the entries the group's index holds above `after`, in batches from `batch` offsets
   * doubling to DEAD_LETTER_LIST_MAX: a page costs a binary search and its own entries. An entry
   * removed since its batch was taken is passed over and the page filled from the next, so a
   * short page always means nothing more was above it.
   */
  private async walk(
    shard: GroupShard,
    group: string,
    after: number,
    batch: number,
    visit: (d: DeadLetter) => unknown,
  ): Promise<void> {
    const { cache, prefix, offsets } = await this.indexOf(shard, group);
    let from = after;
    for (
      let n = Math.min(batch, DEAD_LETTER_LIST_MAX);
      ;
      n = Math.min(2 * n, DEAD_LETTER_LIST_MAX)
    ) {
      const next = offsets.above(from, n);
      for (const offset of next) {
        const value = await cache.get(`${prefix}${offset}`);
        if (value !== undefined && visit({ offset, state: decodeState(value) }) === false) return;
      }
      if (next.length < n) return;
      from = next[next.length - 1]!;
    }
  }

  /** The group's index on the shard's open cache, built from its keys when there is none. */
  private async indexOf(shard: GroupShard, group: string): Promise<HeldIndex> {
    deadLetterKey(group, 0);
    const cache = await this.caches.cache(shard);
    // Records replicated behind the cache are applied (and told) before the index is read.
    await cache.catchUp();
    const key = memoKey(shard, group);
    let held = this.held.get(key);
    if (held?.cache !== cache) held = this.build(key, cache, group);
    this.held.delete(key); // re-inserted last: the Map's order is least recently paged first
    this.held.set(key, held);
    return held;
  }

  /**
   * Indexes the group's keys as the cache holds them now: one synchronous step with the
   * observer's registration, so no change falls between the keys read and the changes told.
   */
  private build(key: string, cache: LogCache, group: string): HeldIndex {
    this.drop(key); // an index of a cache since closed
    const prefix = `${group}${SEPARATOR}`;
    const found = cache.indexedKeys(prefix).map((k) => parseOffset(k, prefix.length));
    const held: HeldIndex = { key, cache, group, prefix, offsets: SortedOffsets.of(found) };
    this.groupsOn(cache).set(group, held);
    this.held.set(key, held);
    this.heldEntries += held.offsets.size;
    this.trim(key);
    return held;
  }

  /** The groups indexed on `cache`, observing its keys from the first. */
  private groupsOn(cache: LogCache): Map<string, HeldIndex> {
    let groups = this.indexed.get(cache);
    if (groups === undefined) {
      const made = new Map<string, HeldIndex>();
      cache.observeKeys((k, present) => this.keyChanged(made, k, present));
      this.indexed.set(cache, made);
      groups = made;
    }
    return groups;
  }

  /** A key entered or left an observed cache: the index of its group, when held, follows. */
  private keyChanged(groups: Map<string, HeldIndex>, key: string, present: boolean): void {
    const cut = key.indexOf(SEPARATOR);
    if (cut < 0) return;
    const held = groups.get(key.slice(0, cut));
    if (held === undefined) return;
    const offset = Number(key.slice(cut + 1));
    if (!Number.isSafeInteger(offset) || offset < 0) {
      // No method of this store writes such a key: the next page rebuilds and reports it.
      this.drop(held.key);
      return;
    }
    if (present) {
      if (held.offsets.add(offset)) this.heldEntries++;
      this.trim(held.key);
    } else if (held.offsets.delete(offset)) this.heldEntries--;
  }

  /** Forgets the least recently paged indexes past the bound, never `keep` (the one in use). */
  private trim(keep: string): void {
    for (const k of this.held.keys()) {
      if (this.heldEntries <= this.indexEntriesMax) return;
      if (k !== keep) this.drop(k);
    }
  }

  private drop(key: string): void {
    const held = this.held.get(key);
    if (held === undefined) return;
    this.held.delete(key);
    this.heldEntries -= held.offsets.size;
    const groups = this.indexed.get(held.cache);
    if (groups?.get(held.group) === held) groups.delete(held.group);
  }

  /** Offsets indexed in memory over all groups (what DEAD_LETTER_INDEX_ENTRIES_MAX bounds). */
  get indexedEntries(): number {
    return this.heldEntries;
  }

  /** Flips a dead entry to redriven; answers false when there is no dead entry at `offset`. */
  async redrive(shard: GroupShard, group: string, offset: number): Promise<boolean> {
    const key = deadLetterKey(group, offset);
    return this.lockFor(shard).run(async () => {
      const cache = await this.caches.cache(shard);
      const value = await cache.get(key);
      if (value === undefined || decodeState(value) !== 'dead') return false;
      await cache.put(key, REDRIVEN);
      return true;
    });
  }

  /** Drops a dead (not redriven) entry; answers whether one was dropped. */
  async discard(shard: GroupShard, group: string, offset: number): Promise<boolean> {
    return this.removeIf(shard, group, offset, 'dead');
  }

  /** The redriven record was acknowledged: its entry goes. Answers whether one was removed. */
  async finish(shard: GroupShard, group: string, offset: number): Promise<boolean> {
    return this.removeIf(shard, group, offset, 'redriven');
  }

  /**
   * Drops the group's lowest `max` entries (at most DEAD_LETTER_LIST_MAX) whatever their state,
   * for a group delete, as one batch of the delete records `discard` and `finish` write: one
   * append and one sync, not one each. The offsets come from the group's index, so no entry is
   * read. A crash part-way through the write leaves the lowest of them removed and the rest
   * listed, as after as many single removals. Answers how many were removed (0: none was left).
   */
  async removeLowest(
    shard: GroupShard,
    group: string,
    max = DEAD_LETTER_LIST_MAX,
  ): Promise<number> {
    const n = Math.min(max, DEAD_LETTER_LIST_MAX);
    if (!(n >= 1)) return 0;
    return this.lockFor(shard).run(async () => {
      const { cache, prefix, offsets } = await this.indexOf(shard, group);
      const page = offsets.above(-1, n);
      if (page.length === 0) return 0;
      return cache.deleteMany(page.map((o) => `${prefix}${o}`));
    });
  }

  /** A redriven record failed again: back to dead. */
  async markDead(shard: GroupShard, group: string, offset: number): Promise<void> {
    await this.record(shard, group, offset);
  }

  /** The log of `shard`'s dead letters (opening it), for a leader to ship. */
  log(shard: GroupShard): Promise<SegmentLog> {
    return this.caches.log(shard);
  }

  /** Closes `shard`'s dead-letter log until `admit` (then it opens by replay), and forgets the
   *  indexes of its groups (their cache is closed; the next open is another). */
  release(shard: GroupShard): Promise<void> {
    return this.lockFor(shard).run(async () => {
      try {
        await this.caches.release(shard);
      } finally {
        const prefix = `${shardKey(shard).slice(0, -1)},`;
        for (const key of [...this.held.keys()]) if (key.startsWith(prefix)) this.drop(key);
      }
    });
  }

  /** This broker leads `shard` again: its dead-letter log may open (by replay). */
  admit(shard: GroupShard): void {
    this.caches.admit(shard);
  }

  close(): Promise<void> {
    for (const key of [...this.held.keys()]) this.drop(key);
    return this.caches.close();
  }

  private removeIf(shard: GroupShard, group: string, offset: number, state: DeadLetterState) {
    const key = deadLetterKey(group, offset);
    return this.lockFor(shard).run(async () => {
      const cache = await this.caches.cache(shard);
      const value = await cache.get(key);
      if (value === undefined || decodeState(value) !== state) return false;
      await cache.delete(key);
      return true;
    });
  }

  private lockFor(shard: GroupShard): ShortLock {
    const k = shardKey(shard);
    let lock = this.locks.get(k);
    if (lock === undefined) {
      lock = new ShortLock();
      this.locks.set(k, lock);
    }
    return lock;
  }
}

/** The cursor store on `<root>/groups/`, one log per stream shard. */
export function openCursorStore(opts: ProjectionStoreOptions): CursorStore {
  return new CursorStore(shardCachesOf(cacheShards(opts, 'groups')));
}

/** The dead-letter store on `<root>/dead-letters/`, one log per stream shard. */
export function openDeadLetterStore(
  opts: ProjectionStoreOptions,
  index: DeadLetterStoreOptions = {},
): DeadLetterStore {
  return new DeadLetterStore(shardCachesOf(cacheShards(opts, 'dead-letters')), index);
}

function shardCachesOf(shards: ProjectionShards<LogCache>): ShardCaches {
  return {
    cache: (shard) => shards.get(shard),
    log: (shard) => shards.log(shard),
    release: (shard) => shards.release(shard),
    admit: (shard) => shards.admit(shard),
    close: () => shards.close(),
  };
}
