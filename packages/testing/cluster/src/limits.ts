import { BadClusterSpecError } from './errors.js';

/**
 * Every deadline, bound and cadence of the harness. Deadlines are base values on a quiet machine:
 * `scaled()` multiplies them by FELIX_TEST_TIMEOUT_SCALE (default 1) for slow or loaded hosts.
 */

/** A control plane or broker process logs that it listens within this. */
export const PROCESS_LISTEN_DEADLINE_MS = 30_000;
/** SIGTERM's grace before SIGKILL (`stop`, `restart`, shutdown). */
export const PROCESS_STOP_GRACE_MS = 10_000;
/** A process is gone this long after SIGKILL (the bound catches a stuck wait, not the kernel). */
export const PROCESS_EXIT_DEADLINE_MS = 10_000;
/** A broker that fails at its first start (a port taken meanwhile) is retried on fresh ports. */
export const BROKER_START_ATTEMPTS_MAX = 3;
/** Every shard of every stream and cache is served within this (`waitServed`'s default). */
export const SERVED_DEADLINE_MS = 60_000;
/** How often `waitServed` asks the control plane and the brokers again. */
export const SERVED_POLL_MS = 100;
/** One HTTP call to a control plane or a broker's operator listener. */
export const HTTP_CALL_DEADLINE_MS = 5_000;
/** How often a starting process's output is checked for its ready line. */
export const PROCESS_READY_POLL_MS = 20;
/** How often /proc is asked whether SIGSTOP or SIGCONT took effect. */
export const SIGNAL_POLL_MS = 5;
/** A dial, Hello or request of the test speaking as a peer broker (src/cluster/peer.ts). */
export const PEER_CALL_DEADLINE_MS = 10_000;
/** A fault file write, a signal or a heal takes effect within this. */
export const FAULT_DEADLINE_MS = 5_000;
/** The broker reads its storage fault file at most 50 ms old (docs/reliability.md): a fault is
 *  what the next fdatasync reads after this. */
export const FAULT_FILE_SETTLE_MS = 150;
/** How often a written partition file's acknowledgement (`<file>.applied`) is looked for. */
export const PARTITION_ACK_POLL_MS = 10;
/** openssl makes the cluster's CA and one certificate per broker within this (each call). */
export const PKI_COMMAND_DEADLINE_MS = 20_000;
/** Days the cluster's CA and broker certificates are valid. */
export const PKI_CERT_DAYS = 7;
/** Dropping the cluster's Postgres schema at shutdown. */
export const POSTGRES_DROP_DEADLINE_MS = 20_000;

/** Brokers in one cluster (node ids n0..n<N-1>). */
export const CLUSTER_BROKERS_MAX = 16;
/** Lines of each process's output kept in memory (the log file keeps everything). */
export const LOG_TAIL_LINES_MAX = 200;
/** Bytes of one output line kept in the in-memory tail. */
export const LOG_LINE_BYTES_MAX = 4_096;
/** Lines of output a start failure's error quotes. */
export const START_ERROR_TAIL_LINES = 15;
/** Lines `logTails()` prints per process when asked for none. */
export const LOG_TAILS_LINES_DEFAULT = 40;
/** Bytes read from the end of a log file for `logTails()`. */
export const LOG_TAIL_READ_BYTES_MAX = 256 * 1024;

/** Lifetime of the client and node tokens: longer than any campaign (15 min) with margin. */
export const TOKEN_TTL_S = 4 * 3_600;

/** Control-plane liveness for tests: a dead broker's shards move within ~3 s, not ~20 s. */
export const CP_HEARTBEAT_INTERVAL_MS = 500;
export const CP_EXPIRY_TIMEOUT_MS = 3_000;
export const CP_EXPIRY_SWEEP_INTERVAL_MS = 250;
export const CP_RECONCILE_INTERVAL_MS = 500;

/** Client reconnect backoff suited to tests: fast first retries, short ceiling. */
export const CLIENT_RECONNECT_BASE_MS = 20;
export const CLIENT_RECONNECT_MAX_DELAY_MS = 500;
/** A call waits this long for a connection during a reconnect. */
export const CLIENT_REQUEST_TIMEOUT_MS = 10_000;
export const CLIENT_CONNECT_TIMEOUT_MS = 10_000;
/** A silent broker (e.g. paused) is declared dead after this. */
export const CLIENT_IDLE_TIMEOUT_MS = 5_000;

/** FELIX_TEST_TIMEOUT_SCALE, read on each call: a positive number, default 1. */
export function timeoutScale(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.FELIX_TEST_TIMEOUT_SCALE;
  if (raw === undefined || raw === '') return 1;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) {
    throw new BadClusterSpecError(
      `FELIX_TEST_TIMEOUT_SCALE=${JSON.stringify(raw)} is not a positive number`,
    );
  }
  return n;
}

/** A base deadline times FELIX_TEST_TIMEOUT_SCALE. */
export function scaled(ms: number): number {
  return Math.ceil(ms * timeoutScale());
}

// Campaigns (issue 22): the recorder, the workloads, the nemesis and the campaign run.

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
/** Losses one subscription remembers so as not to record one told twice (as status and as
 *  `lostBefore`). */
export const SUBSCRIBER_GAPS_REMEMBERED_MAX = 1_024;
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

/** Copies of every shard (and `quorum` acks) once a campaign has this many brokers. */
export const CAMPAIGN_REPLICATION_FACTOR = 3;
/** After healing, every shard must be served again within this. */
export const CAMPAIGN_SERVED_DEADLINE_MS = 60_000;
/** Listeners on the campaign's stop signal (one or two per workload process). */
export const SIGNAL_LISTENERS_MAX = 100;
/** Lines of each process log printed with a failed campaign. */
export const CAMPAIGN_LOG_TAIL_LINES = 40;
