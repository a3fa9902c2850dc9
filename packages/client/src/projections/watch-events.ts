/** What a cache watch takes and yields (cache.ts watches one shard, watch-span.ts several). */

export type WatchFilterSpec = { key: string } | { prefix: string };

export interface CacheWatchOptions {
  /** Yield each matching key's current value first, then `state_complete`, then changes. */
  retained?: boolean;
  /** Resume from this offset (the `resumeFrom` of a lagged event, or last offset + 1): one
   *  shard's offset, so a prefix watch across several shards takes none. */
  fromOffset?: number;
  /** The one shard a prefix watch on a multi-shard cache reads; absent, a client routing in a
   *  cluster watches every shard (watch-span.ts). */
  shard?: number;
  signal?: AbortSignal;
}

export type CacheWatchEvent = (
  | { type: 'put'; key: string; value: Uint8Array; offset: number; expiresAtMillis: number }
  | { type: 'delete'; key: string; offset: number }
  /** The history the watch resumed from was compacted away: drop what you hold for this
   *  filter (on a watch across shards, for this `shard`); the current values follow, then
   *  `state_complete`, then changes. */
  | { type: 'resnapshot'; resumeOffset: number }
  /** The retained (or resnapshot) phase is over: everything before this was current state. On
   *  a watch across shards the first one (no `shard`) comes once every shard's values are in,
   *  `resumeOffset` is -1 and `resumeOffsets` holds each shard's; a later one names its shard. */
  | {
      type: 'state_complete';
      retainedCount: number;
      resumeOffset: number;
      resumeOffsets?: number[];
    }
  /** The broker ended the watch for lag; the watch continues from `resumeFrom`, gaplessly. */
  | { type: 'lagged'; resumeFrom: number }
  /** The connection was replaced; the watch continues from `resumeFrom`. */
  | { type: 'resumed'; resumeFrom: number }
) & {
  /** On a watch across shards: the shard the event is of (its offsets are that shard's). */
  shard?: number;
};
