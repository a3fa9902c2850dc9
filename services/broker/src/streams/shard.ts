/**
 * One shard of one stream: the append path (store, then ring and fanout in offset order), the
 * cursor checks, and the register-before-read subscribe join.
 *
 * Durable shards append to their store and apply (ring + fanout) only once the store says the
 * batch is durable under its fsync mode, in offset order, so no subscriber ever sees a record
 * before it is durable. In-memory shards assign offsets themselves and the ring is the stream.
 *
 * The join: `subscribe()` reads the visible tail and registers the subscriber's queue in one
 * synchronous step, so every batch applied afterwards reaches the queue (live) and every batch
 * before it is history `[start, liveOffset)`: from a ring snapshot taken in the same step when
 * the ring covers it, otherwise paged from the store. Nothing falls between the halves and
 * nothing is delivered twice.
 *
 * A `quorum` shard (replicated, `consistency: quorum`) holds each durable batch in its
 * QuorumGate until the commit mark covers it, and applies it only then: subscribers, group
 * polls, `latest` and `offset_for_time` all read what is applied, so none of them sees past the
 * mark, and the publisher is acked at the same moment (or answered `quorum_timeout`).
 */
import { randomInt } from 'node:crypto';
import { assert } from '@felix/common';
import type { StreamConfig } from '../config/types.js';
import {
  EVENT_COALESCE_BYTES_MAX,
  EVENT_COALESCE_RECORDS_MAX,
  HISTORY_PAGE_BYTES_MAX,
  HISTORY_PAGE_RECORDS_MAX,
  SUBSCRIBER_QUEUE_BYTES_DEFAULT,
} from '../limits.js';
import { EventBatch, type Payloads, payloadArray } from './event-batch.js';
import { QuorumAbandonedError } from '../errors.js';
import { type QuorumOutcome, QuorumGate } from './quorum-gate.js';
import type { ShardHistory } from '../util/log-history.js';
import { Ring } from './ring.js';
import { type SubscriberBounds, SubscriberQueue } from './subscriber.js';
import type { SegmentLog } from '@felix/storage';

/** One stream as the broker serves it: its config and its shards (by index). */
export interface StreamRuntime {
  config: StreamConfig;
  shards: Shard[];
}

export interface StoredRecord {
  offset: number;
  timestampMicros: number;
  payload: Uint8Array;
}

export type StoreRead =
  | { kind: 'records'; records: StoredRecord[]; next: number }
  | { kind: 'trimmed'; oldest: number };

/** The durable log of one shard, as the broker uses it (see durable-store.ts). */
export interface ShardStore {
  readonly baseOffset: number;
  readonly tailOffset: number;
  /** Append time (µs) of the newest record, 0 when empty; never decreases. */
  readonly newestTimestampMicros: number;
  append(payloads: Uint8Array[], timestampMicros: number): Promise<{ first: number; next: number }>;
  read(from: number, budget: { maxRecords: number; maxBytes: number }): Promise<StoreRead>;
  /** First readable offset appended at or after `atMicros` (binary search), if any. */
  offsetForTime(atMicros: number): Promise<number | undefined>;
  close(): Promise<void>;
  /** The segment log behind a durable store (what a leader ships to its followers). */
  readonly log?: SegmentLog;
}

export type StartSpec =
  | { kind: 'latest' }
  | { kind: 'earliest' }
  | { kind: 'offset'; offset: number };

export type SubscribeOutcome =
  | { ok: true; sub: ShardSubscription }
  | { ok: false; reason: 'too_old' | 'in_future'; requested: number; available: number };

export interface ShardHooks {
  onDrop(records: number): void;
  /** Records became visible on `shard` (consumer groups wake that shard's waiting polls). */
  onApply(shard: Shard, batch: EventBatch): void;
  /** A quorum wait ended (metrics). */
  onQuorumWait?(outcome: QuorumOutcome): void;
}

export interface ShardSubscription {
  readonly startOffset: number;
  readonly liveOffset: number;
  readonly queue: SubscriberQueue<EventBatch>;
  /** History `[startOffset, liveOffset)`, paged, delivered under backpressure. */
  history(): AsyncGenerator<EventBatch>;
  unsubscribe(): void;
}

