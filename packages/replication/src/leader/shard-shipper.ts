/**
 * Ships one log of a shard (its records, or one of the logs riding with it: log-kind.ts) from its
 * leader to each follower: one loop per follower around a FollowerCursor, reading bounded
 * batches from the leader's log, sending them over the follower's PeerLink (up to
 * REPLICATE_BATCHES_IN_FLIGHT_MAX at once, so a follower writes one while it syncs another) and
 * feeding each answer back. A failed exchange backs the loop off once its other batches in
 * flight settled. A slow or unreachable follower delays only its own loop. A loop stops when
 * its follower halts (reported) or when any follower answers that a newer leader exists (the
 * whole shipper stops: this broker was deposed).
 *
 * Records ship as soon as the leader's log has written them, not once they are durable there:
 * the follower's append and fsync run while the leader's own fsync does (as Raft's leader
 * writes its log in parallel with replicating it). A follower may then hold a record the leader
 * loses in a crash before its fsync; such a record was never acked (the caller's commit mark
 * counts the leader at its durable offset only), and a new generation's leader repairs the
 * suffix as it repairs any deposed leader's. The newest records are read from the log's memory
 * of them (`keepRecent`), not back from the file just written.
 *
 * With `commitOffset` (a quorum shard) every batch carries the leader's commit mark (kind 26),
 * and a follower with nothing to ship is sent the mark alone once it moved past what that
 * follower was last told and the follower had nothing to ship for REPLICATE_MARK_ALONE_AFTER_MS:
 * a mark sent alone costs the follower a synced save, and sent at once it would sit in front of
 * the next batch (which carries the mark anyway) on the loop and at the follower. `wake()` (the
 * caller's, when the mark moves) makes idle loops look.
 *
 * A riding log (not a stream's records, whose followers run their own retention) tells each
 * follower the leader's base once it rose and that follower holds every entry the compaction
 * restated at the tail (TrimCursor): kind 40, looked at before each plan, so a busy log's
 * trims are not starved by its batches.
 *
 * Given `rebuild`, a follower halted `needs_bootstrap` (it refused the leader's base holding
 * only older records: back from a long absence, past retention or a compaction) is not left
 * halted: after a wait, and one rebuild at a time per broker, it is asked to discard that copy
 * and start at the base (kind 24), then caught up from there like a new follower.
 */
import { setMaxListeners } from 'node:events';
import { assert } from '@felix/common';
import { FLAG_GENERATION_START, type SegmentLog } from '@felix/storage';
import { INTERNAL_ERROR, type ShardRef } from '@felix/wire';
import {
  bootstrapFrame,
  committedFrame,
  markOf,
  markedFrame,
  rebuildFrame,
  recordsFrame,
  trimFrame,
} from '../frames.js';
import type { ReplicaLogKind } from '../log-kind.js';
import {
  REPLICA_SET_SIZE_MAX,
  REPLICATE_ANSWER_TIMEOUT_MS_DEFAULT,
  REPLICATE_BATCH_BYTES_MAX,
  REPLICATE_BATCH_RECORDS_MAX,
  REPLICATE_BATCHES_IN_FLIGHT_MAX,
  REPLICATE_IDLE_CHECK_MS,
  REPLICATE_MARK_ALONE_AFTER_MS,
  REPLICATE_REBUILD_AFTER_MS,
  REPLICATE_REBUILD_RETRY_MS_MAX,
  REPLICATE_REBUILD_SLOT_RETRY_MS,
  REPLICATE_RECENT_BYTES_MAX,
  REPLICATE_RETRY_MS_MAX,
  REPLICATE_RETRY_MS_MIN,
} from '../limits.js';
import {
  type FollowerAnswer,
  FollowerCursor,
  type HaltReason,
  type Shipment,
} from './follower-cursor.js';
import { answerOf } from './answers.js';
import type { RebuildSlots } from './rebuild-slots.js';
import { TrimCursor } from './trim-cursor.js';

/** A request/answer channel to one follower broker. */
export interface PeerLink {
  /** Sends one FLXI request frame; resolves with the answer frame, rejects when the link fails
   *  or no answer came within `timeoutMs`. `linkWaitMs` bounds the wait for a link not open
   *  yet; `withdrawn` aborted while that wait lasts fails the request unsent. */
  request(
    frame: Uint8Array,
    timeoutMs: number,
    linkWaitMs?: number,
    withdrawn?: AbortSignal,
  ): Promise<Uint8Array>;
  /**
   * Whether the offsets this follower confirms for a stream log are synced on its disk (true),
   * possibly written only (false: it runs a weaker fsync mode), or unknown (undefined: not
   * stated, or no connection yet). A leader that syncs before acking counts a follower that
   * says false toward no quorum. Absent: unknown.
   */
  answersSynced?(): boolean | undefined;
}

