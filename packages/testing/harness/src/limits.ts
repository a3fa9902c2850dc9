/** Default deadline for `waitFor` when a test names none. */
export const WAIT_FOR_DEADLINE_MS_DEFAULT = 10_000;
/** How often `waitFor` re-evaluates its condition. */
export const WAIT_FOR_POLL_INTERVAL_MS = 5;
/** Bound on bytes of child-process output kept for diagnostics. */
export const CHILD_OUTPUT_BYTES_MAX = 1024 * 1024;
/** Grace period for a child to exit after SIGTERM before it is SIGKILLed. */
export const CHILD_STOP_GRACE_MS = 10_000;
/** Deadline for one openssl command making test certificates. */
export const OPENSSL_COMMAND_DEADLINE_MS = 20_000;
/** Validity of a test CA and the certificates it signs. */
export const TEST_CERT_DAYS = 2;
/** Ports `freePort` tries before it gives up (each a random pick, checked for TCP and UDP). */
export const FREE_PORT_ATTEMPTS_MAX = 50;
/** The lowest port `freePort` picks: above the services of a test machine (PostgreSQL 5432,
 *  Redis 6379, NATS 4222, MariaDB 3306, …), below the kernel's ephemeral range. */
export const FREE_PORT_MIN = 10_000;