export class Shard {
  readonly ring: Ring;
  /**
   * The incarnation of an in-memory shard's offsets (`offsets_epoch` on `subscribed`): each
   * shard made begins its offsets again at 0 (a restart, a move back, a stream made anew), and
   * names a fresh incarnation: its making time in ms, times 1,024, plus a random low part.
   */
  readonly offsetsEpoch = Date.now() * 1024 + randomInt(1024);
  /** Next offset subscribers will see: everything below it is applied (and durable). */
  appliedNext: number;
  private nextMemoryOffset: number;
  private chain: Promise<unknown> = Promise.resolve();
  private inFlight = 0;
  readonly subscribers = new Set<SubscriberQueue<EventBatch>>();
  /** Set once this node stops serving the shard: a subscriber that registers afterwards (its
   *  session passed the leadership check just before) is ended at once instead of waiting on
   *  a shard nothing will publish to or end again. */
  private retired = false;
  /** Append time of the newest batch published: a clock stepped back stamps this again, so
   *  times never decrease within a shard (what `offsetForTime` searches relies on it). */
  private newestStampMicros: number;
  /** Set while acks and reads wait for a majority (a replicated `quorum` shard). */
  private gate: QuorumGate<EventBatch> | null = null;
  /** Told when a batch starts waiting (the shipper looks at once instead of at its next tick). */
  private onHeld: (() => void) | undefined;
  /** A replicated shard's history as its leader opened it (util/log-history.ts); else undefined. */
  history: ShardHistory | undefined;

  constructor(
    readonly name: string,
    readonly store: ShardStore | null,
    ring: { records: number; bytes: number },
    private readonly hooks: ShardHooks,
  ) {
    const start = store ? store.tailOffset : 0;
    this.ring = new Ring(ring.records, ring.bytes, start);
    this.appliedNext = start;
    this.nextMemoryOffset = start;
    this.newestStampMicros = store ? store.newestTimestampMicros : 0;
  }

  get durable(): boolean {
    return this.store !== null;
  }

  /** Oldest offset a subscriber can start at. */
  get baseOffset(): number {
    if (this.store) return Math.min(this.store.baseOffset, this.appliedNext);
    return this.ring.size === 0 ? this.appliedNext : this.ring.base;
  }

  get pending(): number {
    return this.inFlight;
  }

  /** Appends a batch; resolves once it is durable under the stream's mode and applied. A wire
   *  payload list goes to subscribers as it arrived (and is split only for the durable log). */
  publish(payloads: Payloads, stampMicros: number): Promise<{ first: number; next: number }> {
    const timestampMicros = Math.max(stampMicros, this.newestStampMicros);
    this.newestStampMicros = timestampMicros;
    if (!this.store) {
      const first = this.nextMemoryOffset;
      const batch = new EventBatch(first, payloads, timestampMicros);
      this.nextMemoryOffset += batch.count;
      this.apply(batch);
      return Promise.resolve({ first, next: batch.next });
    }
    const alone = this.inFlight === 0;
    this.inFlight++;
    const appended = this.store.append(payloadArray(payloads), timestampMicros);
    const stage = (r: { first: number; next: number }) => ({
      r,
      wait: this.applyOrHold(new EventBatch(r.first, payloads, timestampMicros)),
    });
    // Resolves once the batch is applied or held (the chain moves on); `wait` is the ack. The
    // chain only orders applies: with none in flight (every earlier batch applied or failed, as
    // when each publish is awaited before the next) the append's own answer is followed directly.
    const staged = alone ? appended.then(stage) : this.chain.then(() => appended).then(stage);
    staged.catch(() => {
      // The append failed: its caller hears it from `staged` below; it is in flight no more.
      this.inFlight--;
    });
    // The chain only orders applies; each append's failure reaches its own caller via `staged`.
    this.chain = staged.catch(() => undefined);
    return staged.then(({ r, wait }) => (wait === undefined ? r : wait.then(() => r)));
  }

