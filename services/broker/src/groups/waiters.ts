/**
 * Waiting long polls, keyed by the record source (stream shard) they consume: a publish or a
 * settle on one shard wakes only the polls of that shard; a drain wakes them all. A poll also
 * wakes on its own timer (its deadline, a claim lapsing, or the periodic re-check).
 *
 * A poll reads `mark()` before its hand-out looks and passes it to `sleep`: a wake that came
 * after the mark (between the look and the sleep, while the hand-out's promise settled) ends
 * the sleep at once instead of being lost until the re-check.
 */
import type { RecordSource } from './record-source.js';

export class PollWaiters {
  private readonly bySource = new Map<RecordSource, Set<() => void>>();
  /** Counts wakes; `mark()` is its value, so a mark costs a field read. */
  private clock = 0;
  /** The clock at each source's last wake. Weak: a source gone (its shard closed) leaves no
   *  entry, so this is bounded by the live shards. */
  private readonly wokenAt = new WeakMap<RecordSource, number>();
  /** The clock at the last `wakeAll`. */
  private allWokenAt = 0;

  /** Taken before a hand-out looks, for `sleep`: wakes after it are not missed. */
  mark(): number {
    return this.clock;
  }

  /** Resolves after `ms`, or sooner when `source` is woken; at once when it was woken (or all
   *  were) after `since`, a `mark()` taken before the poll's hand-out looked. */
  sleep(source: RecordSource, ms: number, since: number): Promise<void> {
    if (this.allWokenAt > since || (this.wokenAt.get(source) ?? 0) > since) {
      return Promise.resolve();
    }
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

  /** Wakes every poll waiting on `source` to re-check its group, and any about to wait. */
  wake(source: RecordSource): void {
    this.wokenAt.set(source, ++this.clock);
    const waiting = this.bySource.get(source);
    if (waiting === undefined) return;
    this.bySource.delete(source);
    for (const done of waiting) done();
  }

  /** Wakes every waiting poll, and any about to wait (the broker drains or closes). */
  wakeAll(): void {
    this.allWokenAt = ++this.clock;
    const all = [...this.bySource.values()];
    this.bySource.clear();
    for (const waiting of all) for (const done of waiting) done();
  }

  /** Sources with a waiting poll (bounded by the polls, each a client request in flight). */
  get size(): number {
    return this.bySource.size;
  }
}
