/**
 * The rebuilds a leader broker runs at once (REPLICATE_REBUILDS_CONCURRENT_MAX): one set per
 * broker, shared by every shard's shippers. A rebuild that finds none free does not queue; it
 * looks again later (the shipper's REPLICATE_REBUILD_SLOT_RETRY_MS), so nothing here grows.
 */
import { REPLICATE_REBUILDS_CONCURRENT_MAX } from '../limits.js';

export class RebuildSlots {
  private taken = 0;

  constructor(readonly max = REPLICATE_REBUILDS_CONCURRENT_MAX) {}

  /** How many rebuilds hold a slot now. */
  get running(): number {
    return this.taken;
  }

  /** A slot's release (call it once), or null when every slot is taken. */
  take(): (() => void) | null {
    if (this.taken >= this.max) return null;
    this.taken++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.taken--;
    };
  }
}
