/**
 * LogCache: a cache that is a reading of its log. put and delete append cache records; an
 * in-memory index maps key -> (offset, version, expiry, record bytes) and is rebuilt by replay on
 * open, never read from disk; get reads the value from the log at the indexed offset. The write
 * path is ProjectionWriter's (claim + turn under a short lock, shared fsync, in-order apply), the
 * watch core is WatchHub's, and compaction is a CompactionPass (runCompaction) with cache copies carrying versions.
 */
import { assert } from '@felix/common';
import {
  type CompactionOptions,
  type CompactionResult,
  type CopyBatch,
  CompactionPass,
  keyedCompactionTarget,
} from '../compaction/compactor.js';
import { type CacheEntry, type PutOptions, expiryFor, isExpired } from './ephemeral-cache.js';
import type { PortRecord, ProjectionLog } from './log-port.js';
import {
  CacheRecordCorruptError,
  ProjectionInputError,
  ProjectionReadMovedError,
  WatchHistoryTrimmedError,
} from '../errors.js';
import {
  CACHE_COMPACTION_FLOOR_BYTES_DEFAULT,
  CACHE_DELETE_BATCH_KEYS_MAX,
  CACHE_VALUE_BYTES_MAX,
  COMPACTION_BATCH_RECORDS,
  COMPACTION_SCAN_PAGE_RECORDS,
  COMPACTION_GARBAGE_RATIO,
  EXPIRY_DELETES_PER_PASS_MAX,
  GET_READ_ATTEMPTS_MAX,
  RECORD_FRAMING_BYTES,
  REPLAY_PAGE_RECORDS_MAX,
  WATCH_REPLAY_PAGE_RECORDS_MAX,
  WATCH_SNAPSHOT_READ_ATTEMPTS_MAX,
  WATCH_SNAPSHOT_CHUNK_BYTES_MAX,
  WATCH_SNAPSHOT_PAGE_RECORDS_MAX,
} from '../limits.js';
import { type CommitGate, ProjectionWriter } from './projection-writer.js';
import { type CacheRecord, decodeCacheRecord, encodeCacheRecord, encodeKey } from './record.js';
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

/** A live record found below the cut, with the index entry it was found under. */
interface LiveRead {
  key: string;
  entry: IndexEntry;
  rec: CacheRecord;
}

interface IndexEntry {
  /** Where the record holding the current value sits (moves when compaction copies it). */
  offset: number;
  /** Offset of the put that wrote the value; kept through compaction. */
  version: number;
  expiresAtMillis: number;
  /** Record bytes including framing, for the live-bytes figure. */
  bytes: number;
}

export interface LogCacheCompactionOptions extends CompactionOptions {
  /** Run a pass automatically when the log passes the trigger (default true). */
  auto?: boolean;
  /** Logs smaller than this are never compacted automatically. */
  floorBytes?: number;
}

export interface LogCacheOptions {
  log: ProjectionLog;
  /** Wall clock in ms for TTL (tests inject one). */
  now?: () => number;
  compaction?: LogCacheCompactionOptions;
  /** A name for error messages. */
  name?: string;
  /** A replicated quorum shard's: writes are applied and answered once the mark covers them. */
  commitGate?: CommitGate;
}

/** Told, synchronously and in apply order, that `key` entered (`present`) or left the index. */
export type KeyObserver = (key: string, present: boolean) => void;

export class LogCache {
  private readonly index = new Map<string, IndexEntry>();
  private readonly observers = new Set<KeyObserver>();
  private liveBytesTotal = 0;
  private readonly writer: ProjectionWriter;
  private readonly hub: WatchHub;
  private readonly now: () => number;
  private readonly compactionPass = new CompactionPass();
  private stoppingFlag = false;

  private constructor(
    readonly log: ProjectionLog,
    private readonly opts: LogCacheOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.writer = new ProjectionWriter(
      log,
      opts.name ?? 'log cache',
      (from, to) => this.replay(from, to),
      opts.commitGate,
    );
    this.hub = new WatchHub({
      frontier: () => this.writer.frontier,
      baseOffset: () => this.log.baseOffset,
      snapshot: (filter, nowMs) => this.snapshot(filter, nowMs),
      snapshotValue: (e) => this.snapshotValue(e),
      snapshotValues: (entries) => this.snapshotValues(entries),
      replay: (from, to, filter) => this.history(from, to, filter),
    });
  }

