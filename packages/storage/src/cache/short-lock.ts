/**
 * A FIFO async lock for the short critical section of the projection write path (claim offsets
 * and reserve a commit turn). Nothing slow runs under it: no fsync, no apply.
 */
export class ShortLock {
  private tail: Promise<void> = Promise.resolve();

  run<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
