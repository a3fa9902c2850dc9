/**
 * Every bound of the segment log, units last, each with why it has this value.
 * Format constants (header sizes) live in segment/format.ts; these are policy.
 */

/** Largest record body the format allows (reference §3.4: bodies are capped below 2^26). */
export const RECORD_PAYLOAD_BYTES_MAX = 2 ** 26 - 1;

/** Default rollover size (reference default): large enough that rollovers are rare. */
export const SEGMENT_BYTES_DEFAULT = 256 * 1024 * 1024;

/** Smallest accepted segment size: tests roll often, but a header must still fit with room. */
export const SEGMENT_BYTES_MIN = 4096;

/** Largest accepted segment size: positions stay far inside safe integers and file limits. */
export const SEGMENT_BYTES_MAX = 2 ** 40;

/** One sparse index entry per this many bytes of records (reference default). */
export const INDEX_SPACING_BYTES_DEFAULT = 4096;

/** Index entries buffered before they are written out; the rest are written at seal. */
export const INDEX_ENTRIES_FLUSH_BATCH = 256;

/** Periodic fsync interval (reference default): bounds the loss window of `periodic`. */
export const FLUSH_INTERVAL_MS_DEFAULT = 250;

/** Shortest periodic interval accepted; below this `onCommit` is the honest choice. */
export const FLUSH_INTERVAL_MS_MIN = 1;

/** Records returned by one read when the caller gives no record budget (reference default). */
export const READ_RECORDS_MAX_DEFAULT = 10_000;

/** Bytes returned by one read when the caller gives no byte budget (the wire's read cap). */
export const READ_BYTES_MAX_DEFAULT = 4 * 1024 * 1024;

/** Bytes of appends queued behind the writer before new appends are refused (retry later). */
export const APPEND_QUEUE_BYTES_MAX = 256 * 1024 * 1024;

/**
 * Bytes coalesced into one write when several batches are queued: big enough to reach the
 * disk's sequential bandwidth, small enough that one write does not hold memory for long.
 */
export const WRITE_COALESCE_BYTES_MAX = 8 * 1024 * 1024;

/** Recovery and verify read segments in chunks of this size (one reused buffer). */
export const SCAN_CHUNK_BYTES = 8 * 1024 * 1024;

/** Retention checks run on their own timer at this interval (reference default). */
export const RETENTION_CHECK_INTERVAL_MS_DEFAULT = 60_000;

/** Sealed segment files kept open for reads; older ones are closed and reopened lazily. */
export const OPEN_SEALED_SEGMENTS_MAX = 256;

/** Segments one log may hold; a log past this has a segment size far too small for its data. */
export const SEGMENTS_PER_LOG_MAX = 1_000_000;

/** Zero runs that start on this boundary inside a damaged record are a lost-block tail. */
export const ZERO_TAIL_BLOCK_BYTES = 512;