export interface ShipperFollower {
  nodeId: string;
  link: PeerLink;
  /** Where shipping to it starts (its reported tail, or just below this generation's start). */
  start: number;
  /** When it last held the whole log, as an earlier shipper of this log (performance.now()). */
  caughtUpAtMs?: number;
}

export interface ShipperOptions {
  log: SegmentLog;
  /** The shard, with the generation this broker leads it at. */
  shard: ShardRef;
  /** Which of the shard's logs `log` is (its frames' kinds); default its stream records. */
  logKind?: ReplicaLogKind;
  followers: ShipperFollower[];
  answerTimeoutMs?: number;
  /** A follower confirmed it holds [.., offset) durably. */
  onConfirmed?: (nodeId: string, offset: number) => void;
  /** A follower's loop stopped: it halted, it said this broker is no longer the leader, or
   *  the leader's log failed under it. */
  onStopped?: (nodeId: string, reason: HaltReason | 'fenced' | 'failed') => void;
  /** A follower's exchange failed (no answer, or a refusal to be sent again: a shard it has not
   *  heard of yet, a broker shutting down): its loop now waits `waitMs` before sending again;
   *  `backoffs` counts these waits since it last answered, so a follower that stays away is
   *  seen, not only retried. */
  onBackoff?: (nodeId: string, backoffs: number, waitMs: number) => void;
  /** A follower answered again after `backoffs` backoffs. As with onConfirmed, a callback that
   *  throws stops that follower's loop (reported `failed`). */
  onResumed?: (nodeId: string, backoffs: number) => void;
  /** The leader's commit mark, carried to followers (a quorum shard); absent: not carried. */
  commitOffset?: () => number;
  /**
   * Rebuilds followers halted `needs_bootstrap` (kind 24): `afterMs` (default
   * REPLICATE_REBUILD_AFTER_MS) after the halt, doubling after each failed attempt up to
   * REPLICATE_REBUILD_RETRY_MS_MAX, when one of the broker's `slots` is free. Absent: such a
   * follower stays halted, as any other.
   */
  rebuild?: { slots: RebuildSlots; afterMs?: number };
  /** A follower halted `needs_bootstrap` was rebuilt: its log now starts at `offset` (the
   *  leader's base), shipping to it goes on, and its halt (reported by onStopped) is over. */
  onRebuilt?: (nodeId: string, offset: number) => void;
  /** How long a follower has nothing to ship before the mark goes alone; default
   *  REPLICATE_MARK_ALONE_AFTER_MS. */
  markAloneAfterMs?: number;
}

interface Loop {
  follower: ShipperFollower;
  cursor: FollowerCursor;
  done: Promise<void>;
  /** The highest commit offset this follower acknowledged storing (the mark, or less when it
   *  was shown to hold less). */
  told: number;
  /** Counts the messages sent outside the cursor's batches (marks alone, trims): their
   *  correlation ids start at 2^52, apart from the cursor's. */
  asides: number;
  /** What this follower was told of the leader's base; undefined for a stream's records. */
  trims: TrimCursor | undefined;
  /** The exchanges in flight (at most REPLICATE_BATCHES_IN_FLIGHT_MAX). */
  sending: Set<Promise<void>>;
  /** Set by an exchange that must be retried after a backoff; taken by the loop. */
  failed: boolean;
  /** An exchange's failure to rethrow from the loop (the leader's log failed under it). */
  error: unknown;
  /** Ends the loop's current wait (an exchange settled). */
  nudge: (() => void) | undefined;
  /** The next backoff: doubled by each failure up to REPLICATE_RETRY_MS_MAX, reset by an answer. */
  retryMs: number;
  /** Backoffs taken since this follower last answered (reported through onBackoff). */
  backoffs: number;
  /** The halt last reported through onStopped (cleared by a rebuild). */
  haltTold: HaltReason | undefined;
  /** When the next rebuild of a halted follower is due (performance.now()), and the wait after
   *  a failed one. */
  rebuildAtMs: number | undefined;
  rebuildMs: number;
}

/** How an exchange ended: answered (ok or a gap), to be retried after a backoff, or answered
 *  for a batch the cursor had already given up on (nothing to do). */
