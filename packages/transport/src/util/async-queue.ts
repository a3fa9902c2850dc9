/**
 * A bounded queue (one waiting consumer at a time) exposed as an async iterable: what listeners and connections
 * use to hand out accepted connections and incoming streams.
 */

export class AsyncQueue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private head = 0;
  private waiter: ((r: IteratorResult<T>) => void) | null = null;
  private failWaiter: ((e: Error) => void) | null = null;
  private ended = false;
  private error: Error | null = null;

  constructor(private readonly max: number) {}

  get length(): number {
    return this.items.length - this.head;
  }

  /** Adds an item; false when the queue is full or ended (the caller applies its overflow policy). */
  push(item: T): boolean {
    if (this.ended) return false;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      this.failWaiter = null;
      w({ value: item, done: false });
      return true;
    }
    if (this.length >= this.max) return false;
    this.items.push(item);
    return true;
  }

  /** Ends the iteration after the queued items (with `error`, the iteration throws it instead). */
  end(error?: Error): void {
    if (this.ended) return;
    this.ended = true;
    if (error) this.error = error;
    if (this.waiter) {
      const w = this.waiter;
      const f = this.failWaiter;
      this.waiter = null;
      this.failWaiter = null;
      if (error && f) f(error);
      else w({ value: undefined, done: true });
    }
  }

  /** Takes everything still queued (for cleanup after the consumer left). */
  drain(): T[] {
    const rest = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return rest;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.head < this.items.length) {
          const value = this.items[this.head]!;
          this.items[this.head] = undefined as T;
          this.head++;
          if (this.head === this.items.length) {
            this.items = [];
            this.head = 0;
          }
          return Promise.resolve({ value, done: false });
        }
        if (this.ended) {
          if (this.error) return Promise.reject(this.error);
          return Promise.resolve({ value: undefined, done: true });
        }
        return new Promise<IteratorResult<T>>((resolve, reject) => {
          this.waiter = resolve;
          this.failWaiter = reject;
        });
      },
      // Leaving one loop does not end the queue: a later loop takes the next items.
      return: () => Promise.resolve({ value: undefined, done: true }),
    };
  }
}
