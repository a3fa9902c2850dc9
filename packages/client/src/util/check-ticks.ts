/**
 * The coarse clock of a connection: how many times its check (every CONNECTION_CHECK_MS) has
 * run. A request is stamped with the tick its answer is due by, so bounding its wait costs a
 * field read and an add, not a clock read, a timer or a promise of its own; the check fails what
 * is overdue. Ticks only ever come late (a busy or stalled process), which lengthens a bound and
 * never shortens it. No I/O.
 */
import { CONNECTION_CHECK_MS } from '../limits.js';

export class CheckTicks {
  /** Checks run so far. */
  count = 0;
}

/**
 * Ticks after which a request sent now has waited at least `ms`: one more than `ms` spans, as a
 * request sent just before a check has waited almost nothing at that check. A request so bounded
 * fails between `ms` and `ms` plus two checks after it was sent.
 */
export function ticksSpanning(ms: number): number {
  return Math.ceil(ms / CONNECTION_CHECK_MS) + 1;
}

/** A request stream whose oldest unanswered request the connection's check bounds. */
export interface DueWatched {
  /** Fails the stream's requests when the oldest one's answer is overdue at check `tick`. */
  checkDue(tick: number): void;
}
