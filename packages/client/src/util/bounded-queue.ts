/**
 * A bounded async FIFO: `push` waits while full (backpressure, never drops), `pull` waits while
 * empty. `close()` lets readers drain what is queued, then they see the end; `fail(err)` makes
 * the next pull throw once drained.
 */
export class BoundedQueue<T> {
  private items: T[] = [];
  private readers: Array<() => void> = [];
  private writers: Array<() => void> = [];
  private done = false;
  private error: unknown = null;

  constructor(readonly capacity: number) {}

  get length(): number {
    return this.items.length;
  }

  get closed(): boolean {
    return this.done;
  }

  async push(item: T, signal?: AbortSignal): Promise<boolean> {
    while (this.items.length >= this.capacity && !this.done) {
      if (signal?.aborted) return false;
      await new Promise<void>((resolve) => {
        this.writers.push(resolve);
        signal?.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    if (this.done) return false;
    this.items.push(item);
    this.readers.shift()?.();
    return true;
  }

  /** The next item, or `undefined` once closed and drained. */
  async pull(): Promise<T | undefined> {
    for (;;) {
      if (this.items.length > 0) {
        const item = this.items.shift() as T;
        this.writers.shift()?.();
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
