/**
 * The one correlation table of a broker connection: every request on it takes its id from one
 * counter; publishes and `stream_shards` on the publish stream wait here for their answer
 * (cache, counter, group and `offset_for_time` requests wait in their request lane's queue,
 * answered in order, and the connection's loss fails the lane first). The
 * connection's loss fails every entry at once: an acked publish as OutcomeUnknownError (it may
 * or may not be in the log), anything else with the loss itself.
 */
import { OutcomeUnknownError } from '../errors.js';

export interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
  /** The stream of an acked publish (its loss is an unknown outcome); undefined otherwise. */
  publishTo: string | undefined;
}

export class RequestTable {
  private readonly pending = new Map<number, Pending>();
  private lastId = 0;

  /** The id for the next request (answers name it). */
  nextId(): number {
    return ++this.lastId;
  }

  add(id: number, entry: Pending): void {
    this.pending.set(id, entry);
  }

  /** Requests waiting for their answers. */
  get size(): number {
    return this.pending.size;
  }

  /** The entry for `id`, removed; undefined when no request of that id waits. */
  take(id: number): Pending | undefined {
    const p = this.pending.get(id);
    if (p !== undefined) this.pending.delete(id);
    return p;
  }

  /** Fails every waiting request: the connection is gone. `unread`: the broker said it applied
   *  none of them (it ended the publish stream after its last answer), so no outcome is unknown. */
  failAll(err: Error, unread = false): void {
    for (const p of this.pending.values()) {
      p.reject(
        p.publishTo !== undefined && !unread
          ? new OutcomeUnknownError(p.publishTo, { cause: err })
          : err,
      );
    }
    this.pending.clear();
  }
}