  /** Opens a cache over `log`, rebuilding the index by replaying it from its base. */
  static async open(opts: LogCacheOptions): Promise<LogCache> {
    const cache = new LogCache(opts.log, opts);
    cache.writer.frontier = await cache.replay(opts.log.baseOffset, opts.log.tailOffset);
    return cache;
  }

  /** Keys currently indexed (expired-but-unreclaimed ones included). */
  get size(): number {
    return this.index.size;
  }
  /** Bytes of the records holding current values. */
  get liveBytes(): number {
    return this.liveBytesTotal;
  }
  /** Next offset not yet applied (visible state covers everything below it). */
  get frontier(): number {
    return this.writer.frontier;
  }

  /** Keys starting with `prefix` (expired ones excluded), in write order (the snapshot's), at most
   *  `limit`. */
  async keys(prefix: string, limit: number): Promise<string[]> {
    this.writer.checkOpen();
    await this.writer.catchUpIfBehind();
    return this.snapshot({ prefix }, this.now())
      .slice(0, limit)
      .map((e) => e.key);
  }

  /**
   * Keys starting with `prefix` as the index holds them now (expired-but-unreclaimed included),
   * in no order, without catching up: read in the same synchronous step as `observeKeys` is
   * relied on, it is the base a secondary index adds the observed changes to. Scans every key.
   */
  indexedKeys(prefix: string): string[] {
    this.writer.checkOpen();
    const out: string[] = [];
    for (const key of this.index.keys()) if (key.startsWith(prefix)) out.push(key);
    return out;
  }

  /** Applies records appended to the log behind the cache (replication), when nothing is in flight. */
  async catchUp(): Promise<void> {
    this.writer.checkOpen();
    await this.writer.catchUpIfBehind();
  }

