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
 * Bytes coalesced into one write when several batches are queued: enough to reach the disk's
 * sequential bandwidth (1 MiB synced writes run near its limit), small enough that encoding
 * the next write overlaps the sync of the previous one instead of queueing behind it.
 */
export const WRITE_COALESCE_BYTES_MAX = 1024 * 1024;

/**
 * Under `onCommit` (and `periodic`, see below), a group write up to this size goes to the page
 * cache on the calling thread instead of a thread-pool round trip, whose two wakeups cost more
 * than the copy; the fdatasync stays on the pool. On this machine a 256 KiB write takes about
 * 50 µs inline and 85 µs through the pool (p50, scripts/bench/storage/inline-write.ts; more
 * under load, where each wakeup waits for a core). It was 64 KiB, just under the 67 KB group
 * of 64 one-KiB publishes acked together, which then took the pool on every replica.
 */
export const WRITE_INLINE_BYTES_MAX = 256 * 1024;

/**
 * Under `periodic`, a group write up to WRITE_INLINE_BYTES_MAX goes to the page cache on the
 * calling thread while the bytes no completed sync covers stay at or under this bound: a few
 * periodic intervals of a busy shard, far below where the kernel starts throttling writers on
 * dirty pages, so an inline write never waits on the disk. Past it the pool takes the writes.
 */
export const WRITE_INLINE_UNSYNCED_BYTES_MAX = 4 * 1024 * 1024;

/**
 * A flush first lets the writer reach batches already queued when it holds at most this many
 * bytes: small batches cost microseconds to write and then share the sync. Beyond it the sync
 * goes first and the queued batches are encoded while it runs.
 */
export const FLUSH_WAIT_QUEUED_BYTES_MAX = 1024 * 1024;

/**
 * Zeros written and synced ahead of the active segment's data in one preallocation step.
 * Overwriting bytes the file already has leaves its size alone, so a group commit's
 * fdatasync flushes data only instead of also committing a size change to the journal
 * (about 40 % cheaper per group here, see scripts/bench/storage/fdatasync-raw.ts). The next
 * step starts once less than half of this is left ahead of the data. 0 turns it off.
 */
export const SEGMENT_PREALLOCATE_BYTES_DEFAULT = 4 * 1024 * 1024;

/**
 * When a segment's data has outgrown its zeros (its first writes, or after preallocation fell
 * behind), the next step starts this far past the data (at most a quarter of what is left of
 * the segment), so writes keep landing in the gap instead of waiting for the step. Gap
 * writes grow nothing but still allocate blocks.
 */
export const PREALLOCATE_GAP_BYTES = 256 * 1024;

/** Zero bytes written per call while preallocating (one shared, never written-to buffer). */
export const PREALLOCATE_WRITE_BYTES = 1024 * 1024;

/** Recovery and verify read segments in chunks of this size (two reused buffers). */
export const SCAN_CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * Room in front of each scan chunk for the unfinished record carried over from the previous
 * chunk; a longer record is read again on its own instead of carried.
 */
export const SCAN_CARRY_BYTES = 256 * 1024;

/** A read's first chunk: small, so a read that wants one record does not pull megabytes. */
export const READ_CHUNK_FIRST_BYTES = 64 * 1024;

/** A read's later chunks grow up to this (or its byte budget plus the slack below). */
export const READ_CHUNK_BYTES_MAX = 8 * 1024 * 1024;

/** Read beyond the byte budget, so skipping from an index entry to `from` rarely rereads. */
export const READ_CHUNK_SLACK_BYTES = 64 * 1024;

/** `felix-log-tool dump` reads this many bytes of records per step. */
export const DUMP_CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * Record reads one `offsetForTime` may make: its binary search halves a range of safe-integer
 * offsets per read, so it needs at most 54; anything past this is a bug, not a big log.
 */
export const OFFSET_FOR_TIME_PROBES_MAX = 64;

/** Retention checks run on their own timer at this interval (reference default). */
export const RETENTION_CHECK_INTERVAL_MS_DEFAULT = 60_000;

/** Sealed segment files kept open for reads; older ones are closed and reopened lazily. */
export const OPEN_SEALED_SEGMENTS_MAX = 256;

/** Segments one log may hold; a log past this has a segment size far too small for its data. */
export const SEGMENTS_PER_LOG_MAX = 1_000_000;

/** Zero runs that start on this boundary inside a damaged record are a lost-block tail. */
export const ZERO_TAIL_BLOCK_BYTES = 512;

/**
 * Steps one directory-lock acquisition may take (create, judge the holder, take over a dead
 * holder's file) before giving up: each step either wins, refuses a live holder, or follows
 * a change another process made, so only processes racing in a loop exhaust it.
 */
export const DIR_LOCK_ATTEMPTS_MAX = 16;

/** Largest lock file read: a valid one is under 200 bytes; anything longer is garbage. */
export const DIR_LOCK_FILE_BYTES_MAX = 512;

/**
 * Largest /proc file the lock reads to tell a live holder (`/proc/<pid>/stat`, the boot id):
 * a stat line is a few hundred bytes, with a command name of 64 bytes at most.
 */
export const PROC_FILE_BYTES_MAX = 4096;

