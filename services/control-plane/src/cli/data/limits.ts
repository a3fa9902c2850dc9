/** Bounds of felixctl's data verbs, units last. */

/** Connect and request timeout: long enough for a loaded broker, short enough for a person. */
export const TIMEOUT_MS_DEFAULT = 10_000;
/** Reconnect attempts: a CLI reports an unreachable broker instead of retrying for minutes. */
export const CONNECT_ATTEMPTS_MAX = 3;
/** Publishes `pub` keeps unanswered while reading stdin lines: keeps order cheap and memory flat. */
export const PUB_LINES_IN_FLIGHT_MAX = 256;
/** `sub --until-end`: quiet time after which the stream counts as read to its end. */
export const UNTIL_END_IDLE_MS_DEFAULT = 2_000;
/** `bench`: the widest in-flight window accepted (each is a pending promise). */
export const BENCH_IN_FLIGHT_MAX = 65_536;
/** `bench`: the largest record accepted (the broker's frame bound is far above). */
export const BENCH_RECORD_BYTES_MAX = 1_048_576;
/** `bench`: the highest latency the histogram tracks, in µs (a minute). */
export const BENCH_LATENCY_US_MAX = 60_000_000;
/** How often the progress bar redraws. */
export const PROGRESS_REDRAW_MS = 200;
