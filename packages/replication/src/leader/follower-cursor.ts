/**
 * The leader's view of one follower of one shard's log: where to ship from next, how far the
 * follower confirmed it holds the log (as its fsync mode acknowledges a write: synced under
 * `onCommit`, written under `periodic`), and whether shipping must stop. A pure state
 * machine: `plan` names the next range to send (at most one batch in flight), `onAnswer` and
 * `onTimeout` take what came back; sending, timers and backoff are the caller's.
 *
 * The follower's answer moves the cursor: ok sets both `next` and `confirmed` to the offset
 * it names (one past its last record held, also the next offset it wants); a gap moves `next`
 * to the offset it expected; a conflict halts the cursor (`diverged`: its uncommitted suffix
 * differs and repairing it is the fence's job); `FencedEpoch` stops it for good (this broker
 * is no longer the leader); transient refusals and timeouts resend from `next`. An answer to
 * anything but the batch in flight (a late answer to a timed-out batch) is ignored, so a slow
 * follower is never counted past what it confirmed.
 *
 * Given the caller's clock, the cursor also keeps when the follower last held the leader's whole
 * log (`caughtUpAtMs`, Kafka's last caught-up time): at a plan that finds it level, or, for a
 * batch that reached the leader's tail as it stood when planned, the moment of that plan once the
 * answer confirms it. A follower under steady writes is never level when someone looks, yet
 * each answer shows it held everything written up to its batch's plan; one that stops answering
 * keeps an ever older moment. Promotion counts a follower in sync by it (docs/replication.md,
 * "In-sync followers").
 */
import { INTERNAL_ERROR } from '@felix/wire';

export type HaltReason = 'diverged' | 'needs_bootstrap' | 'refused';

export type Shipment =
  /** Send records [first, next) of the leader's log. */
  | { kind: 'records'; correlationId: number; first: number; next: number }
  /** The follower wants records the leader no longer holds: offer the log's base instead. */
  | { kind: 'bootstrap'; correlationId: number; base: number };

export type FollowerAnswer =
  | { kind: 'ok'; durableOffset: number }
  | { kind: 'error'; code: number; expectedOffset: number };

/** Codes after which the same range is sent again (after the caller's backoff). */
const RESEND = new Set<number>([
  INTERNAL_ERROR.StaleRoute,
  INTERNAL_ERROR.Unavailable,
  INTERNAL_ERROR.Overload,
  INTERNAL_ERROR.Malformed,
  INTERNAL_ERROR.StorageFailed,
]);

export class FollowerCursor {
  /** Next offset to ship. */
  next: number;
  /** One past the last record the follower confirmed holding; never moves back. */
  confirmed = 0;
  /** Set when shipping to this follower stopped until someone repairs it. */
  halted: HaltReason | undefined;
  /** Set when the follower answered that a newer leader exists: this one must stop. */
  fenced = false;
  private inFlight: Shipment | undefined;
  private lastCorrelation = 0;
  /** Whether the follower has said where its log ends (an ok or a gap answer). */
  private heard = false;
  /** The latest moment (the caller's clock, as given to `plan`) the follower was known to hold
   *  the leader's whole log; undefined until it was. */
  caughtUpAtMs: number | undefined;
  /** When the batch in flight was planned, if it reached the leader's tail then. */
  private sentAtTailMs: number | undefined;

  /** `start` is where shipping begins: the follower's reported tail, or one record below the
   *  leader's own generation start so the first batch overlaps a known-good record.
   *  `caughtUpAtMs` carries what an earlier cursor of the same follower and leader knew. */
  constructor(start: number, caughtUpAtMs?: number) {
    this.next = start;
    this.caughtUpAtMs = caughtUpAtMs;
  }

  /** True while a batch waits for its answer. */
  get busy(): boolean {
    return this.inFlight !== undefined;
  }

  /**
   * The next shipment for a leader log holding [base, tail), at most `maxRecords` records, or
   * null when one is in flight, the follower is caught up, or shipping stopped. `nowMs` (the
   * caller's clock) keeps `caughtUpAtMs`; without it that is left alone.
   */
  plan(log: { base: number; tail: number }, maxRecords: number, nowMs?: number): Shipment | null {
    if (this.halted !== undefined || this.fenced) return null;
    if (nowMs !== undefined && this.confirmed >= log.tail) this.caughtUpAt(nowMs);
    if (this.inFlight !== undefined) return null;
    // `start` is a guess until the follower answers: a guess at the tail would send nothing,
    // so the first batch overlaps the last record and the answer says where the follower is.
    if (!this.heard && this.next >= log.tail && log.tail > log.base) this.next = log.tail - 1;
    if (this.next < log.base) {
      this.inFlight = { kind: 'bootstrap', correlationId: ++this.lastCorrelation, base: log.base };
    } else if (this.next < log.tail) {
      const next = Math.min(log.tail, this.next + Math.max(1, maxRecords));
      const correlationId = ++this.lastCorrelation;
      this.inFlight = { kind: 'records', correlationId, first: this.next, next };
      this.sentAtTailMs = next === log.tail ? nowMs : undefined;
    }
    return this.inFlight ?? null;
  }

  private caughtUpAt(ms: number): void {
    this.caughtUpAtMs = Math.max(this.caughtUpAtMs ?? ms, ms);
  }

  onAnswer(correlationId: number, answer: FollowerAnswer): void {
    const sent = this.inFlight;
    if (sent === undefined || sent.correlationId !== correlationId) return;
    this.inFlight = undefined;
    if (answer.kind === 'ok' || answer.code === INTERNAL_ERROR.LogGap) this.heard = true;
    if (answer.kind === 'ok') {
      // Only what this batch carried was compared: a follower may hold more (a deposed leader's
      // suffix), and that must be shipped over, not counted.
      const held =
        sent.kind === 'records' ? Math.min(answer.durableOffset, sent.next) : answer.durableOffset;
      this.confirmed = Math.max(this.confirmed, held);
      this.next = held;
      // It now holds everything the leader had written when this batch was planned.
      if (sent.kind === 'records' && held >= sent.next && this.sentAtTailMs !== undefined)
        this.caughtUpAt(this.sentAtTailMs);
      return;
    }
    const code = answer.code;
    if (code === INTERNAL_ERROR.LogGap) this.next = answer.expectedOffset;
    else if (code === INTERNAL_ERROR.FencedEpoch) this.fenced = true;
    else if (code === INTERNAL_ERROR.LogConflict)
      this.halted = sent.kind === 'bootstrap' ? 'needs_bootstrap' : 'diverged';
    else if (!RESEND.has(code)) this.halted = 'refused';
  }

  /** The batch in flight got no answer in time: the next plan sends from `next` again. */
  onTimeout(correlationId: number): void {
    if (this.inFlight?.correlationId === correlationId) this.inFlight = undefined;
  }
}