type Exchanged = 'sent' | 'retry' | 'stale';

/** A shipment's frame: what it makes its follower store of the commit mark (the lower of the
 *  mark and the batch's end; 0: none), and where a records batch really ends (a byte budget
 *  may end it before its plan did). */
interface Framed {
  frame: Uint8Array;
  carried: number;
  next?: number;
}

export class ShardShipper {
  private readonly loops = new Map<string, Loop>();
  private stopping = false;
  /** The idle waits in progress: a log change or a stop ends them all. */
  private readonly waiting = new Set<() => void>();
  /** The rebuild waits in progress: only a stop ends them early. */
  private readonly pauses = new Set<() => void>();
  private readonly unlisten: () => void;
  /** Aborted by `stop`: a request still waiting for its link is withdrawn, unsent, so a stop
   *  never waits out a dial to a peer that does not answer (a new generation's shipper started
   *  only once the old one stopped, 5 s after a stopped peer's dial began). */
  private readonly stopped = new AbortController();

  constructor(private readonly opts: ShipperOptions) {
    // One listener per request waiting for a link: each follower's batches in flight and one
    // aside (a mark or a trim); a large set all dialing passes Node's default warning count.
    setMaxListeners(
      REPLICA_SET_SIZE_MAX * (REPLICATE_BATCHES_IN_FLIGHT_MAX + 1),
      this.stopped.signal,
    );
    // Records ship once written, while the leader's own fsync runs: a quorum mark counts the
    // leader only at its durable offset, so nothing is acked on the followers' word alone.
    this.unlisten = opts.log.onWritten(() => this.poke());
    opts.log.keepRecent(REPLICATE_RECENT_BYTES_MAX);
    for (const f of opts.followers) {
      const cursor = new FollowerCursor(f.start, f.caughtUpAtMs);
      const loop: Loop = {
        follower: f,
        cursor,
        done: Promise.resolve(),
        told: 0,
        asides: 0,
        sending: new Set(),
        failed: false,
        error: undefined,
        nudge: undefined,
        retryMs: REPLICATE_RETRY_MS_MIN,
        backoffs: 0,
        trims: (opts.logKind ?? 'stream') === 'stream' ? undefined : new TrimCursor(),
        haltTold: undefined,
        rebuildAtMs: undefined,
        rebuildMs: opts.rebuild?.afterMs ?? REPLICATE_REBUILD_AFTER_MS,
      };
      this.loops.set(f.nodeId, loop);
      loop.done = this.run(loop).catch(() => {
        // The follower's log or a callback failed under the loop: that follower stops, reported.
        this.opts.onStopped?.(f.nodeId, 'failed');
      });
    }
  }

  /** What each follower confirmed durable so far. */
  confirmed(nodeId: string): number {
    return this.loops.get(nodeId)?.cursor.confirmed ?? 0;
  }

  /** When a follower last held the whole log (performance.now()), or undefined: in sync for
   *  promotion while that is recent (docs/replication.md, "In-sync followers"). */
  caughtUpAtMs(nodeId: string): number | undefined {
    const cursor = this.loops.get(nodeId)?.cursor;
    if (cursor === undefined || cursor.halted !== undefined) return undefined;
    return cursor.caughtUpAtMs;
  }

  /** Makes idle loops look again now (the commit mark moved). */
  wake(): void {
    this.poke();
  }

  /** True once a follower answered that a newer leader exists. */
  get fenced(): boolean {
    for (const l of this.loops.values()) if (l.cursor.fenced) return true;
    return false;
  }

