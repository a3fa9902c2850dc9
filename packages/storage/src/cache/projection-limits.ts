/**
 * Bounds of the projections read from the log. Staged here until the package's limits.ts
 * exists; moved there verbatim afterwards.
 */

/** Longest cache/counter key in bytes: keys live in memory for every entry, so they stay small. */
export const PROJECTION_KEY_BYTES_MAX = 4096;

/** Largest cache value in bytes: well under the segment record cap (64 MiB) so a put is one record. */
export const CACHE_VALUE_BYTES_MAX = 16 * 1024 * 1024;

/**
 * Default capacity of one watcher's queue of live changes. Writers fan out with a try-send and
 * never wait, so a watcher further behind than this is ended (lagged) instead of slowing them.
 */
export const WATCH_QUEUE_CAPACITY_DEFAULT = 4096;

/** Largest watcher queue a caller may ask for: each queued change pins its value in memory. */
export const WATCH_QUEUE_CAPACITY_MAX = 65_536;

/** Records read per page when a watch replays history from the log (one page in memory). */
export const WATCH_REPLAY_PAGE_RECORDS_MAX = 512;

/** Times a snapshot value read is retried after compaction moved the record under it. */
export const WATCH_SNAPSHOT_READ_ATTEMPTS_MAX = 4;

/** Records read per page when an index or fold is rebuilt by replay (the log's read default). */
export const REPLAY_PAGE_RECORDS_MAX = 10_000;

/** Bytes of framing the segment log adds to each record (28-byte header), for byte accounting. */
export const RECORD_FRAMING_BYTES = 28;

/** Times a get retries after compaction moved the record it was about to read. */
export const GET_READ_ATTEMPTS_MAX = 4;

/** Compaction runs when the log holds more than this many times its live bytes (reference). */
export const COMPACTION_GARBAGE_RATIO = 4;

/** Cache logs smaller than this are never compacted: too little to reclaim (reference). */
export const CACHE_COMPACTION_FLOOR_BYTES_DEFAULT = 1024 * 1024;

/** Counter logs smaller than this are never compacted (reference). */
export const COUNTER_COMPACTION_FLOOR_BYTES_DEFAULT = 64 * 1024;

/** Live records copied per staged batch: small enough that writers interleave between batches. */
export const COMPACTION_BATCH_RECORDS = 64;

/** Copy rounds per pass; live records still below the cut after this wait for the next pass. */
export const COMPACTION_ROUNDS_MAX = 3;

/** Copy budget per store (reference default); 0 = unlimited. A cache copy costs 2x payload. */
export const COMPACTION_BYTES_PER_SEC_DEFAULT = 64 * 1024 * 1024;

/** Dead letters one list call answers at most: listing walks the index and reads each entry. */
export const DEAD_LETTER_LIST_MAX = 1000;

/**
 * Segment size of projection logs. Compaction reclaims whole segments and reopening a log scans
 * its newest segment in full, so projection logs roll far sooner than stream logs (256 MiB).
 */
export const PROJECTION_SEGMENT_BYTES_DEFAULT = 16 * 1024 * 1024;