  /**
   * Holds and releases on the commit mark (`timeoutMs` bounds each publisher's wait; `onHeld`
   * hears each batch held), or, with null, stops waiting: whatever is held is applied and
   * acked now.
   */
  holdToCommit(timeoutMs: number | null, onHeld?: () => void): void {
    this.onHeld = onHeld;
    if (timeoutMs === null) {
      const gate = this.gate;
      this.gate = null;
      gate?.open();
      return;
    }
    if (this.gate !== null) return;
    const outcome = (o: QuorumOutcome) => this.hooks.onQuorumWait?.(o);
    this.gate = new QuorumGate<EventBatch>({
      timeoutMs,
      apply: (batch) => {
        this.apply(batch);
        this.inFlight--;
      },
      outcome,
    });
  }

  /**
   * The log took records that are no events (a new leader's generation start, appended to the
   * log beside this shard before it serves) up to `next`: subscribers start past them, and one
   * resuming below reads them from the log as skipped, not lost. Only before any publish.
   */
  passOver(next: number): void {
    if (next <= this.appliedNext) return;
    assert(this.inFlight === 0 && this.ring.size === 0, 'passOver after a publish');
    this.appliedNext = next;
    this.nextMemoryOffset = next;
  }

  /** The commit mark moved: batches it covers become visible and their publishers are acked. */
  commitTo(offset: number): void {
    this.gate?.advance(offset);
  }

  /** Batches waiting for a majority (0 unless quorum). */
  get quorumWaiting(): number {
    return this.gate?.size ?? 0;
  }

  private applyOrHold(batch: EventBatch): Promise<void> | undefined {
    if (this.gate === null) {
      // Applied first: if it threw, the publish's rejection below counts it out once.
      this.apply(batch);
      this.inFlight--;
      return undefined;
    }
    const held = this.gate.hold(batch);
    this.onHeld?.();
    return held;
  }

  /**
   * The first offset a subscriber can read whose batch was appended at or after `atMicros`;
   * undefined when none is visible yet. Durable shards search the log (bounded reads, see
   * SegmentLog.offsetForTime) and answer only offsets already applied; in-memory shards search
   * their ring, so a time older than the oldest record held answers the oldest record held.
   */
  async offsetForTime(atMicros: number): Promise<number | undefined> {
    if (!this.store) return this.ring.firstAtOrAfter(atMicros);
    const found = await this.store.offsetForTime(atMicros);
    return found !== undefined && found < this.appliedNext ? found : undefined;
  }

  // What a consumer group reads (groups/record-source.ts): durable shards only.

  /** Oldest offset the durable log still holds (retention moves it). */
  get logBaseOffset(): number {
    return this.store!.baseOffset;
  }

  /**
   * Visits records [from, until) in place from the ring (no disk read, no copy) when it holds
   * `from` and retention has not trimmed it from the log (the log decides what is gone); false,
   * visiting nothing, otherwise.
   */
  visitHeld(
    from: number,
    until: number,
    visit: (offset: number, payload: Uint8Array, timestampMicros: number) => void,
  ): boolean {
    const ring = this.ring;
    if (ring.size === 0 || from < ring.base || from < this.store!.baseOffset || from >= until) {
      return false;
    }
    ring.visit(from, until, visit);
    return true;
  }

  /** Reads the durable log from `from` within the budget. */
  readLog(from: number, budget: { maxRecords: number; maxBytes: number }): Promise<StoreRead> {
    return this.store!.read(from, budget);
  }

  /** Stops serving: ends every subscriber, and any that registers later. */
  retire(): void {
    this.retired = true;
    const gate = this.gate;
    this.gate = null;
    if (gate !== null) {
      this.inFlight -= gate.size;
      gate.abandon(new QuorumAbandonedError(this.name));
    }
    for (const q of this.subscribers) q.end();
  }

  /** Resolves once every publish issued so far has settled. */
  settled(): Promise<unknown> {
    return this.chain;
  }

  private apply(batch: EventBatch): void {
    this.ring.push(batch);
    this.appliedNext = batch.next;
    this.hooks.onApply(this, batch);
    for (const q of this.subscribers) q.offer(batch);
  }

