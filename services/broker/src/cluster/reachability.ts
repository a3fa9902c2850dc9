/**
 * Whether the control plane answers, as a broker's log should tell it: one warning when calls
 * start failing (with the first reason), a reminder every `remindMs` while they keep failing
 * (with the latest reason), and one line once every kind of call that failed answers again (how
 * long, how many calls failed): not one warning with a stack per call. The state is kept per
 * kind of call (heartbeat, each feed, the node book, reports), so one endpoint that keeps
 * failing while the others answer stays one outage instead of flapping. A kind that failed and
 * has not failed again for `clearMs` counts as answered once another call answers: a feed's
 * long poll sent after the control plane came back answers only when its wait ends, and a
 * report may not be sent again soon. No I/O: the caller logs. Bounded: one entry per kind of
 * call, a fixed set.
 */

/** What to say after one call's outcome, if anything. */
export type ReachabilityNotice =
  | { kind: 'lost'; call: string }
  | { kind: 'still'; calls: string[]; awayMs: number; failedCalls: number }
  | { kind: 'back'; calls: string[]; awayMs: number; failedCalls: number };

/** The kind of a call named `what` by the client: a feed's snapshot and changes are one. */
export function callKind(what: string): string {
  return what.replace(/ (snapshot|changes)$/, '');
}

export class Reachability {
  /** The kinds of call failing now, with when each last failed. */
  private readonly failing = new Map<string, number>();
  /** Every kind that failed in the current outage. */
  private readonly failed_ = new Set<string>();
  private lostAtMs = 0;
  private saidAtMs = 0;
  private failedCalls = 0;
  /** The first answer since the last failure: where the time away ends, even when the outage
   *  is declared over only once a quiet kind clears `clearMs` later. */
  private answeredSinceMs: number | undefined;

  constructor(
    private readonly remindMs: number,
    private readonly clearMs: number,
  ) {}

  /** A call of kind `call` got no answer (network, timeout, 5xx) at `nowMs`. */
  failed(call: string, nowMs: number): ReachabilityNotice | null {
    const first = this.failing.size === 0;
    this.failing.set(call, nowMs);
    this.failed_.add(call);
    this.failedCalls++;
    this.answeredSinceMs = undefined;
    if (first) {
      this.lostAtMs = nowMs;
      this.saidAtMs = nowMs;
      return { kind: 'lost', call };
    }
    if (nowMs - this.saidAtMs < this.remindMs) return null;
    this.saidAtMs = nowMs;
    return {
      kind: 'still',
      calls: [...this.failing.keys()],
      awayMs: nowMs - this.lostAtMs,
      failedCalls: this.failedCalls,
    };
  }

  /** A call of kind `call` got an answer at `nowMs`. */
  answered(call: string, nowMs: number): ReachabilityNotice | null {
    if (this.failing.size === 0) return null;
    this.answeredSinceMs ??= nowMs;
    this.failing.delete(call);
    for (const [kind, lastFailedMs] of this.failing)
      if (nowMs - lastFailedMs >= this.clearMs) this.failing.delete(kind);
    if (this.failing.size > 0) return null;
    const notice: ReachabilityNotice = {
      kind: 'back',
      calls: [...this.failed_],
      awayMs: Math.max(0, (this.answeredSinceMs ?? nowMs) - this.lostAtMs),
      failedCalls: this.failedCalls,
    };
    this.failed_.clear();
    this.failedCalls = 0;
    this.answeredSinceMs = undefined;
    return notice;
  }
}
