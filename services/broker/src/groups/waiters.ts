/**
 * Waiting long polls, keyed by the record source (stream shard) they consume: a publish or a
 * settle on one shard wakes only the polls of that shard; a drain wakes them all. A poll also
 * wakes on its own timer (its deadline, a claim lapsing, or the periodic re-check).
 */
import type { RecordSource } from './record-source.js';

export class PollWaiters {
  private readonly bySource = new Map<RecordSource, Set<() => void>>();

  /** Resolves after `ms`, or sooner when `source` is woken. */
  sleep(source: RecordSource, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let waiting = this.bySource.get(source);
      if (waiting === undefined) {
        waiting = new Set();
        this.bySource.set(source, waiting);
      }
      const held = waiting;
      const done = () => {
        clearTimeout(timer);
        held.delete(done);
        if (held.size === 0 && this.bySource.get(source) === held) this.bySource.delete(source);
        resolve();
      };
      const timer = setTimeout(done, ms);
      held.add(done);
    });
  }

  /** Wakes every poll waiting on `source` to re-check its group. */
  wake(source: RecordSource): void {
    const waiting = this.bySource.get(source);
    if (waiting === undefined) return;
    this.bySource.delete(source);
    for (const done of waiting) done();
  }

  /** Wakes every waiting poll (the broker drains or closes). */
  wakeAll(): void {
    const all = [...this.bySource.values()];
    this.bySource.clear();
    for (const waiting of all) for (const done of waiting) done();
  }

  /** Sources with a waiting poll (bounded by the polls, each a client request in flight). */
  get size(): number {
    return this.bySource.size;
  }
}