  /** Registers a subscriber at `start`; `bounds` limit its live queue (envelopes and bytes; a
   *  bare number is an envelope count with the default byte budget). */
  subscribe(
    start: StartSpec,
    bounds: number | { capacity: number; bytesMax: number },
    endOnLag: boolean,
  ): SubscribeOutcome {
    const tail = this.appliedNext;
    const base = this.baseOffset;
    let from: number;
    if (start.kind === 'latest') from = tail;
    else if (start.kind === 'earliest') from = base;
    else {
      from = start.offset;
      if (from < base) return { ok: false, reason: 'too_old', requested: from, available: base };
      if (from > tail) return { ok: false, reason: 'in_future', requested: from, available: tail };
    }
    const queue = new SubscriberQueue<EventBatch>(
      subscriberBounds(bounds),
      endOnLag && this.durable,
      (n) => this.hooks.onDrop(n),
    );
    // Register and snapshot in one synchronous step: the join point is `tail`.
    this.subscribers.add(queue);
    if (this.retired) queue.end();
    const ringCovers = this.ring.size > 0 ? from >= this.ring.base : from === tail;
    const snapshot = ringCovers ? this.ring.range(from, tail) : null;
    const startOffset = from;
    const history = this.historyFrom.bind(this, startOffset, tail, snapshot);
    return {
      ok: true,
      sub: {
        startOffset,
        liveOffset: tail,
        queue,
        history,
        unsubscribe: () => {
          this.subscribers.delete(queue);
          queue.discard();
        },
      },
    };
  }

  private async *historyFrom(
    from: number,
    until: number,
    snapshot: EventBatch[] | null,
  ): AsyncGenerator<EventBatch> {
    if (snapshot) {
      yield* snapshot;
      return;
    }
    const store = this.store;
    if (!store) return; // an in-memory shard always answers from its ring (checked at subscribe)
    let skipped = 0;
    while (from < until) {
      const page = await store.read(from, {
        maxRecords: Math.min(HISTORY_PAGE_RECORDS_MAX, until - from),
        maxBytes: HISTORY_PAGE_BYTES_MAX,
      });
      if (page.kind === 'trimmed') {
        // Retention removed records of our range while we read: they were records, now lost to
        // this reader, so they are not counted as offsets that hold none (`skipped`): the next
        // batch's offset jumps past them, which the client reports as a gap (`lostBefore`).
        from = Math.min(page.oldest, until);
        continue;
      }
      const records = page.records.filter((r) => r.offset >= from && r.offset < until);
      if (records.length === 0) {
        const next = Math.min(Math.max(page.next, from + 1), until);
        skipped += next - from;
        from = next;
        continue;
      }
      for (const run of contiguousRuns(records)) {
        const first = run[0]!.offset;
        skipped += first - from;
        const stamp = run[0]!.timestampMicros;
        yield new EventBatch(
          first,
          run.map((r) => r.payload),
          stamp,
          skipped,
          // A run read from the log may span published batches: keep each record's own time.
          run.every((r) => r.timestampMicros === stamp)
            ? undefined
            : run.map((r) => r.timestampMicros),
        );
        skipped = 0;
        from = first + run.length;
      }
    }
    // Offsets at the end of the range that hold no event (a generation start just below the
    // live tail): said by an empty batch, so the first live record is not taken for a loss.
    if (skipped > 0) yield new EventBatch(until, [], this.newestStampMicros, skipped);
  }
}

function subscriberBounds(
  bounds: number | { capacity: number; bytesMax: number },
): SubscriberBounds {
  const b =
    typeof bounds === 'number'
      ? { capacity: bounds, bytesMax: SUBSCRIBER_QUEUE_BYTES_DEFAULT }
      : bounds;
  return { ...b, runBytesMax: EVENT_COALESCE_BYTES_MAX, runRecordsMax: EVENT_COALESCE_RECORDS_MAX };
}

function contiguousRuns(records: StoredRecord[]): StoredRecord[][] {
  const runs: StoredRecord[][] = [];
  let run: StoredRecord[] = [];
  for (const r of records) {
    const last = run[run.length - 1];
    if (last && r.offset !== last.offset + 1) {
      runs.push(run);
      run = [];
    }
    run.push(r);
  }
  if (run.length > 0) runs.push(run);
  return runs;
}
