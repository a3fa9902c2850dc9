/**
 * The watch core shared by LogCache and EphemeralCache: key/prefix filters, bounded per-watcher
 * queues filled with a try-send (a writer never waits on a watcher), register-before-read joins
 * (live, from an offset, retained, resnapshot) and overflow that ends a watch naming the first
 * missed offset. It does no I/O itself: history and values come from a `WatchSource`.
 */
import { assert } from '@felix/common';
import { ProjectionInputError, WatchHistoryTrimmedError } from '../errors.js';
import {
  WATCH_QUEUE_CAPACITY_DEFAULT,
  WATCH_QUEUE_CAPACITY_MAX,
  WATCH_SNAPSHOT_CHUNK_BYTES_MAX,
  WATCH_SNAPSHOT_CHUNK_ENTRIES_MAX,
  WATCH_SNAPSHOT_READS_IN_FLIGHT_MAX,
} from '../limits.js';

/** One applied write as a watcher sees it. */
export interface CacheChange {
  /** Log offset of the write (for snapshot values: the offset of the put that produced it). */
  offset: number;
  key: string;
  op: 'put' | 'delete';
  /** The value for puts; absent for deletes. */
  value?: Uint8Array;
  /** Absolute Unix ms, 0 = never. */
  expiresAtMillis: number;
}

export type WatchFilter = { key: string } | { prefix: string };

/** Where a watch begins: live changes only, history from an offset, or current state first. */
export type WatchStart = { kind: 'live' } | { kind: 'from'; offset: number } | { kind: 'retained' };

export type WatchEvent =
  | { kind: 'change'; change: CacheChange }
  /** Final event of a watch whose queue overflowed: re-watch from `resumeFrom` to continue. */
  | { kind: 'lagged'; resumeFrom: number };

/** A key's current entry captured at the frontier, for retained and resnapshot starts. */
export interface SnapshotEntry {
  key: string;
  version: number;
  expiresAtMillis: number;
  /** Approximate bytes of the value's record (bounds how many values one read holds). */
  bytes: number;
}

/** What the watch core needs from a cache. `frontier` and `snapshot` must be synchronous. */
export interface WatchSource {
  /** Next offset not yet applied to the index (every change below it has been applied). */
  frontier(): number;
  /** Oldest offset history can be replayed from. */
  baseOffset(): number;
  /** Current entries matching the filter, not expired at `nowMs`, in write (version) order. */
  snapshot(filter: WatchFilter, nowMs: number): SnapshotEntry[];
  /** The value of a snapshot entry, or undefined when it was replaced since. */
  snapshotValue(entry: SnapshotEntry): Promise<Uint8Array | undefined>;
  /**
   * The values of several snapshot entries at once, in their order (undefined: replaced
   * since). A log-backed source reads them in pages of the log instead of one read per key.
   */
  snapshotValues?(entries: SnapshotEntry[]): Promise<Array<Uint8Array | undefined>>;
  /** Changes in `[from, to)` matching the filter, in offset order (compaction copies skipped). */
  replay(from: number, to: number, filter: WatchFilter): AsyncIterable<CacheChange>;
}

export function matchesFilter(filter: WatchFilter, key: string): boolean {
  return 'key' in filter ? key === filter.key : key.startsWith(filter.prefix);
}

/** A registered watcher's bounded queue of live changes. */
class WatchQueue {
  readonly items: CacheChange[] = [];
  /** Set once a change did not fit: the offset the watch must resume from. */
  firstMissed: number | undefined;
  dropBelow = 0;
  private wake: (() => void) | undefined;

  constructor(
    readonly filter: WatchFilter,
    readonly capacity: number,
    private readonly detach: (q: WatchQueue) => void,
  ) {}

  /** Never blocks; answers false when the watcher is ended by this change. */
  trySend(change: CacheChange): void {
    if (this.firstMissed !== undefined || change.offset < this.dropBelow) return;
    if (!matchesFilter(this.filter, change.key)) return;
    if (this.items.length >= this.capacity) {
      this.firstMissed = change.offset;
      this.detach(this);
    } else {
      this.items.push(change);
    }
    this.notify();
  }

  notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  waitForChange(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }
}

/** One watch: confirmation fields plus an async iterator of events. */
export class CacheWatch implements AsyncIterable<WatchEvent> {
  private closed = false;

  constructor(
    /** Offset from which live changes follow (the applied frontier at registration). */
    readonly resumeOffset: number,
    /** True when the requested offset was compacted away and current state is served instead. */
    readonly resnapshot: boolean,
    /** For retained and resnapshot starts: how many current values precede the live changes. */
    readonly retainedCount: number | undefined,
    private readonly head: AsyncIterable<CacheChange>,
    private readonly queue: WatchQueue,
    private readonly detach: (q: WatchQueue) => void,
  ) {}

  /** Ends the watch; an iterator waiting for a change returns. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.detach(this.queue);
    this.queue.notify();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    try {
      try {
        for await (const change of this.head) {
          if (this.closed) return;
          yield { kind: 'change', change };
        }
      } catch (err) {
        // History compacted away mid-replay: end like an overflow; re-watching resnapshots.
        if (!(err instanceof WatchHistoryTrimmedError)) throw err;
        yield { kind: 'lagged', resumeFrom: err.resumeFrom };
        return;
      }
      const q = this.queue;
      for (;;) {
        if (this.closed) return;
        const change = q.items.shift();
        if (change !== undefined) {
          yield { kind: 'change', change };
          continue;
        }
        if (q.firstMissed !== undefined) {
          yield { kind: 'lagged', resumeFrom: q.firstMissed };
          return;
        }
        await q.waitForChange();
      }
    } finally {
      this.close();
    }
  }
}

export interface WatchOptions {
  queueCapacity?: number;
  /** Clock for expiry of snapshot entries (tests inject one). */
  nowMs?: () => number;
}

