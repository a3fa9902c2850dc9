/**
 * What a consumer group reads from the stream shard it consumes: the visible tail, the oldest
 * offset the log still holds, records held in memory (visited in place) and the durable log.
 * A durable stream shard (streams/shard.ts) implements it; groups never reach into its ring or
 * its store.
 */
import type { StoreRead } from '../streams/shard.js';

export interface RecordSource {
  /** Next offset to become visible: every record below it is applied (and durable). */
  readonly appliedNext: number;
  /** Oldest offset the durable log still holds (retention moves it). */
  readonly logBaseOffset: number;
  /**
   * Visits records [from, until) in offset order from memory when memory holds `from`; false,
   * visiting nothing, when it does not (then `readLog`).
   */
  visitHeld(
    from: number,
    until: number,
    visit: (offset: number, payload: Uint8Array, timestampMicros: number) => void,
  ): boolean;
  readLog(from: number, budget: { maxRecords: number; maxBytes: number }): Promise<StoreRead>;
}