  /**
   * Calls `observer` whenever a key enters or leaves the index, in apply order: own writes,
   * records caught up from behind, expiry deletes (a compaction copy changes no membership).
   * It must not throw. Answers the call that stops it.
   */
  observeKeys(observer: KeyObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  /** Writes a value; resolves with its version once durable under the log's fsync mode. */
  async put(key: string, value: Uint8Array, opts: PutOptions = {}): Promise<number> {
    this.writer.checkOpen();
    if (value.length > CACHE_VALUE_BYTES_MAX) {
      throw new ProjectionInputError(
        `value of ${value.length} bytes exceeds ${CACHE_VALUE_BYTES_MAX}`,
      );
    }
    const expiresAtMillis = expiryFor(opts.ttlMs, this.now());
    const payload = encodeCacheRecord({ op: 'put', key, expiresAtMillis, value });
    const version = await this.writer.commit(
      () => ({ keys: [key], payloads: [payload] }),
      (first) => {
        this.applyPut(key, first, first, expiresAtMillis, payload.length);
        const stored = payload.subarray(payload.length - value.length);
        this.hub.publish({ offset: first, key, op: 'put', value: stored, expiresAtMillis });
        return first;
      },
      () => -1,
    );
    this.maybeCompact();
    return version;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    return (await this.getEntry(key))?.value;
  }

  /** The current value with its version and expiry, or undefined (absent or expired). */
  async getEntry(key: string): Promise<CacheEntry | undefined> {
    this.writer.checkOpen();
    await this.writer.catchUpIfBehind();
    for (let attempt = 0; attempt < GET_READ_ATTEMPTS_MAX; attempt++) {
      const e = this.index.get(key);
      if (e === undefined || isExpired(e.expiresAtMillis, this.now())) return undefined;
      const rec = await this.readAt(e.offset);
      if (rec !== undefined) {
        return { value: rec.value, version: e.version, expiresAtMillis: e.expiresAtMillis };
      }
    }
    throw new ProjectionReadMovedError(key);
  }

  /** Removes a key, answering the value it held; an absent key answers undefined. */
  async delete(key: string): Promise<Uint8Array | undefined> {
    this.writer.checkOpen();
    // Only when behind: an await here would let later calls claim first.
    if (this.writer.isBehind()) await this.writer.catchUpIfBehind();
    const payload = encodeCacheRecord({
      op: 'delete',
      key,
      expiresAtMillis: 0,
      value: new Uint8Array(),
    });
    const removed = await this.writer.commit<Uint8Array | undefined, Uint8Array | undefined>(
      () =>
        this.index.has(key) || this.writer.isStaged(key)
          ? { keys: [key], payloads: [payload] }
          : undefined,
      (first, _staging, value: Uint8Array | undefined) => {
        this.applyDelete(key, first);
        this.hub.publish({ offset: first, key, op: 'delete', expiresAtMillis: 0 });
        return value;
      },
      () => undefined,
      // Inside the turn, so the value read is the one this delete removes in offset order.
      async () => {
        const prev = this.index.get(key);
        if (prev === undefined || isExpired(prev.expiresAtMillis, this.now())) return undefined;
        const rec = await this.readAt(prev.offset);
        assert(rec !== undefined, 'a live key being deleted cannot have been trimmed');
        return rec.value;
      },
    );
    this.maybeCompact();
    return removed;
  }

  /**
   * Removes every key of `keys` present (or with a write staged) in one append: one delete record
   * per key, the records of one batch, so one write and one sync under the log's fsync mode
   * however many keys (at most CACHE_DELETE_BATCH_KEYS_MAX). The records are those `delete`
   * writes, so a replica or a replay reads them alike, and a crash part-way through the write
   * keeps a prefix of them. Answers how many were removed.
   */
  async deleteMany(keys: readonly string[]): Promise<number> {
    this.writer.checkOpen();
    if (keys.length > CACHE_DELETE_BATCH_KEYS_MAX) {
      throw new ProjectionInputError(
        `${keys.length} keys in one delete batch exceed ${CACHE_DELETE_BATCH_KEYS_MAX}`,
      );
    }
    // Only when behind: an await here would let later calls claim first.
    if (this.writer.isBehind()) await this.writer.catchUpIfBehind();
    let picked: string[] = [];
    const removed = await this.writer.commit(
      () => {
        // Decided at the claim, as `delete` decides: a key absent and not staged adds nothing.
        picked = [...new Set(keys)].filter((k) => this.index.has(k) || this.writer.isStaged(k));
        if (picked.length === 0) return undefined;
        const payloads = picked.map((key) =>
          encodeCacheRecord({ op: 'delete', key, expiresAtMillis: 0, value: new Uint8Array() }),
        );
        return { keys: picked, payloads };
      },
      (first) => {
        let n = 0;
        picked.forEach((key, i) => {
          if (this.index.has(key)) n++;
          this.applyDelete(key, first + i);
          this.hub.publish({ offset: first + i, key, op: 'delete', expiresAtMillis: 0 });
        });
        return n;
      },
      () => 0,
    );
    this.maybeCompact();
    return removed;
  }

  /**
   * The owner's expiry pass: appends one delete per key whose expiry has passed (at most `max`),
   * so watchers see expiries as deletes. Each key is re-checked when the batch is claimed: a key
   * refreshed since, or with a write staged, is left alone. Answers how many were deleted.
   */
  async expireDue(max = EXPIRY_DELETES_PER_PASS_MAX): Promise<number> {
    this.writer.checkOpen();
    if (this.writer.isBehind()) await this.writer.catchUpIfBehind();
    const limit = Math.min(max, EXPIRY_DELETES_PER_PASS_MAX);
    const due: string[] = [];
    const scanNow = this.now();
    for (const [key, e] of this.index) {
      if (due.length >= limit) break;
      if (isExpired(e.expiresAtMillis, scanNow)) due.push(key);
    }
    if (due.length === 0) return 0;
    return this.expireKeys(due);
  }

  /**
   * Appends one delete per key of `due` still expired when the batch is claimed (a key refreshed
   * since, or with a write staged, is left alone) and tells the watchers; answers how many.
   */
  private expireKeys(due: string[]): Promise<number> {
    let picked: string[] = [];
    return this.writer.commit(
      () => {
        const nowMs = this.now();
        picked = due.filter((key) => {
          const e = this.index.get(key);
          return (
            e !== undefined && isExpired(e.expiresAtMillis, nowMs) && !this.writer.isStaged(key)
          );
        });
        if (picked.length === 0) return undefined;
        const payloads = picked.map((key) =>
          encodeCacheRecord({ op: 'delete', key, expiresAtMillis: 0, value: new Uint8Array() }),
        );
        return { keys: picked, payloads };
      },
      (first) => {
        picked.forEach((key, i) => {
          this.applyDelete(key, first + i);
          this.hub.publish({ offset: first + i, key, op: 'delete', expiresAtMillis: 0 });
        });
        return picked.length;
      },
      () => 0,
    );
  }

  watch(filter: WatchFilter, start: WatchStart, opts: WatchOptions = {}): CacheWatch {
    this.writer.checkOpen();
    if ('key' in filter) encodeKey(filter.key);
    return this.hub.watch(filter, start, { nowMs: this.now, ...opts });
  }

  /** Runs (or joins) one compaction pass now, whatever the trigger says. */
  compact(): Promise<CompactionResult> {
    return this.compactionPass.run(
      () =>
        keyedCompactionTarget({
          log: this.log,
          keysBelow: (cut) => this.keysBelow(cut),
          copyBatches: (cut) => this.copyBatches(cut),
          stopping: () => this.stoppingFlag,
        }),
      this.opts.compaction,
    );
  }

  /** The pass in progress, if any. */
  get compacting(): Promise<CompactionResult> | undefined {
    return this.compactionPass.current;
  }

  /** True when the log holds more than 4x its live bytes and more than the floor. */
  wantsCompaction(): boolean {
    const size = this.log.sizeBytes;
    const floor = this.opts.compaction?.floorBytes ?? CACHE_COMPACTION_FLOOR_BYTES_DEFAULT;
    // A cut still held by the log's floor is trimmed when the floor rises: a pass meanwhile
    // would seal a segment and restate every live entry again, over and over.
    if (this.log.trimWaiting) return false;
    return size > floor && size > COMPACTION_GARBAGE_RATIO * this.liveBytesTotal;
  }

  /** Waits for in-flight writes, stops compaction at its next step, ends watches, closes the log. */
  async close(): Promise<void> {
    if (this.writer.closed) return;
    this.stoppingFlag = true;
    await this.writer.close();
    // Close only waits for the pass to stop: its failure is its starter's (an auto pass retries).
    await this.compactionPass.current?.catch(() => undefined);
    this.hub.closeAll();
    await this.log.close();
  }

  private maybeCompact(): void {
    if (this.opts.compaction?.auto === false || this.compactionPass.current !== undefined) return;
    if (this.stoppingFlag || !this.wantsCompaction()) return;
    // Off the write path: nobody awaits this; a failed pass is retried by a later trigger.
    this.compact().catch(() => undefined);
  }

  // ---- index ----

  private applyPut(
    key: string,
    offset: number,
    version: number,
    expiresAt: number,
    payloadLen: number,
  ) {
    const prev = this.index.get(key);
    if (prev !== undefined) this.liveBytesTotal -= prev.bytes;
    const bytes = payloadLen + RECORD_FRAMING_BYTES;
    this.index.set(key, { offset, version, expiresAtMillis: expiresAt, bytes });
    this.liveBytesTotal += bytes;
    // Sized first: a put of a new key makes no iterator while nothing observes (the usual case).
    if (prev === undefined && this.observers.size > 0) for (const o of this.observers) o(key, true);
  }

  private applyDelete(key: string, _offset: number) {
    const prev = this.index.get(key);
    if (prev === undefined) return;
    this.liveBytesTotal -= prev.bytes;
    this.index.delete(key);
    if (this.observers.size > 0) for (const o of this.observers) o(key, false);
  }

  private applyRecord(r: PortRecord): CacheRecord {
    const rec = decodeCacheRecord(r.payload, r.offset);
    if (rec.op === 'put') {
      this.applyPut(
        rec.key,
        r.offset,
        rec.carriedVersion ?? r.offset,
        rec.expiresAtMillis,
        r.payload.length,
      );
    } else {
      this.applyDelete(rec.key, r.offset);
    }
    return rec;
  }

  /** Applies every record in `[from, to)` to the index, page by page. */
  private async replay(from: number, to: number): Promise<number> {
    let at = from;
    while (at < to) {
      const res = await this.log.read(at, { maxRecords: REPLAY_PAGE_RECORDS_MAX });
      if (res.kind === 'trimmed') {
        // Nothing below the base can matter: compaction restated every live value above it.
        at = res.oldest;
        continue;
      }
      for (const r of res.records) {
        if (r.offset >= to) return to;
        this.applyRecord(r);
      }
      if (res.next <= at) return at;
      at = res.next;
    }
    return Math.max(at, from);
  }

  /**
   * The record at `offset`, or undefined when compaction trimmed it. On a poisoned log, a record
   * acknowledged but never made durable is out of reach: that fails with the log's poison.
   */
  private async readAt(offset: number): Promise<CacheRecord | undefined> {
    // A tiny byte budget keeps the read to the record's own chunk (a read returns at least one).
    const res = await this.log.read(offset, { maxRecords: 1, maxBytes: 1 });
    if (res.kind === 'trimmed') return undefined;
    const r = res.records[0];
    if (r === undefined || r.offset !== offset) {
      const poison = this.log.poison;
      if (poison !== undefined) throw poison;
      throw new CacheRecordCorruptError(`indexed record is missing from the log`, offset);
    }
    return decodeCacheRecord(r.payload, offset);
  }

  // ---- watch source ----

  private snapshot(filter: WatchFilter, nowMs: number): SnapshotEntry[] {
    const out: SnapshotEntry[] = [];
    const pick = (key: string, e: IndexEntry) => {
      if (!isExpired(e.expiresAtMillis, nowMs)) {
        out.push({
          key,
          version: e.version,
          expiresAtMillis: e.expiresAtMillis,
          bytes: e.bytes,
        });
      }
    };
    if ('key' in filter) {
      const e = this.index.get(filter.key);
      if (e !== undefined) pick(filter.key, e);
      return out;
    }
    for (const [key, e] of this.index) if (matchesFilter(filter, key)) pick(key, e);
    // Write order: values written together sit together in the log, so a chunk of the snapshot
    // is a few page reads (key order scattered them over the whole log).
    return out.sort((a, b) => a.version - b.version);
  }

  private async snapshotValue(s: SnapshotEntry): Promise<Uint8Array | undefined> {
    for (let attempt = 0; attempt < WATCH_SNAPSHOT_READ_ATTEMPTS_MAX; attempt++) {
      const e = this.index.get(s.key);
      if (e === undefined || e.version !== s.version) return undefined;
      const rec = await this.readAt(e.offset);
      if (rec !== undefined) return rec.value;
    }
    throw new ProjectionReadMovedError(s.key);
  }

  /**
   * The values of a chunk of snapshot entries, read in pages of the log: the records still
   * current are visited lowest offset first, and one read covers every wanted record within
   * WATCH_SNAPSHOT_PAGE_RECORDS_MAX of the first. A record compaction moved meanwhile (the read
   * finds it trimmed, or skipped over) is fetched on its own, with the single read's retries.
   */
  private async snapshotValues(chunk: SnapshotEntry[]): Promise<Array<Uint8Array | undefined>> {
    const out = new Array<Uint8Array | undefined>(chunk.length).fill(undefined);
    const wanted: Array<{ at: number; i: number }> = [];
    for (let i = 0; i < chunk.length; i++) {
      const s = chunk[i]!;
      const e = this.index.get(s.key);
      if (e !== undefined && e.version === s.version) wanted.push({ at: e.offset, i });
    }
    wanted.sort((a, b) => a.at - b.at);
    const alone: number[] = [];
    let w = 0;
    while (w < wanted.length) {
      const from = wanted[w]!.at;
      let last = w;
      while (
        last + 1 < wanted.length &&
        wanted[last + 1]!.at - from < WATCH_SNAPSHOT_PAGE_RECORDS_MAX
      ) {
        last++;
      }
      const res = await this.log.read(from, {
        maxRecords: wanted[last]!.at - from + 1,
        maxBytes: WATCH_SNAPSHOT_CHUNK_BYTES_MAX,
      });
      if (res.kind === 'trimmed') {
        while (w < wanted.length && wanted[w]!.at < res.oldest) alone.push(wanted[w++]!.i);
        continue;
      }
      const before = w;
      for (const r of res.records) {
        while (w <= last && wanted[w]!.at < r.offset) alone.push(wanted[w++]!.i);
        if (w > last) break;
        if (wanted[w]!.at === r.offset)
          out[wanted[w++]!.i] = decodeCacheRecord(r.payload, r.offset).value;
      }
      // A read that answered nothing usable must still move on (the record is fetched alone).
      if (w === before) alone.push(wanted[w++]!.i);
    }
    for (const i of alone) out[i] = await this.snapshotValue(chunk[i]!);
    return out;
  }

  private async *history(
    from: number,
    to: number,
    filter: WatchFilter,
  ): AsyncIterable<CacheChange> {
    let at = from;
    while (at < to) {
      const res = await this.log.read(at, { maxRecords: WATCH_REPLAY_PAGE_RECORDS_MAX });
      if (res.kind === 'trimmed') throw new WatchHistoryTrimmedError(at);
      for (const r of res.records) {
        if (r.offset >= to) return;
        const rec = decodeCacheRecord(r.payload, r.offset);
        // Compaction copies restate values a watcher already has: invisible to watchers.
        if (rec.carriedVersion !== undefined || !matchesFilter(filter, rec.key)) continue;
        yield rec.op === 'put'
          ? {
              offset: r.offset,
              key: rec.key,
              op: 'put',
              value: rec.value,
              expiresAtMillis: rec.expiresAtMillis,
            }
          : { offset: r.offset, key: rec.key, op: 'delete', expiresAtMillis: 0 };
      }
      if (res.next <= at) return;
      at = res.next;
    }
  }

  // ---- compaction target ----

  private keysBelow(cut: number): string[] {
    const keys: string[] = [];
    // An expired entry leaves the index only through a delete appended for it (by the expiry
    // pass, or by the copy phase below), which is what tells its watchers; dropping it here
    // silently lost that.
    for (const [key, e] of this.index) if (e.offset < cut) keys.push(key);
    return keys;
  }

  /** Scans the log below the cut page by page; yields a copy per batch of live records found. */
  private async *copyBatches(cut: number): AsyncIterable<CopyBatch> {
    const nowMs = this.now();
    let expired: string[] = [];
    let found: LiveRead[] = [];
    let at = this.log.baseOffset;
    while (at < cut) {
      const res = await this.log.read(at, { maxRecords: COMPACTION_SCAN_PAGE_RECORDS });
      if (res.kind === 'trimmed') {
        at = res.oldest;
        continue;
      }
      for (const r of res.records) {
        if (r.offset >= cut) break;
        const rec = decodeCacheRecord(r.payload, r.offset);
        const entry = this.index.get(rec.key);
        // Live = the record the index points at; staged keys wait for a later round.
        if (entry === undefined || entry.offset !== r.offset || this.writer.isStaged(rec.key))
          continue;
        if (isExpired(entry.expiresAtMillis, nowMs)) {
          // Not copied and not dropped in silence: its delete is appended here, as the expiry
          // pass would (whose budget per pass a burst of expiries can outrun).
          expired.push(rec.key);
          if (expired.length === COMPACTION_BATCH_RECORDS) {
            const keys = expired;
            expired = [];
            yield () => this.expireKeys(keys).then((n) => ({ records: n, bytes: 0 }));
          }
          continue;
        }
        found.push({ key: rec.key, entry, rec });
        if (found.length === COMPACTION_BATCH_RECORDS) {
          const batch = found;
          found = [];
          yield () => this.copy(batch);
        }
      }
      if (res.next <= at) break;
      at = res.next;
    }
    if (found.length > 0) yield () => this.copy(found);
    if (expired.length > 0)
      yield () => this.expireKeys(expired).then((n) => ({ records: n, bytes: 0 }));
  }

  private copy(reads: LiveRead[]): Promise<{ records: number; bytes: number }> {
    let picked: typeof reads = [];
    return this.writer.commit(
      () => {
        // Re-checked under the lock: a key written since the read, or with a write staged, is
        // not copied (the copy would land after that write and resurrect the older value).
        picked = reads.filter(
          (r) => this.index.get(r.key) === r.entry && !this.writer.isStaged(r.key),
        );
        if (picked.length === 0) return undefined;
        const payloads = picked.map((r) =>
          encodeCacheRecord({
            op: 'put',
            key: r.key,
            expiresAtMillis: r.entry.expiresAtMillis,
            value: r.rec.value,
            carriedVersion: r.entry.version,
          }),
        );
        return { keys: picked.map((r) => r.key), payloads };
      },
      (first, staging) => {
        let bytes = 0;
        picked.forEach((r, i) => {
          assert(
            this.index.get(r.key) === r.entry,
            'a copied key changed while its copy was staged',
          );
          const len = staging.payloads[i]!.length;
          this.applyPut(r.key, first + i, r.entry.version, r.entry.expiresAtMillis, len);
          bytes += len;
        });
        return { records: picked.length, bytes };
      },
      () => ({ records: 0, bytes: 0 }),
    );
  }
}