/** The set of watchers of one cache; `publish` is called once per applied write, in offset order. */
export class WatchHub {
  private readonly queues = new Set<WatchQueue>();
  private lastPublished = -1;

  constructor(private readonly source: WatchSource) {}

  get size(): number {
    return this.queues.size;
  }

  /** Fans one applied change out to matching watchers; never blocks, never throws for them. */
  publish(change: CacheChange): void {
    assert(change.offset > this.lastPublished, 'watch changes must be published in offset order');
    this.lastPublished = change.offset;
    for (const q of this.queues) q.trySend(change);
  }

  /** Closes every watch (cache closing); their iterators end after what is queued. */
  closeAll(): void {
    for (const q of this.queues) {
      q.firstMissed ??= Math.max(q.dropBelow, this.lastPublished + 1);
      q.notify();
    }
    this.queues.clear();
  }

  watch(filter: WatchFilter, start: WatchStart, opts: WatchOptions = {}): CacheWatch {
    const capacity = opts.queueCapacity ?? WATCH_QUEUE_CAPACITY_DEFAULT;
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > WATCH_QUEUE_CAPACITY_MAX) {
      throw new ProjectionInputError(
        `watch queue capacity ${capacity} outside 1..${WATCH_QUEUE_CAPACITY_MAX}`,
      );
    }
    if ('prefix' in filter && typeof filter.prefix !== 'string') {
      throw new ProjectionInputError('watch prefix must be a string');
    }
    const detach = (q: WatchQueue) => this.queues.delete(q);
    // Register first, then read the frontier in the same synchronous step: every change below
    // the frontier is served from history or the snapshot, every change at or past it is queued.
    const queue = new WatchQueue(filter, capacity, detach);
    this.queues.add(queue);
    const frontier = this.source.frontier();
    queue.dropBelow = frontier;
    const nowMs = opts.nowMs ?? Date.now;
    const src = this.source;
    if (start.kind === 'live') {
      return new CacheWatch(frontier, false, undefined, emptyHistory(), queue, detach);
    }
    if (start.kind === 'from' && start.offset >= src.baseOffset()) {
      const from = Math.min(start.offset, frontier);
      queue.dropBelow = Math.max(frontier, start.offset);
      return new CacheWatch(
        frontier,
        false,
        undefined,
        src.replay(from, frontier, filter),
        queue,
        detach,
      );
    }
    const entries = src.snapshot(filter, nowMs());
    const head = snapshotValues(src, entries);
    // A resnapshot counts its values too: the watcher must know where current state ends.
    return new CacheWatch(frontier, start.kind === 'from', entries.length, head, queue, detach);
  }
}

async function* emptyHistory(): AsyncIterable<CacheChange> {}

async function* snapshotValues(
  src: WatchSource,
  entries: SnapshotEntry[],
): AsyncIterable<CacheChange> {
  if (src.snapshotValues !== undefined) {
    yield* snapshotChunks(src.snapshotValues.bind(src), entries);
    return;
  }
  // Reads run up to WATCH_SNAPSHOT_READS_IN_FLIGHT_MAX ahead; values are yielded in entry order.
  const ahead: Array<Promise<Uint8Array | undefined>> = [];
  let next = 0;
  for (const e of entries) {
    while (next < entries.length && ahead.length < WATCH_SNAPSHOT_READS_IN_FLIGHT_MAX) {
      const read = src.snapshotValue(entries[next++]!);
      read.catch(() => undefined); // a read left behind by a closed watch must not go unhandled
      ahead.push(read);
    }
    const value = await ahead.shift()!;
    // A value replaced since the snapshot arrives as a live change (its offset is past the frontier).
    if (value === undefined) continue;
    yield { offset: e.version, key: e.key, op: 'put', value, expiresAtMillis: e.expiresAtMillis };
  }
}

/**
 * Values fetched a chunk at a time (bounded in entries and bytes), the next chunk's read running
 * while this one's values are yielded: two chunks in memory at most.
 */
async function* snapshotChunks(
  readChunk: (entries: SnapshotEntry[]) => Promise<Array<Uint8Array | undefined>>,
  entries: SnapshotEntry[],
): AsyncIterable<CacheChange> {
  let at = 0;
  const nextChunk = (): {
    chunk: SnapshotEntry[];
    values: Promise<Array<Uint8Array | undefined>>;
  } | null => {
    if (at >= entries.length) return null;
    const start = at;
    let bytes = 0;
    // At least one entry per chunk, whatever its size.
    do {
      bytes += entries[at]!.bytes;
      at++;
    } while (
      at < entries.length &&
      at - start < WATCH_SNAPSHOT_CHUNK_ENTRIES_MAX &&
      bytes + entries[at]!.bytes <= WATCH_SNAPSHOT_CHUNK_BYTES_MAX
    );
    const chunk = entries.slice(start, at);
    const values = readChunk(chunk);
    values.catch(() => undefined); // a read left behind by a closed watch must not go unhandled
    return { chunk, values };
  };
  let current = nextChunk();
  while (current !== null) {
    const values = await current.values;
    const ahead = nextChunk();
    for (let i = 0; i < current.chunk.length; i++) {
      const value = values[i];
      // A value replaced since the snapshot arrives as a live change (past the frontier).
      if (value === undefined) continue;
      const e = current.chunk[i]!;
      yield { offset: e.version, key: e.key, op: 'put', value, expiresAtMillis: e.expiresAtMillis };
    }
    current = ahead;
  }
}
