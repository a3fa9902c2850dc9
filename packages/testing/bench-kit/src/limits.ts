/** Bounds of the benchmark kit, units last. */

/** How long the broker gets to print its `listening` line: a cold start on a busy two-core
 *  machine (JIT, dev certificate, data dir) takes a few seconds; thirty means it is stuck. */
export const BROKER_LISTEN_DEADLINE_MS = 30_000;

/** Broker stdout kept while waiting for the `listening` line: a few log lines come first; a
 *  broker that prints a megabyte without listening is not going to. */
export const BROKER_LISTEN_SCAN_BYTES_MAX = 1024 * 1024;

/** Bytes of the other side's first stdout line (a JSON object of ports and a fingerprint). */
export const SERVE_SELF_LINE_BYTES_MAX = 64 * 1024;

/** Files under a package's src/ looked at for a newer mtime than its dist: far above any of
 *  ours (a few hundred); past it the check gives up rather than walk a runaway tree. */
export const FRESHNESS_SCAN_FILES_MAX = 10_000;