  /** Stops every loop; resolves once none will send again. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    this.unlisten();
    this.opts.log.keepRecent(0);
    this.poke();
    for (const p of [...this.pauses]) p();
    await Promise.all([...this.loops.values()].map((l) => l.done));
  }

  private poke(): void {
    const woken = [...this.waiting];
    this.waiting.clear();
    for (const w of woken) w();
  }

  /** Waits for the log to move, a stop, the idle check, or (given `loop`) one of its
   *  exchanges to settle. */
  private idle(ms: number, loop?: Loop): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiting.delete(done);
        if (loop?.nudge === done) loop.nudge = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiting.add(done);
      if (loop !== undefined) loop.nudge = done;
    });
  }

  private async run(loop: Loop): Promise<void> {
    const { cursor, follower } = loop;
    const timeoutMs = this.opts.answerTimeoutMs ?? REPLICATE_ANSWER_TIMEOUT_MS_DEFAULT;
    const markAloneAfterMs = this.opts.markAloneAfterMs ?? REPLICATE_MARK_ALONE_AFTER_MS;
    /** Since when this follower has had nothing to ship (undefined while it has). */
    let idleSince: number | undefined;
    while (!this.stopping && !this.fenced) {
      if (loop.error !== undefined) {
        // Nothing of this loop may still call back once its follower is reported stopped.
        await Promise.all(loop.sending);
        throw loop.error;
      }
      if (loop.failed) {
        // Back off once: the batches sent with the failed one settle first (each answers or
        // times out), so the backoff is not taken again for each of them.
        await Promise.all(loop.sending);
        loop.failed = false;
        if (this.stopping) continue;
        loop.backoffs++;
        this.opts.onBackoff?.(follower.nodeId, loop.backoffs, loop.retryMs);
        await this.idle(loop.retryMs);
        loop.retryMs = Math.min(REPLICATE_RETRY_MS_MAX, loop.retryMs * 2);
        continue;
      }
      if (loop.trims !== undefined) await this.tellTrim(loop, loop.trims, timeoutMs);
      const log = this.opts.log;
      const shipment = cursor.plan(
        { base: log.baseOffset, tail: log.poisoned ? log.durableOffset : log.writtenOffset },
        REPLICATE_BATCH_RECORDS_MAX,
        performance.now(),
        REPLICATE_BATCHES_IN_FLIGHT_MAX,
      );
      if (shipment !== null) {
        idleSince = undefined;
        await this.ship(loop, shipment, timeoutMs);
        continue;
      }
      if (loop.sending.size > 0) {
        // Batches in flight: wait for an answer, or for records to pipeline behind them.
        await this.idle(REPLICATE_IDLE_CHECK_MS, loop);
        continue;
      }
      if (cursor.halted !== undefined) {
        if (loop.haltTold !== cursor.halted) {
          loop.haltTold = cursor.halted;
          this.opts.onStopped?.(follower.nodeId, cursor.halted);
        }
        const rebuild = this.opts.rebuild;
        if (cursor.halted !== 'needs_bootstrap' || rebuild === undefined) return;
        await this.rebuild(loop, rebuild.slots, rebuild.afterMs ?? REPLICATE_REBUILD_AFTER_MS);
        continue;
      }
      idleSince ??= performance.now();
      await this.rest(loop, idleSince + markAloneAfterMs - performance.now(), timeoutMs);
    }
    await Promise.all(loop.sending);
    if (cursor.fenced) this.opts.onStopped?.(follower.nodeId, 'fenced');
  }

  /**
   * One step of a halted follower's rebuild: waits until it is due (only a stop ends the wait
   * early), takes a slot (or waits REPLICATE_REBUILD_SLOT_RETRY_MS for one), and asks the
   * follower to start at the leader's base. An ok lifts the halt (onRebuilt, then shipping from
   * the base); anything else doubles the wait before the next attempt.
   */
  private async rebuild(loop: Loop, slots: RebuildSlots, afterMs: number): Promise<void> {
    loop.rebuildAtMs ??= performance.now() + loop.rebuildMs;
    const wait = loop.rebuildAtMs - performance.now();
    if (wait > 0) return this.pause(wait);
    const release = slots.take();
    if (release === null) return this.pause(REPLICATE_REBUILD_SLOT_RETRY_MS);
    const cursor = loop.cursor;
    try {
      const s = cursor.rebuildPlan(this.opts.log.baseOffset);
      if (s === null || this.stopping) return;
      const kind = this.opts.logKind ?? 'stream';
      const frame = rebuildFrame(s.correlationId, this.opts.shard, kind, s.base);
      const timeoutMs = this.opts.answerTimeoutMs ?? REPLICATE_ANSWER_TIMEOUT_MS_DEFAULT;
      await this.exchange(loop, s, { frame, carried: 0 }, timeoutMs);
    } finally {
      release();
    }
    loop.rebuildAtMs = undefined;
    if (cursor.halted !== undefined) {
      loop.rebuildMs = Math.min(REPLICATE_REBUILD_RETRY_MS_MAX, loop.rebuildMs * 2);
      return;
    }
    loop.rebuildMs = afterMs;
    loop.haltTold = undefined;
    this.opts.onRebuilt?.(loop.follower.nodeId, cursor.next);
    this.opts.onConfirmed?.(loop.follower.nodeId, cursor.confirmed);
  }

  /** Waits `ms`, or less if the shipper stops. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.pauses.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.pauses.add(done);
      if (this.stopping) done();
    });
  }

  /**
   * Reads a planned batch and starts its exchange. The frame is read before the next plan:
   * that one starts where this one really ends (`carried`). Behind a batch in flight the mark
   * it carries stops at what the follower confirmed: a follower stores the lower of the mark
   * and the batch's end, and the range below this batch is not known to match until the
   * earlier batch's ok.
   */
  private async ship(loop: Loop, s: Shipment, timeoutMs: number): Promise<void> {
    const cursor = loop.cursor;
    const markCap = cursor.inFlightCount > 1 ? cursor.confirmed : Number.POSITIVE_INFINITY;
    const framed = await this.frameFor(s, markCap).catch((err: unknown) => {
      // The log failed under the read: the loop rethrows it (its follower is reported stopped).
      loop.error ??= err;
      return null;
    });
    // Settled meanwhile (an earlier batch failed or held less), stopping, retention trimmed
    // the range (the next plan bootstraps) or the read failed: not sent.
    if (framed === null || !cursor.inFlightHas(s.correlationId) || this.stopping) {
      cursor.onTimeout(s.correlationId);
      return;
    }
    if (framed.next !== undefined) cursor.carried(s.correlationId, framed.next);
    this.send(loop, s, framed, timeoutMs);
  }

  /** Starts one exchange without waiting for it: its end is taken by the loop (`failed`,
   *  `error`) and wakes it. */
  private send(loop: Loop, s: Shipment, framed: Framed, timeoutMs: number): void {
    const p = this.exchange(loop, s, framed, timeoutMs)
      .then((how) => {
        if (how === 'sent') {
          loop.retryMs = REPLICATE_RETRY_MS_MIN;
          if (loop.backoffs > 0) {
            const backoffs = loop.backoffs;
            loop.backoffs = 0;
            this.opts.onResumed?.(loop.follower.nodeId, backoffs);
          }
          this.opts.onConfirmed?.(loop.follower.nodeId, loop.cursor.confirmed);
        } else if (how === 'retry') loop.failed = true;
      })
      .catch((err: unknown) => {
        // A callback failed: the loop rethrows it (its follower is reported stopped).
        loop.error ??= err;
      })
      .finally(() => {
        loop.sending.delete(p);
        loop.nudge?.();
      });
    loop.sending.add(p);
  }

  /** Nothing to ship: tells the mark alone once it is `due` (ms from now), else waits for the
   *  log, a wake, or the moment the mark falls due. */
  private async rest(loop: Loop, due: number, timeoutMs: number): Promise<void> {
    if (due <= 0 && (await this.tellMark(loop, timeoutMs))) return;
    const untold = due > 0 && this.markUntold(loop);
    await this.idle(untold ? Math.min(due, REPLICATE_IDLE_CHECK_MS) : REPLICATE_IDLE_CHECK_MS);
  }

  /** One request to the loop's follower (withdrawn unsent if the shipper stops first). */
  private ask(loop: Loop, frame: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    return loop.follower.link.request(frame, timeoutMs, undefined, this.stopped.signal);
  }

  /** One request and its answer. */
  private async exchange(
    loop: Loop,
    s: Shipment,
    framed: Framed,
    timeoutMs: number,
  ): Promise<Exchanged> {
    let answer: Uint8Array;
    try {
      answer = await this.ask(loop, framed.frame, timeoutMs);
    } catch {
      // No answer (link down or timed out): the same range goes again after a backoff, unless
      // the batch was settled meanwhile (a later batch's ok, an earlier one's refusal).
      return loop.cursor.onTimeout(s.correlationId) ? 'retry' : 'stale';
    }
    const parsed = answerOf(answer);
    if (parsed === null || parsed.correlationId !== s.correlationId) {
      // Unreadable, or an answer to another batch than the one sent: treat it as unanswered.
      return loop.cursor.onTimeout(s.correlationId) ? 'retry' : 'stale';
    }
    // A batch given up on while this one travelled (an earlier one failed): nothing to take.
    if (!loop.cursor.onAnswer(parsed.correlationId, parsed.answer)) return 'stale';
    // A gap is no failure (send from where the follower is); other refusals back off.
    const a = parsed.answer;
    if (a.kind === 'ok' && s.kind === 'records') loop.told = Math.max(loop.told, framed.carried);
    return a.kind === 'ok' || a.code === INTERNAL_ERROR.LogGap ? 'sent' : 'retry';
  }

  /**
   * Sends the commit mark alone to a caught-up follower that has not heard it; true when one
   * was sent and answered ok. It names the offset the follower is known to hold up to, so the
   * follower stores no mark past records it has not been shown to hold.
   */
  private async tellMark(loop: Loop, timeoutMs: number): Promise<boolean> {
    const mark = this.opts.commitOffset?.();
    const held = Math.min(loop.cursor.next, loop.cursor.confirmed);
    if (mark === undefined || !this.markUntold(loop) || this.stopping) return false;
    const correlationId = 2 ** 52 + ++loop.asides;
    const frame = committedFrame(correlationId, this.opts.shard, held, [], mark);
    try {
      const parsed = answerOf(await this.ask(loop, frame, timeoutMs));
      if (parsed?.correlationId !== correlationId || parsed.answer.kind !== 'ok') return false;
    } catch {
      // No answer: the mark is sent again at the next look (with a batch, or alone).
      return false;
    }
    loop.told = Math.max(loop.told, Math.min(mark, held));
    return true;
  }

  /**
   * Tells the follower the leader's base of a riding log once it is due (the follower holds the
   * log's end as it was when the base was seen to rise): the follower deletes whole segments
   * below it. The answer goes to the TrimCursor, never to the batches' cursor.
   */
  private async tellTrim(loop: Loop, trims: TrimCursor, timeoutMs: number): Promise<void> {
    const log = this.opts.log;
    trims.observe(log.baseOffset, log.writtenOffset);
    const base = trims.due(loop.cursor.confirmed, performance.now());
    if (base === undefined || this.stopping) return;
    const correlationId = 2 ** 52 + ++loop.asides;
    const kind = this.opts.logKind ?? 'stream';
    let answer: FollowerAnswer | null = null;
    try {
      const frame = trimFrame(correlationId, this.opts.shard, kind, base);
      const parsed = answerOf(await this.ask(loop, frame, timeoutMs));
      if (parsed?.correlationId === correlationId) answer = parsed.answer;
    } catch {
      // No answer: the trim is told again after the cursor's backoff.
    }
    trims.onAnswer(base, answer, performance.now());
  }

  /** Whether the follower would store more of the mark than it was told: the lower of the
   *  mark and what it is known to hold. */
  private markUntold(loop: Loop): boolean {
    const mark = this.opts.commitOffset?.();
    const held = Math.min(loop.cursor.next, loop.cursor.confirmed);
    return mark !== undefined && Math.min(mark, held) > loop.told;
  }

  /** The frame for a shipment, carrying the commit mark up to `markCap` at most; null when
   *  retention trimmed its range. */
  private async frameFor(s: Shipment, markCap: number): Promise<Framed | null> {
    const shard = this.opts.shard;
    const kind = this.opts.logKind ?? 'stream';
    if (s.kind === 'bootstrap')
      return { frame: bootstrapFrame(s.correlationId, shard, s.base, kind), carried: 0 };
    if (s.kind === 'rebuild')
      return { frame: rebuildFrame(s.correlationId, shard, kind, s.base), carried: 0 };
    const r = await this.opts.log.readWritten(s.first, {
      maxRecords: s.next - s.first,
      maxBytes: REPLICATE_BATCH_BYTES_MAX,
      // Shipped like any record: the follower's log holds the leader's at the leader's offsets.
      includeGenerationStarts: true,
    });
    if (r.kind === 'trimmed') return null;
    assert(r.records.length > 0, 'a read of written records answers at least one');
    const next = s.first + r.records.length;
    if (r.records.some((rec) => (rec.flags & FLAG_GENERATION_START) !== 0)) {
      // A marked batch carries no commit mark: the next batch, or the mark alone, tells it.
      const marks = new Uint8Array(r.records.map((rec) => markOf(rec.flags)));
      const payloads = r.records.map((rec) => rec.payload);
      const frame = markedFrame(s.correlationId, shard, s.first, payloads, marks);
      return { frame, carried: 0, next };
    }
    const full = this.opts.commitOffset?.();
    const mark = full === undefined ? undefined : Math.min(full, markCap);
    const payloads = r.records.map((rec) => rec.payload);
    if (mark === undefined)
      return {
        frame: recordsFrame(s.correlationId, shard, s.first, payloads, kind),
        carried: 0,
        next,
      };
    return {
      frame: committedFrame(s.correlationId, shard, s.first, payloads, mark),
      carried: Math.min(mark, next),
      next,
    };
  }
}
