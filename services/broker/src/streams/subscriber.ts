/**
 * One subscriber's bounded fanout queue. Publishing only ever does `offer()`, which never waits:
 * a full queue drops the new batch for this subscriber (policy DropNew), so a slow subscriber
 * cannot block a publisher or anyone else.
 *
 * The bound is in bytes (`bytesMax`: payload bytes plus each record's 4-byte length prefix, known
 * without encoding) and in envelopes (`capacity`). An envelope is one event frame to come: a batch
 * offered while the queue is empty is an envelope of its own (sent as its shared encoding), and a
 * batch that arrives behind a contiguous one still queued joins that envelope up to
 * `runBytesMax`/`runRecordsMax`, so a subscriber that fell behind gets fewer, larger frames and
 * many single-record batches cost one envelope, not one each.
 *
 * Loss: a subscriber that can be told (durable stream, client negotiated `subscription_lagged`)
 * stops taking live batches at the first drop and is ended with `subscription_lagged` naming that
 * offset once its queue drains. Any other subscriber, once its queue drains with records dropped
 * since the last batch it was given, is handed a `loss` item naming the offset after them (the
 * writer sends it as an empty event batch there), so it learns of the loss without waiting for a
 * later publish; a batch queued after the drop reports it by its own base offset instead.
 */
export type SubscriberItem<B> =
  | { kind: 'batches'; batches: B[] }
  | { kind: 'loss'; next: number; records: number }
  | { kind: 'lagged'; resumeFrom: number }
  | { kind: 'end' };

interface Batchish {
  first: number;
  /** Records in the batch. */
  count: number;
  /** Payload bytes in the batch. */
  bytes: number;
  retain(): void;
  release(): void;
}

/** One envelope: contiguous batches that leave as one event frame. */
interface Run<B> {
  batches: B[];
  bytes: number;
  records: number;
  /** Offset after the run's last record (where a joining batch must start). */
  next: number;
}

/** What a batch costs a queue: its payloads and their length prefixes in an event frame. */
export function queuedBytesOf(batch: { bytes: number; count: number }): number {
  return batch.bytes + 4 * batch.count;
}

export interface SubscriberBounds {
  /** Envelopes (event frames to come) the queue may hold. */
  capacity: number;
  /** Bytes (see `queuedBytesOf`) the queue may hold; an empty queue takes any one batch. */
  bytesMax: number;
  /** Payload bytes and records one envelope may gather. */
  runBytesMax: number;
  runRecordsMax: number;
}

export class SubscriberQueue<B extends Batchish> {
  private items: Run<B>[] = [];
  private head = 0;
  private waiter: (() => void) | null = null;
  private ended = false;
  /** Bytes queued now (see `queuedBytesOf`). */
  bytes = 0;
  /** First offset dropped for this subscriber, if any. */
  firstDropped: number | null = null;
  droppedRecords = 0;
  /** Records dropped since the last batch queued, and the offset after them. */
  private unreported = 0;
  private unreportedNext = 0;

  constructor(
    readonly bounds: SubscriberBounds,
    /** End with `lagged` at the first drop instead of leaving a gap. */
    readonly endOnLag: boolean,
    private readonly onDrop: (records: number) => void,
  ) {}

  get capacity(): number {
    return this.bounds.capacity;
  }

  /** Envelopes queued. */
  get depth(): number {
    return this.items.length - this.head;
  }

  /** Called by the publishing path; never waits. */
  offer(batch: B): void {
    if (this.ended) return;
    if (this.endOnLag && this.firstDropped !== null) {
      this.drop(batch);
      return;
    }
    const cost = queuedBytesOf(batch);
    const tail = this.depth > 0 ? this.items[this.items.length - 1]! : undefined;
    const joins = tail !== undefined && this.joins(tail, batch);
    if (
      (tail !== undefined && this.bytes + cost > this.bounds.bytesMax) ||
      (!joins && this.depth >= this.bounds.capacity)
    ) {
      this.drop(batch);
      return;
    }
    batch.retain();
    this.bytes += cost;
    this.unreported = 0; // its base offset tells the subscriber what was lost before it
    if (joins) {
      tail!.batches.push(batch);
      tail!.bytes += batch.bytes;
      tail!.records += batch.count;
      tail!.next = batch.first + batch.count;
      return; // the writer is already awake: the queue was not empty
    }
    this.items.push({
      batches: [batch],
      bytes: batch.bytes,
      records: batch.count,
      next: batch.first + batch.count,
    });
    this.wake();
  }

  /** True when `batch` may join the queued envelope `tail` (contiguous, within the run bounds). */
  private joins(tail: Run<B>, batch: B): boolean {
    return (
      tail.next === batch.first &&
      tail.bytes + batch.bytes <= this.bounds.runBytesMax &&
      tail.records + batch.count <= this.bounds.runRecordsMax
    );
  }

  private drop(batch: B): void {
    this.firstDropped ??= batch.first;
    this.droppedRecords += batch.count;
    this.unreported += batch.count;
    this.unreportedNext = batch.first + batch.count;
    this.onDrop(batch.count);
    this.wake();
  }

  /** Ends the queue: `take()` answers `end` once what is queued is taken. */
  end(): void {
    this.ended = true;
    this.wake();
  }

  /** Ends the queue and lets go of everything still queued (the reader is gone). */
  discard(): void {
    this.ended = true;
    for (let i = this.head; i < this.items.length; i++) {
      for (const b of this.items[i]!.batches) b.release();
    }
    this.items = [];
    this.head = 0;
    this.bytes = 0;
    this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  /** The next queued envelope's batches if there is one, without waiting. */
  poll(): B[] | undefined {
    if (this.depth === 0) return undefined;
    const run = this.items[this.head]!;
    this.items[this.head] = undefined as unknown as Run<B>;
    this.head++;
    if (this.head > 256 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    for (const b of run.batches) this.bytes -= queuedBytesOf(b);
    return run.batches;
  }

  /** The next item; waits while the queue is empty. */
  async take(): Promise<SubscriberItem<B>> {
    for (;;) {
      const batches = this.poll();
      if (batches !== undefined) return { kind: 'batches', batches };
      if (this.endOnLag && this.firstDropped !== null)
        return { kind: 'lagged', resumeFrom: this.firstDropped };
      if (this.unreported > 0 && !this.endOnLag) {
        const records = this.unreported;
        this.unreported = 0;
        return { kind: 'loss', next: this.unreportedNext, records };
      }
      if (this.ended) return { kind: 'end' };
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }
}
