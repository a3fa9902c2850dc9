/**
 * Whether the control plane answers, as a broker's log should tell it: one warning when calls
 * start failing (with the first reason), one line when an answer comes again (how long it was
 * away and how many calls failed), and nothing per call in between. Every control-plane call
 * of the broker (heartbeats, feeds, reports) reports its outcome here, so an outage of a few
 * seconds is two lines, not one warning with a stack per call. No I/O: the caller logs.
 */

/** What to say after one call's outcome, if anything. */
export type ReachabilityNotice =
  | { kind: 'lost' }
  | { kind: 'back'; awayMs: number; failedCalls: number };

export class Reachability {
  /** When the first failed call of the current outage ended, or null while answered. */
  private lostAtMs: number | null = null;
  private failedCalls = 0;

  /** One call got no answer (network, timeout, 5xx) at `nowMs`. */
  failed(nowMs: number): ReachabilityNotice | null {
    this.failedCalls++;
    if (this.lostAtMs !== null) return null;
    this.lostAtMs = nowMs;
    return { kind: 'lost' };
  }

  /** One call got an answer at `nowMs`. */
  answered(nowMs: number): ReachabilityNotice | null {
    if (this.lostAtMs === null) return null;
    const notice: ReachabilityNotice = {
      kind: 'back',
      awayMs: Math.max(0, nowMs - this.lostAtMs),
      failedCalls: this.failedCalls,
    };
    this.lostAtMs = null;
    this.failedCalls = 0;
    return notice;
  }

  /** Whether the last calls failed (their callers then log at debug only). */
  get lost(): boolean {
    return this.lostAtMs !== null;
  }
}
