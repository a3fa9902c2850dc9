/**
 * One subscriber's bounded fanout queue. Publishing only ever does `offer()`, which never waits:
 * a full queue drops the new batch for this subscriber (policy DropNew), so a slow subscriber
 * cannot block a publisher or anyone else. A subscriber that can be told (durable stream, client
 * negotiated `subscription_lagged`) stops taking live batches at the first drop and is ended with
 * `subscription_lagged` naming that offset once its queue drains; others see an offset gap.
 */
export type SubscriberItem<B> =
  | { kind: 'batch'; batch: B }
  | { kind: 'lagged'; resumeFrom: number }
  | { kind: 'end' };

interface Batchish {
  first: number;
  /** Records in the batch. */
  count: number;
  retain(): void;
  release(): void;
}

export class SubscriberQueue<B extends Batchish> {
  private items: B[] = [];
  private head = 0;
  private waiter: (() => void) | null = null;
  private ended = false;
  /** First offset dropped for this subscriber, if any. */
  firstDropped: number | null = null;
  droppedRecords = 0;

  constructor(
    readonly capacity: number,
    /** End with `lagged` at the first drop instead of leaving a gap. */
    readonly endOnLag: boolean,
    private readonly onDrop: (records: number) => void,
  ) {}

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
    if (this.depth >= this.capacity) {
      this.firstDropped ??= batch.first;
      this.drop(batch);
      this.wake();
      return;
    }
    batch.retain();
    this.items.push(batch);
    this.wake();
  }

  private drop(batch: B): void {
    this.droppedRecords += batch.count;
    this.onDrop(batch.count);
  }

  /** Ends the queue: `take()` answers `end` once what is queued is taken. */
  end(): void {
    this.ended = true;
    this.wake();
  }

  /** Ends the queue and lets go of everything still queued (the reader is gone). */
  discard(): void {
    this.ended = true;
    for (let i = this.head; i < this.items.length; i++) this.items[i]?.release();
    this.items = [];
    this.head = 0;
    this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  /** The next queued batch if there is one, without waiting. */
  poll(): B | undefined {
    if (this.depth === 0) return undefined;
    const batch = this.items[this.head]!;
    this.items[this.head] = undefined as unknown as B;
    this.head++;
    return batch;
  }

  /** The next item; waits while the queue is empty. */
  async take(): Promise<SubscriberItem<B>> {
    for (;;) {
      if (this.depth > 0) {
        const batch = this.items[this.head]!;
        this.items[this.head] = undefined as unknown as B;
        this.head++;
        if (this.head > 256 && this.head * 2 > this.items.length) {
          this.items = this.items.slice(this.head);
          this.head = 0;
        }
        return { kind: 'batch', batch };
      }
      if (this.endOnLag && this.firstDropped !== null)
        return { kind: 'lagged', resumeFrom: this.firstDropped };
      if (this.ended) return { kind: 'end' };
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }
}
