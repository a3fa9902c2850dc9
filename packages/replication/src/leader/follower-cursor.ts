/**
 * The leader's view of one follower of one shard's log: where to ship from next, how far the
 * follower confirmed it holds the log (as its fsync mode acknowledges a write: synced under
 * `onCommit`, written under `periodic`), and whether shipping must stop. A pure state
 * machine: `plan` names the next range to send, `onAnswer` and `onTimeout` take what came
 * back; sending, timers and backoff are the caller's.
 *
 * Up to `depth` record batches may be in flight (the caller's choice: the shipper's is
 * REPLICATE_BATCHES_IN_FLIGHT_MAX), each starting where the one before ends, so a follower
 * writes the next batch while it syncs the last. Only one is sent until the follower has said
 * where its log ends, and a bootstrap travels alone. Oks count in order: one that comes
 * before the answers to every earlier batch in flight waits for them (what a follower
 * compared of a later batch says nothing of an earlier range it may hold from a deposed
 * leader). A refusal or timeout drops its batch and every later one; once nothing is in
 * flight the next plan starts again from `next` (what the follower holds, or where it said it
 * expects), so a resend overlaps and is byte-compared. The caller shortens a batch to what it
 * really carried (`carried`) before the next is planned behind it.
 *
 * The follower's answer moves the cursor: ok sets both `next` and `confirmed` to the offset
 * it names (one past its last record held, also the next offset it wants); a gap moves `next`
 * to the offset it expected; a conflict halts the cursor (`diverged`: its uncommitted suffix
 * differs and repairing it is the fence's job; a refused bootstrap halts it `needs_bootstrap`,
 * which `rebuildPlan` repairs); `FencedEpoch` stops it for good (this broker
 * is no longer the leader); transient refusals and timeouts resend from `next`. An answer to
 * anything but a batch in flight (a late answer to a timed-out batch) is ignored, so a slow
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
  | { kind: 'bootstrap'; correlationId: number; base: number }
  /** The follower refused that bootstrap holding only records below the base: have it discard
   *  them and start there (`rebuildPlan`, only on a `needs_bootstrap` halt). */
  | { kind: 'rebuild'; correlationId: number; base: number };

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
  /** One past the last record the follower confirmed holding; moves back only at a rebuild (the
   *  follower discarded its copy). */
  confirmed = 0;
  /** Set when shipping to this follower stopped until someone repairs it. */
  halted: HaltReason | undefined;
  /** Set when the follower answered that a newer leader exists: this one must stop. */
  fenced = false;
  /** Batches sent and not yet answered, oldest first, each with the moment it was planned when
   *  it reached the leader's tail then. */
  private inFlight: {
    s: Shipment;
    atTailMs: number | undefined;
    /** An ok that came before the answers to earlier batches, kept until they come. */
    ok?: { kind: 'ok'; durableOffset: number };
  }[] = [];
  private lastCorrelation = 0;
  /** Whether the follower has said where its log ends (an ok or a gap answer). */
  private heard = false;
  /** The latest moment (the caller's clock, as given to `plan`) the follower was known to hold
   *  the leader's whole log; undefined until it was. */
  caughtUpAtMs: number | undefined;

  /** `start` is where shipping begins: the follower's reported tail, or one record below the
   *  leader's own generation start so the first batch overlaps a known-good record.
   *  `caughtUpAtMs` carries what an earlier cursor of the same follower and leader knew. */
  constructor(start: number, caughtUpAtMs?: number) {
    this.next = start;
    this.caughtUpAtMs = caughtUpAtMs;
  }

  /** How many batches wait for their answers. */
  get inFlightCount(): number {
    return this.inFlight.length;
  }

  /**
   * The next shipment for a leader log holding [base, tail), at most `maxRecords` records, or
   * null when `depth` batches are in flight (a bootstrap, or any batch before the follower was
   * heard from, counts as all of them), the follower is caught up, or shipping stopped. `nowMs`
   * (the caller's clock) keeps `caughtUpAtMs`; without it that is left alone.
   */
  plan(
    log: { base: number; tail: number },
    maxRecords: number,
    nowMs?: number,
    depth = 1,
  ): Shipment | null {
    if (this.halted !== undefined || this.fenced) return null;
    if (nowMs !== undefined && this.confirmed >= log.tail) this.caughtUpAt(nowMs);
    const last = this.inFlight.at(-1)?.s;
    if (last !== undefined) {
      if (this.inFlight.length >= depth || !this.heard || last.kind !== 'records') return null;
      // Retention passed the batch in flight: once it settles, the next plan bootstraps.
      if (last.next < log.base) return null;
      return this.planRecords(last.next, log, maxRecords, nowMs);
    }
    // `start` is a guess until the follower answers: a guess at the tail would send nothing,
    // so the first batch overlaps the last record and the answer says where the follower is.
    if (!this.heard && this.next >= log.tail && log.tail > log.base) this.next = log.tail - 1;
    if (this.next < log.base) {
      const s: Shipment = {
        kind: 'bootstrap',
        correlationId: ++this.lastCorrelation,
        base: log.base,
      };
      this.inFlight.push({ s, atTailMs: undefined });
      return s;
    }
    return this.planRecords(this.next, log, maxRecords, nowMs);
  }

  private planRecords(
    first: number,
    log: { base: number; tail: number },
    maxRecords: number,
    nowMs: number | undefined,
  ): Shipment | null {
    if (first >= log.tail) return null;
    const next = Math.min(log.tail, first + Math.max(1, maxRecords));
    const s: Shipment = { kind: 'records', correlationId: ++this.lastCorrelation, first, next };
    this.inFlight.push({ s, atTailMs: next === log.tail ? nowMs : undefined });
    return s;
  }

  private caughtUpAt(ms: number): void {
    this.caughtUpAtMs = Math.max(this.caughtUpAtMs ?? ms, ms);
  }

  /**
   * The rebuild of a follower halted `needs_bootstrap` (it refused the leader's base holding
   * older records), at the leader's base now; null when it is not so halted or something is in
   * flight. Its ok lifts the halt and shipping goes on from the offset it names; a refusal leaves
   * the halt (`LogConflict`: the follower holds records at or above the base, a divergence) or
   * turns it into `refused` (a follower that does not serve rebuilds).
   */
  rebuildPlan(base: number): Extract<Shipment, { kind: 'rebuild' }> | null {
    if (this.halted !== 'needs_bootstrap' || this.fenced || this.inFlight.length > 0) return null;
    const s = { kind: 'rebuild' as const, correlationId: ++this.lastCorrelation, base };
    this.inFlight.push({ s, atTailMs: undefined });
    return s;
  }

  /** Whether a batch still waits for its answer (not settled, not given up on). */
  inFlightHas(correlationId: number): boolean {
    return this.inFlight.some((f) => f.s.correlationId === correlationId);
  }

  /** The batch just planned carried only [first, next) (a byte budget cut it short): the next
   *  batch is planned from there. */
  carried(correlationId: number, next: number): void {
    const last = this.inFlight.at(-1);
    if (last?.s.correlationId !== correlationId || last.s.kind !== 'records') return;
    if (next >= last.s.next || next <= last.s.first) return;
    last.s = { ...last.s, next };
    last.atTailMs = undefined;
  }

  /** Takes the answer to a batch; false when no batch in flight has that id (a late answer to
   *  a batch given up on), which changes nothing. */
  onAnswer(correlationId: number, answer: FollowerAnswer): boolean {
    const at = this.inFlight.findIndex((f) => f.s.correlationId === correlationId);
    if (at < 0) return false;
    if (answer.kind === 'ok' || answer.code === INTERNAL_ERROR.LogGap) this.heard = true;
    if (answer.kind === 'ok') {
      this.inFlight[at]!.ok = answer;
      while (this.inFlight[0]?.ok !== undefined) this.takeOk();
      return true;
    }
    // Refused: this batch and the later ones go (they would find a gap); earlier ones stand.
    const sent = this.inFlight[at]!.s;
    this.inFlight = this.inFlight.slice(0, at);
    const code = answer.code;
    // Behind an earlier batch still in flight, its answer says where to go on.
    if (code === INTERNAL_ERROR.LogGap) {
      if (at === 0) this.next = answer.expectedOffset;
    } else if (code === INTERNAL_ERROR.FencedEpoch) this.fenced = true;
    else if (code === INTERNAL_ERROR.LogConflict)
      this.halted = sent.kind === 'records' ? 'diverged' : 'needs_bootstrap';
    else if (!RESEND.has(code)) this.halted = 'refused';
    return true;
  }

  /** A batch in flight got no answer in time: it and every later one (they would find a gap)
   *  are dropped, and the next plan sends from `next` again, or from the end of an earlier
   *  batch still in flight. False when it was not in flight. */
  onTimeout(correlationId: number): boolean {
    const at = this.inFlight.findIndex((f) => f.s.correlationId === correlationId);
    if (at < 0) return false;
    this.inFlight = this.inFlight.slice(0, at);
    return true;
  }

  /** Counts the ok of the oldest batch in flight. */
  private takeOk(): void {
    const { s: sent, atTailMs, ok } = this.inFlight.shift()!;
    // Only what this batch carried was compared: a follower may hold more (a deposed leader's
    // suffix), and that must be shipped over, not counted.
    const held =
      sent.kind === 'records' ? Math.min(ok!.durableOffset, sent.next) : ok!.durableOffset;
    this.confirmed = Math.max(this.confirmed, held);
    this.next = held;
    if (sent.kind === 'rebuild') {
      // Rebuilt: its log now starts empty at the base, whatever it confirmed before (a copy
      // restored older than what it confirmed, then discarded). It holds what it says, and is
      // in sync again only once it holds the leader's log: shipping goes on from the base.
      this.halted = undefined;
      this.confirmed = held;
      this.caughtUpAtMs = undefined;
    }
    // Held less than it carried: later batches would find a gap; send from what it holds.
    if (held < (sent.kind === 'records' ? sent.next : sent.base)) this.inFlight = [];
    // It now holds everything the leader had written when this batch was planned.
    if (sent.kind === 'records' && held >= sent.next && atTailMs !== undefined)
      this.caughtUpAt(atTailMs);
  }
}
