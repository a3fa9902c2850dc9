/**
 * A bounded async FIFO: `push` waits while full (backpressure, never drops), `pull` waits while
 * empty. Full means `capacity` items, or, when given a `weigh` and `bytesMax`, items weighing
 * that many bytes (an empty queue takes any one item, so a heavy item cannot wedge it).
 * `close()` lets readers drain what is queued, then they see the end; `fail(err)` makes the next
 * pull throw once drained.
 */
export class BoundedQueue<T> {
  private items: T[] = [];
  /** What the queued items weigh (0 without a `weigh`). */
  private weight = 0;
  private readers: Array<() => void> = [];
  private writers: Array<() => void> = [];
  private done = false;
  private error: unknown = null;

  constructor(
    readonly capacity: number,
    private readonly bytes?: { bytesMax: number; weigh: (item: T) => number },
  ) {}

  get length(): number {
    return this.items.length;
  }

  /** Bytes the queued items weigh. */
  get queuedBytes(): number {
    return this.weight;
  }

  private full(w: number): boolean {
    if (this.items.length >= this.capacity) return true;
    return (
      this.bytes !== undefined && this.items.length > 0 && this.weight + w > this.bytes.bytesMax
    );
  }

  get closed(): boolean {
    return this.done;
  }

  async push(item: T, signal?: AbortSignal): Promise<boolean> {
    const w = this.bytes?.weigh(item) ?? 0;
    while (this.full(w) && !this.done) {
      if (signal?.aborted) return false;
      // The abort listener goes when the wait ends either way: a writer woken by room would
      // otherwise leave one per wait on the signal (thousands on a long subscription).
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal?.removeEventListener('abort', wake);
          resolve();
        };
        this.writers.push(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
    }
    if (this.done) return false;
    this.items.push(item);
    this.weight += w;
    this.readers.shift()?.();
    return true;
  }

  /** The next item, or `undefined` once closed and drained. */
  async pull(): Promise<T | undefined> {
    for (;;) {
      if (this.items.length > 0) {
        const item = this.items.shift() as T;
        if (this.bytes !== undefined) this.weight -= this.bytes.weigh(item);
        // Every waiting writer re-checks: an item of many bytes may make room for several.
        for (const w of this.writers.splice(0)) w();
        return item;
      }
      if (this.done) {
        if (this.error !== null) {
          const err = this.error;
          this.error = null;
          throw err;
        }
        return undefined;
      }
      await new Promise<void>((resolve) => this.readers.push(resolve));
    }
  }

  close(): void {
    this.done = true;
    for (const w of this.readers.splice(0)) w();
    for (const w of this.writers.splice(0)) w();
  }

  fail(err: unknown): void {
    if (this.done) return;
    this.error = err;
    this.close();
  }
}
