/**
 * Bounds of the recorder, the workloads, the nemesis and the campaign (issue 22). Every wait,
 * buffer and retry loop of src/recorder.ts, src/workloads/ and src/campaign/ is named here.
 */

/** History lines held in memory before the recorder writes them out. */
export const RECORDER_BUFFER_LINES_MAX = 512;
/** The recorder writes what it holds at least this often. */
export const RECORDER_FLUSH_INTERVAL_MS = 200;
/** A longer error message is cut to this many characters in a history line. */
export const RECORDER_ERROR_CHARS_MAX = 200;

/** A workload's client gives up on an answer after this long (its `requestTimeoutMs`). */
export const WORKLOAD_REQUEST_TIMEOUT_MS = 5_000;
/** One workload operation is abandoned (recorded `info`) after this long, whatever the client does. */
export const WORKLOAD_OP_TIMEOUT_MS = 7_000;
/** A SIGKILLed or paused broker is noticed by a client over QUIC only through its idle bound. */
export const WORKLOAD_IDLE_TIMEOUT_MS = 2_000;
/** Reconnect backoff of a workload's client. */
export const WORKLOAD_RECONNECT_BASE_MS = 50;
export const WORKLOAD_RECONNECT_DELAY_MS_MAX = 500;
/** Pause between two operations of one workload process (seeded within these). */
export const WORKLOAD_PAUSE_MS_MIN = 5;
export const WORKLOAD_PAUSE_MS_MAX = 40;
/** After an error a workload process waits this long before its next operation. */
export const WORKLOAD_ERROR_BACKOFF_MS = 100;
/** Stopping every workload (after the campaign's signal) may take this long. */
export const WORKLOAD_SHUTDOWN_MS = 10_000;
/** Sends of one value by an at-least-once publisher (the first send and its resends). */
export const PUBLISH_ATTEMPTS_MAX = 3;
/** A subscriber closes and re-subscribes after a seeded time within these. */
export const RESUBSCRIBE_AFTER_MS_MIN = 1_500;
export const RESUBSCRIBE_AFTER_MS_MAX = 8_000;
/** A group consumer's claims last this long (the poll's `visibilityMs`). */
export const GROUP_VISIBILITY_MS = 2_000;
/** A group poll waits at most this long for a record. */
export const GROUP_POLL_WAIT_MS = 500;
/** Hand-outs of one record before the group dead-letters it (`FELIX_GROUP_MAX_ATTEMPTS`). */
export const GROUP_ATTEMPTS_MAX = 4;

/** Keys of the publishers (`key-0`..), the cache (`k0`..) and the counter (`c0`..). */
export const PUBLISH_KEYS = 8;
export const CACHE_KEYS = 3;
export const COUNTER_KEYS = 3;
/** Largest |delta| a counter adder adds. */
export const COUNTER_DELTA_ABS_MAX = 5;

/** The final reads (sentinels, logs, caches, counters, group drains) must end within this. */
export const FINAL_READS_DEADLINE_MS = 60_000;
/** Sentinel publishes tried per stream to land one on every shard. */
export const SENTINEL_PUBLISHES_MAX = 64;
/** Records one final read of a shard may hold. */
export const FINAL_READ_RECORDS_MAX = 1_000_000;
/** The final drain's claims: long enough that its own acks never race a lapse. */
export const FINAL_GROUP_VISIBILITY_MS = 60_000;
/** The final drain of a group polls this many records at a time. */
export const GROUP_DRAIN_POLL_RECORDS = 100;

/** The schedule waits between faults, and holds each fault, within these (milliseconds). */
export const NEMESIS_WAIT_MS_MIN = 1_000;
export const NEMESIS_WAIT_MS_MAX = 4_000;
export const NEMESIS_HOLD_MS_MIN = 2_000;
export const NEMESIS_HOLD_MS_MAX = 6_000;
/** A slow fsync waits within these (milliseconds). */
export const SLOW_FSYNC_MS_MIN = 100;
export const SLOW_FSYNC_MS_MAX = 300;
/** One fault or heal call of the runner may take this long before it is recorded `info`. */
export const NEMESIS_CALL_TIMEOUT_MS = 30_000;
/** Steps one schedule may hold. */
export const SCHEDULE_STEPS_MAX = 10_000;

/** After healing, every shard must be served again within this. */
export const CAMPAIGN_SERVED_DEADLINE_MS = 60_000;
/** Listeners on the campaign's stop signal (one or two per workload process). */
export const SIGNAL_LISTENERS_MAX = 100;
/** Lines of each process log printed with a failed campaign. */
export const CAMPAIGN_LOG_TAIL_LINES = 40;
