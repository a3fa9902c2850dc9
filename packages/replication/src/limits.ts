/** Bounds of log shipping. */

/**
 * Records one replication batch carries. A batch is one frame and one follower append; with
 * REPLICATE_BATCHES_IN_FLIGHT_MAX, this bounds what a lost answer resends.
 */
export const REPLICATE_BATCH_RECORDS_MAX = 1024;

/** Payload bytes one replication batch carries (a batch has at least one record). */
export const REPLICATE_BATCH_BYTES_MAX = 1024 * 1024;

/**
 * Record batches shipped to one follower of one log before the first is answered: the follower
 * writes the next while it syncs the one before (one fdatasync then covers both), so under
 * `onCommit` its sync, not the round trip, sets the pace. Each is at most
 * REPLICATE_BATCH_BYTES_MAX, so a follower's loop holds at most this many of them.
 */
export const REPLICATE_BATCHES_IN_FLIGHT_MAX = 2;

/**
 * Payload bytes of its newest records a shipped log keeps in memory for its shipper
 * (`SegmentLog.keepRecent`): one batch's worth, so a caught-up follower's next batch is never
 * read back from the file the leader just wrote.
 */
export const REPLICATE_RECENT_BYTES_MAX = REPLICATE_BATCH_BYTES_MAX;

/** Largest replica set a commit mark is computed over (the router's bound). */
export const REPLICA_SET_SIZE_MAX = 16;

/** How long a leader waits for a follower's answer to one batch before sending it again. */
export const REPLICATE_ANSWER_TIMEOUT_MS_DEFAULT = 2_000;

/** Backoff between attempts to a follower whose link failed or that refused transiently:
 *  doubling from the first to the last. */
export const REPLICATE_RETRY_MS_MIN = 50;
export const REPLICATE_RETRY_MS_MAX = 2_000;

/** A follower halted `needs_bootstrap` (its copy lies wholly below the leader's base) is asked
 *  to rebuild this long after the halt, and after each failed rebuild twice as long, up to the
 *  most (the reference's 5 s doubling to 5 min). */
export const REPLICATE_REBUILD_AFTER_MS = 5_000;
export const REPLICATE_REBUILD_RETRY_MS_MAX = 300_000;
/** Rebuilds a leader broker has in flight at once, over all its shards and logs (each is followed
 *  by a catch-up from the base, which costs that follower's link and disk). */
export const REPLICATE_REBUILDS_CONCURRENT_MAX = 1;
/** A rebuild that found every slot taken looks again after this long. */
export const REPLICATE_REBUILD_SLOT_RETRY_MS = 1_000;

/** A caught-up shipper looks at its log again at least this often (it is also woken when the
 *  log's durable offset moves). */
export const REPLICATE_IDLE_CHECK_MS = 100;

/** A quorum shard's mark goes to a caught-up follower alone only once that follower had nothing
 *  to ship for this long: a publisher awaiting each ack sends the next record sooner, and its
 *  batch carries the mark without a synced save of its own in front of it. */
export const REPLICATE_MARK_ALONE_AFTER_MS = 50;

/** Requests a follower queues per shard (a leader has REPLICATE_BATCHES_IN_FLIGHT_MAX batches
 *  and a mark or trim in flight; a deposed one may add as many); past this the follower answers
 *  `Overload`. */
export const REPLICA_SHARD_REQUESTS_QUEUED_MAX = 8;

/** Follower logs one replica server keeps open, counted per (shard, log kind): a stream shard
 *  with groups holds three, a cache shard with counters two; past this a new one is refused as
 *  `Overload` until one is released. */
export const REPLICA_SHARDS_OPEN_MAX = 4096;

/** A new leader's fence retries each replica from the first delay doubling to the last
 *  (reference FENCE_RETRY / FENCE_RETRY_MAX). */
export const FENCE_RETRY_MS_MIN = 200;
export const FENCE_RETRY_MS_MAX = 2_000;

/** How long one fence attempt waits for a replica's answer before trying again. */
export const FENCE_ANSWER_TIMEOUT_MS = 2_000;

/** A follower of a stream that does not fsync on commit saves the commit offset the leader
 *  carries at most this often (the reference: once a second). */
export const REPLICA_COMMIT_SAVE_INTERVAL_MS = 1_000;

/** A follower of a stream that fsyncs on commit saves it at most this often, off the answer
 *  path (the records are fsynced before the answer; the offset on disk is only a lower bound,
 *  docs/replication.md "The follower's commit offset"): a save is an atomic replace with two
 *  syncs, 1-2 ms, which on every batch doubled the follower's time to answer. */
export const REPLICA_COMMIT_SAVE_ON_COMMIT_INTERVAL_MS = 100;

/** The most one `ReplicateFetch` answer carries (a promoted leader taking the furthest tail;
 *  the reference allows 4 MiB; a shipped batch's bound keeps one frame size on the links). */
export const TAIL_FETCH_BYTES_MAX = 1024 * 1024;

/** How long a promoted leader spends taking the furthest tail before it gives the open up (it is
 *  tried again, fence included). */
export const TAIL_FETCH_DEADLINE_MS = 10_000;