// ---- projections (cache, counters, group state) ----

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
/** Snapshot value reads a retained or resnapshot watch keeps in flight ahead of the one it
 *  yields. One read at a time made a 10,000-key join take over a second (one pread round trip
 *  per key); a window overlaps them while values still come out in key order. */
export const WATCH_SNAPSHOT_READS_IN_FLIGHT_MAX = 64;
/** Snapshot entries whose values a log-backed cache fetches in one go (one chunk): their
 *  records are read in pages of the log, not one read per key. */
export const WATCH_SNAPSHOT_CHUNK_ENTRIES_MAX = 1024;
/** Record bytes one snapshot chunk may hold (a chunk has at least one entry, whatever its size);
 *  a watch holds at most two chunks, the one it yields and the one read ahead. */
export const WATCH_SNAPSHOT_CHUNK_BYTES_MAX = 4 * 1024 * 1024;
/** Records one page read of a snapshot chunk may span: wanted records further apart than this
 *  start a page of their own, so a sparse chunk never reads long runs it does not need. */
export const WATCH_SNAPSHOT_PAGE_RECORDS_MAX = 512;

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

/** Records read per page when compaction scans the log below its cut for live records. */
export const COMPACTION_SCAN_PAGE_RECORDS = 4096;

/** Copy rounds per pass; live records still below the cut after this wait for the next pass. */
export const COMPACTION_ROUNDS_MAX = 3;

/** Copy budget per store (reference default); 0 = unlimited. A cache copy costs 2x payload. */
export const COMPACTION_BYTES_PER_SEC_DEFAULT = 64 * 1024 * 1024;

/**
 * Deletes one expiry pass appends at most (reference: 1024 per shard per pass), so a pass over a
 * cache full of lapsed keys is one bounded write, not a storm.
 */
export const EXPIRY_DELETES_PER_PASS_MAX = 1024;

/**
 * Keys one `LogCache.deleteMany` removes at most: its records are one batch, written at once
 * and held in memory until applied (a few dozen bytes each), so a caller with more pages them.
 */
export const CACHE_DELETE_BATCH_KEYS_MAX = 1024;

/** Group positions a cursor store remembers (what it last read or wrote), so a commit need not
 *  read the cursor back from its log first; beyond it the oldest remembered is forgotten. */
export const CURSOR_MEMO_ENTRIES_MAX = 100_000;

/** Dead letters one list call answers at most: listing walks the index and reads each entry. */
export const DEAD_LETTER_LIST_MAX = 1000;

/**
 * Dead-letter offsets a dead-letter store keeps indexed in memory, over all the groups it pages
 * (a sorted index per group, built from the keys on first use, so a page costs its own length
 * and a binary search, not a scan of every key). About 9 bytes each (measured; deletions can
 * leave up to ~4x that held): ~9 MB at the bound, next to the ~140 bytes per dead letter the
 * cache's own index holds (its key string and entry).
 * Past it the least recently paged group's index is dropped (rebuilt by one scan when paged
 * again); the group in use is kept whatever its size.
 */
export const DEAD_LETTER_INDEX_ENTRIES_MAX = 1_000_000;

/** Offsets a dead-letter walk takes from its index first; each later batch doubles, up to
 *  DEAD_LETTER_LIST_MAX (a walk stopped early copied little it did not read). */
export const DEAD_LETTER_WALK_BATCH_FIRST = 64;

/** Offsets per chunk of a dead-letter index: an insert or delete moves at most twice this many. */
export const DEAD_LETTER_INDEX_CHUNK_ENTRIES = 512;

/**
 * Segment size of projection logs. Compaction reclaims whole segments and reopening a log scans
 * its newest segment in full, so projection logs roll far sooner than stream logs (256 MiB).
 */
export const PROJECTION_SEGMENT_BYTES_DEFAULT = 16 * 1024 * 1024;

/**
 * How long a fault file's contents (FaultFileIo, test only) are trusted before the next
 * fdatasync reads it again: a harness's change takes effect within this, and a busy log reads
 * the file at most 20 times a second.
 */
export const FAULT_FILE_POLL_MS = 50;
/** Bytes of a fault file read; the rest is ignored (the file holds a few short lines). */
export const FAULT_FILE_BYTES_MAX = 4096;
/** Longest `fsync_delay_ms` honoured: a typo cannot park a log's flush for hours. */
export const FAULT_FSYNC_DELAY_MS_MAX = 60_000;

/** Records a follower append reads per page while comparing a batch's overlap with what the
 *  log holds (a resend is usually a few records; a new leader's overlap one). */
export const FOLLOWER_COMPARE_READ_RECORDS_MAX = 512;

/**
 * Generations whose start offsets a shard's `generations` file keeps (the newest; older ones
 * lie below the commit offset in practice, where nothing is ever truncated). 256 entries are
 * 4 KiB, read whole at open.
 */
export const GENERATION_STARTS_MAX = 256;

/**
 * Most payload bytes a log keeps in memory of its newest written records when a tail reader
 * asks for them (`SegmentLog.keepRecent`, a leader's shipper): the cap on what a caller asks.
 */
export const RECENT_RECORDS_BYTES_MAX = 4 * 1024 * 1024;
