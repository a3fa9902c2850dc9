/**
 * `group.consume()`'s iterator. While the caller works through one batch the next poll is
 * already in flight, so the poll round trip overlaps the caller's work and acks; a caller that
 * works through its batches quickly (GROUP_CONSUME_QUICK_BATCH_MS) gets up to
 * GROUP_CONSUME_POLLS_AHEAD_MAX polls ahead, so round trips overlap one another too. Records the
 * loop never yields (the rest of the batch in hand, and whatever the polls still out when it
 * ends by break or return bring back) are released: handed back without counting the delivery
 * as an attempt (docs/queues.md). A message of the batch in
 * hand is answered at once (no generator hop per message); only the step to the next batch
 * awaits a poll (whichever of those out answers first), and calls to next() made while it runs
 * wait behind it, so messages come out once each, each batch in its order.
 *
 * The loop runs until the caller ends it (break, return, its signal) or the client closes, as a
 * worker's loop should: a poll that fails in a way that passes (pollFailureOf) is made again
 * after a jittered backoff, for as long as it takes; only a failure that would recur ends it.
 * Each such failure is told to the source (`retrying`: a `consume_retry` status event), and so
 * is the first answer after them (`recovered`), or the loop's end before one came (`stopped`);
 * an answered poll that follows another costs one comparison more, nothing else.
 */
import { type FailureClass, failureClassOf } from '../reader-retry.js';
import {
  GROUP_CONSUME_BUSY_RETRY_DELAY_MS_MAX,
  GROUP_CONSUME_HOLD_MS_MAX,
  GROUP_CONSUME_POLLS_AHEAD_MAX,
  GROUP_CONSUME_QUICK_BATCH_MS,
  GROUP_CONSUME_RETRY_BASE_MS,
  GROUP_CONSUME_RETRY_DELAY_MS_MAX,
  GROUP_CONSUME_VISIBILITY_MS_ASSUMED,
  GROUP_POLL_RECORDS_DEFAULT,
  NOT_FOUND_RETRY_MS,
} from '../limits.js';
import { backoffDelayMs } from '../util/backoff.js';
import { rearmHold } from '../util/hold-timer.js';
import type { GroupMessage } from './group-message.js';
import type { PollOptions } from './group-poll.js';

/** What the loop needs from its group. */
export interface ConsumeSource {
  readonly closed: boolean;
  /** What the client closed itself with (its reconnect gave up), which the loop ends with. */
  readonly closedWith?: Error | undefined;
  /** Aborted when the client closes: a backoff under way ends at once. */
  readonly closing?: AbortSignal;
  poll(opts: PollOptions): Promise<GroupMessage[]>;
  handBack(msgs: readonly GroupMessage[]): Promise<void>[];
  /** Sends the acks the group still gathers (before a hand-back, which would queue ahead). */
  sendGatheredAcks(): void;
  /** Releases idle poll streams. */
  release(): void;
  /** A named consumer's (its restart reclaims what this loop held, each as a delivery). */
  readonly named?: boolean;
  /** In a cluster: a poll failed with `err`, which the router learns from (the shard's owner
   *  is asked again, or taken from a redirect) before the loop polls again. */
  refused?(err: unknown): void;
  /** A poll failed with `err` (`failure`, the `failures`-th in a row) and is made again after
   *  `delayMs` (0: polls still out are waited for first). Only on a failure. */
  retrying?(err: Error, failure: RetriedPollFailure, failures: number, delayMs: number): void;
  /** A poll was answered after `failures` in a row had failed, the first `failedForMs` ago.
   *  Only on the first answer after a failure. */
  recovered?(failures: number, failedForMs: number): void;
  /** The loop ended (`reason`; `failed`: with `error`) while retrying: `failures` in a row had
   *  failed, the first `failedForMs` ago, and none was answered since. Only then. */
  stopped?(reason: ConsumeStopReason, failures: number, failedForMs: number, error?: Error): void;
}

/**
 * Why a consume loop ended: the caller's signal (`aborted`), its break or `return()`
 * (`returned`), the client's close (`closed`), or a failure that would recur (`failed`: the loop
 * throws it).
 */
export type ConsumeStopReason = 'aborted' | 'returned' | 'closed' | 'failed';

/**
 * What a consume loop does about a poll that failed with `err` (the names a `consume_retry`
 * status event gives the first three):
 * - `unavailable`: it passes (a lost connection, a poll left unanswered, retry kind `redirect` in
 *   routing.ts: the shard served elsewhere or not yet): poll again after a short backoff
 *   (GROUP_CONSUME_RETRY_DELAY_MS_MAX at most);
 * - `busy`: the broker asks for a backoff (retry kind `retry_after`: `overloaded`, a limit that
 *   clears): poll again after a longer one (GROUP_CONSUME_BUSY_RETRY_DELAY_MS_MAX at most);
 * - `not_found`: the stream or group is unknown: as `busy`, but for NOT_FOUND_RETRY_MS of such
 *   answers in a row at most (a name not yet loaded after a move; a deleted one answers it
 *   for good);
 * - `fatal`: the same poll would fail the same way (auth, permission, a bad request, an answer
 *   the client cannot read, an outcome it cannot know, anything untyped): the loop ends with it.
 */
export type PollFailure = FailureClass;

/** A failure the loop polls again after. */
export type RetriedPollFailure = Exclude<PollFailure, 'fatal'>;

export const pollFailureOf: (err: unknown) => PollFailure = failureClassOf;

/** The longest a consume loop holds a record before yielding it: a third of its claim, at most
 *  GROUP_CONSUME_HOLD_MS_MAX. */
export function holdMsOf(opts: PollOptions): number {
  const claimMs = opts.visibilityMs ?? GROUP_CONSUME_VISIBILITY_MS_ASSUMED;
  return Math.min(GROUP_CONSUME_HOLD_MS_MAX, claimMs / 3);
}

export function consumeIterator(g: ConsumeSource, opts: PollOptions): AsyncIterator<GroupMessage> {
  return new ConsumeLoop(g, opts).iterator();
}

class ConsumeLoop {
  private readonly stop = new AbortController();
  private readonly pollOpts: PollOptions;
  private readonly ahead: Array<Promise<GroupMessage[]>> = [];
  /** What each poll ahead brought, once it answered (a hand-back at the end goes at once). */
  private readonly answered = new WeakMap<Promise<GroupMessage[]>, GroupMessage[]>();
  /** When each poll ahead answered (performance.now()): its records' claims run from then. */
  private readonly answeredAt = new WeakMap<Promise<GroupMessage[]>, number>();
  private batch: GroupMessage[] = [];
  private at = 0;
  private started = 0;
  /** When the batch in hand was answered: none of it is yielded past `heldSince + holdMs`. */
  private heldSince = 0;
  /** The longest a record waits in the loop before it is yielded (a third of the claim). */
  private readonly holdMs: number;
  /** The caller's `max`, and what the next poll asks for: fewer for a caller whose batches
   *  would outlast half the hold bound, so its records are not claimed long before its turn. */
  private readonly maxAsked: number;
  private max: number;
  /** Batches the caller has worked through: none yet, a named consumer's loop polls nothing
   *  ahead of the first (a worker that dies on its first record then holds that one alone). */
  private batchesDone = 0;
  /** Releases the batch in hand's records not yet yielded, and polls ahead that answered, once
   *  they waited the hold bound while the caller works (a long job). */
  private holdTimer: ReturnType<typeof setTimeout> | undefined;
  /** Whether the caller worked through its last batch quickly: only then poll further ahead. */
  private quick = false;
  private finished = false;
  private step: Promise<IteratorResult<GroupMessage>> | undefined;
  /** Polls failed in a row (an answered poll starts over): the backoff's exponent. */
  private failures = 0;
  /** When the first of those failures came (Date.now()). */
  private failingSinceMs = 0;
  /** When the `not_found` answers in a row began (undefined: the last failure was not one). */
  private missingSinceMs: number | undefined;
  /** Ends the backoff under way, if any. */
  private wake: (() => void) | undefined;

  constructor(
    private readonly g: ConsumeSource,
    private readonly opts: PollOptions,
  ) {
    opts.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.pollOpts = { ...opts, signal: this.stop.signal };
    this.holdMs = holdMsOf(opts);
    this.maxAsked = opts.max ?? GROUP_POLL_RECORDS_DEFAULT;
    // A named consumer's loop starts with one record and no poll ahead, doubling while the caller
    // keeps up: its restart reclaims, each as a delivery, what a crashed predecessor held, so a
    // worker dying on a poison job at once must hold that record alone, not a batch of others.
    this.max = g.named === true ? 1 : this.maxAsked;
  }

  iterator(): AsyncIterator<GroupMessage> {
    return {
      next: this.next,
      return: () => {
        this.finish();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private readonly onAbort = (): void => {
    this.stop.abort();
    this.wake?.();
  };

  /** The client closed while the loop was retrying (listened to only then: one listener per
   *  loop in a retry, not per loop): it ends at once, so its `stopped` precedes the client's
   *  `closed` whether it was in a backoff or waiting for a poll. */
  private readonly onClosing = (): void => this.finish();

  private get ended(): boolean {
    return this.finished || this.opts.signal?.aborted === true || this.g.closed;
  }

  private pollAhead(): void {
    const opts = this.max === this.maxAsked ? this.pollOpts : { ...this.pollOpts, max: this.max };
    const p = this.g.poll(opts);
    // Observed when it is awaited (or dropped at the end); its records noted for the end, and
    // when they came (their claims run from about then).
    p.then(
      (msgs) => {
        this.answered.set(p, msgs);
        this.answeredAt.set(p, performance.now());
        // Answered while the caller works (no step waits on it): held, so watched.
        if (this.step === undefined && this.holdTimer === undefined && !this.finished)
          this.armHold();
      },
      () => undefined,
    );
    this.ahead.push(p);
  }

  /**
   * After a batch the caller worked through (`took` ms for `yielded` records): whether it was
   * quick (then poll further ahead), and how many the next poll asks for: as many as the caller
   * works through in half the hold bound at its pace, at least 1, at most its own `max`.
   */
  private paced(took: number, yielded: number): void {
    this.quick = took <= GROUP_CONSUME_QUICK_BATCH_MS;
    this.batchesDone++;
    if (yielded === 0) return;
    const fits = Math.floor(this.holdMs / 2 / (took / yielded));
    this.max = Math.max(1, Math.min(this.maxAsked, this.max * 2, fits));
  }

  /** The rest of the batch in hand waited past the hold bound: released (handed back without
   *  counting an attempt) before its claims can lapse in the caller's hands. */
  private releaseHeld(): void {
    // Paced by what the caller got through, not by what goes back.
    this.paced(performance.now() - this.started, this.at);
    this.handBack(this.batch.slice(this.at));
    this.batch = [];
    this.at = 0;
  }

  /** Arms the hold timer for the batch just taken (one timer per batch, none for one record
   *  with nothing polled ahead: nothing would wait). */
  private armHold(): void {
    let due = Number.POSITIVE_INFINITY;
    if (this.at < this.batch.length) due = this.heldSince + this.holdMs;
    for (const p of this.ahead) {
      const at = this.answeredAt.get(p);
      if (at !== undefined) due = Math.min(due, at + this.holdMs);
    }
    // Nothing held for later: no timer (a poll still out arms it when it answers).
    this.holdTimer = rearmHold(this.holdTimer, due, this.heldTooLong);
  }

  /**
   * The caller is still on a record while what the loop holds for later reached the hold bound
   * (a long job): it goes back now rather than wait out its claim in the client (each lapse
   * would count as an attempt): the rest of the batch, and each poll ahead that answered that
   * long ago. The loop polls again when the caller asks for more; what is held and not yet due
   * is watched on.
   */
  private readonly heldTooLong = (): void => {
    this.holdTimer = undefined;
    if (this.finished || this.step !== undefined) return; // a step takes what it holds
    const now = performance.now();
    if (this.at < this.batch.length && now - this.heldSince >= this.holdMs) this.releaseHeld();
    for (const p of [...this.ahead]) {
      const at = this.answeredAt.get(p);
      if (at === undefined || now - at < this.holdMs) continue; // still out, or not yet due
      this.ahead.splice(this.ahead.indexOf(p), 1);
      this.handBack(this.answered.get(p)!);
    }
    this.armHold();
  };

  private handBack(msgs: GroupMessage[]): void {
    // Nobody holds these messages: each one's outcome (stale or not) is only observed here.
    for (const p of this.g.handBack(msgs)) p.catch(() => undefined);
  }

  /** Ends the loop: by the caller, the client's close, or `error` (which the loop throws). */
  private finish(error?: unknown): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.holdTimer);
    // Ended while retrying: the source, which was told of each failure, is told they stopped.
    if (this.failures > 0) {
      this.g.closing?.removeEventListener('abort', this.onClosing);
      this.stopped(error);
    }
    this.wake?.();
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    // The rest of the batch in hand was never yielded: it goes back, not out to lapse. Acks this
    // loop made that the group still gathers go first: on the request stream the last acks would
    // otherwise queue behind the hand-back's nacks (and wait for an answer). The hand-back looks
    // its connection up first, so it is sent after them.
    this.g.sendGatheredAcks();
    this.handBack(this.batch.slice(this.at));
    this.batch = [];
    // Polls ahead that answered already: their records go back now, with the batch's (a
    // `close()` right after lets these hand-backs reach the broker first).
    const left: Array<Promise<GroupMessage[]>> = [];
    for (const p of this.ahead.splice(0)) {
      const msgs = this.answered.get(p);
      if (msgs === undefined) left.push(p);
      else this.handBack(msgs);
    }
    if (left.length === 0) {
      this.g.release();
      return;
    }
    // A poll made ahead may hold claims the broker already made for it. When the loop ends by
    // break or return, let it answer and hand its records back; cancelling it would leave those
    // claims to lapse. Only the caller's own abort (or a closed client) stops it.
    void Promise.allSettled(left).then((rs) => {
      for (const r of rs) if (r.status === 'fulfilled') this.handBack(r.value);
      this.g.release();
    });
    if (this.opts.signal?.aborted || this.g.closed) this.stop.abort();
  }

  /**
   * The first poll out to answer (the earliest when several have), taken off the list; undefined
   * when the loop finished meanwhile (it took them all). Awaited in order, a record a later poll
   * brought (one nacked while the earlier polls waited, given to the poll that came next) waited
   * out the earlier polls' long polls with nothing: 10 s, seen by a new user over TLS.
   */
  private async firstAnswered(): Promise<{ p: Promise<GroupMessage[]> } | undefined> {
    const ahead = this.ahead;
    // Boxed: an async step resolved with a promise would take on its value, not name it.
    if (ahead.length === 1) return { p: ahead.shift()! };
    const box = (p: Promise<GroupMessage[]>) => ({ p });
    const first = await Promise.race(
      ahead.map((p) =>
        p.then(
          () => box(p),
          () => box(p),
        ),
      ),
    );
    const at = this.ahead.indexOf(first.p);
    if (at < 0) return undefined;
    this.ahead.splice(at, 1);
    return first;
  }

  /**
   * Whether the loop polls again after a poll failed with `err` (pollFailureOf); false: the loop
   * ends with it. The next poll waits out a backoff first, unless other polls are still out:
   * their answers (records, perhaps) are waited for meanwhile, and the backoff comes after the
   * last of them if it fails too. Nothing the failed poll brought was handed to the loop, so
   * nothing is yielded twice; claims the broker made for a poll whose answer was lost lapse
   * after the visibility timeout and are delivered again (at least once).
   */
  private async retries(err: unknown): Promise<boolean> {
    const failure = pollFailureOf(err);
    if (failure === 'fatal') return false;
    const now = Date.now();
    if (this.failures === 0) {
      this.failingSinceMs = now;
      this.g.closing?.addEventListener('abort', this.onClosing, { once: true });
    }
    if (failure !== 'not_found') this.missingSinceMs = undefined;
    else {
      this.missingSinceMs ??= now;
      if (now - this.missingSinceMs > NOT_FOUND_RETRY_MS) return false;
    }
    this.g.refused?.(err);
    const delayMs = backoffDelayMs(this.failures++, {
      baseMs: GROUP_CONSUME_RETRY_BASE_MS,
      maxMs:
        failure === 'unavailable'
          ? GROUP_CONSUME_RETRY_DELAY_MS_MAX
          : GROUP_CONSUME_BUSY_RETRY_DELAY_MS_MAX,
    });
    const waits = this.ahead.length === 0;
    // Not fatal, so typed (pollFailureOf): a ClientError, or a transport's stream loss.
    this.g.retrying?.(err as Error, failure, this.failures, waits ? delayMs : 0);
    if (waits) await this.pause(delayMs);
    return true;
  }

  /** A poll was answered after failures: the count starts over, and the source is told. */
  private recover(): void {
    const failures = this.failures;
    this.failures = 0;
    this.g.closing?.removeEventListener('abort', this.onClosing);
    this.missingSinceMs = undefined;
    this.g.recovered?.(failures, Date.now() - this.failingSinceMs);
  }

  /** Tells the source why the loop ended while retrying. */
  private stopped(error: unknown): void {
    let reason: ConsumeStopReason = 'returned';
    if (error !== undefined) reason = 'failed';
    else if (this.opts.signal?.aborted === true) reason = 'aborted';
    else if (this.g.closed) reason = 'closed';
    const failedForMs = Date.now() - this.failingSinceMs;
    this.g.stopped?.(reason, this.failures, failedForMs, error as Error | undefined);
  }

  /** Waits `ms`, or until the loop ends: the caller ends it, or the client closes (a backoff
   *  comes only in a retry, when `onClosing` listens). */
  private pause(ms: number): Promise<void> {
    if (this.ended || this.g.closing?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private async advance(): Promise<IteratorResult<GroupMessage>> {
    // The caller asks for more: nothing is held for it meanwhile (the timer would take back the
    // polls this step is about to take).
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    if (this.batch.length > 0) this.paced(performance.now() - this.started, this.at);
    this.batch = [];
    this.at = 0;
    try {
      while (!this.ended) {
        if (this.ahead.length === 0) this.pollAhead();
        let next: GroupMessage[];
        let poll: Promise<GroupMessage[]>;
        try {
          const answered = await this.firstAnswered();
          if (answered === undefined) break; // finished meanwhile: it hands every poll back
          poll = answered.p;
          next = await poll;
        } catch (err) {
          if (this.ended) break;
          // A lost connection (the next poll waits for the reconnect), a poll left unanswered,
          // a shard served elsewhere, a busy broker: poll again after a backoff.
          if (await this.retries(err)) continue;
          throw err;
        }
        // Only after a failure (missingSinceMs is set only then): an answered poll that follows
        // another pays this comparison alone.
        if (this.failures > 0) this.recover();
        if (this.finished) {
          this.handBack(next); // the loop ended while this poll was out
          break;
        }
        if (next.length === 0) continue;
        const now = performance.now();
        const heldSince = this.answeredAt.get(poll) ?? now;
        if (now - heldSince > this.holdMs) {
          // Answered long before its turn (the caller was slow): its claims may lapse before
          // the caller gets to them, so it goes back and a poll sized to the caller's pace goes out.
          this.handBack(next);
          continue;
        }
        let depth = this.quick ? GROUP_CONSUME_POLLS_AHEAD_MAX : 1;
        if (this.batchesDone === 0 && this.g.named === true) depth = 0;
        while (this.ahead.length < depth) this.pollAhead();
        this.started = now;
        this.heldSince = heldSince;
        this.batch = next;
        this.at = 1;
        this.armHold();
        return { value: next[0]!, done: false };
      }
    } catch (err) {
      this.finish(err);
      throw err;
    }
    // A client that closed itself (its reconnect gave up) ends the loop with why, as it ends a
    // subscription: a worker tells a broker gone for good from its own shutdown.
    const gaveUp = this.g.closed && !this.opts.signal?.aborted ? this.g.closedWith : undefined;
    this.finish(gaveUp);
    if (gaveUp !== undefined) throw gaveUp;
    return { value: undefined, done: true };
  }

  /** The loop ended while the caller held a batch: the rest goes back (finish), and a client
   *  that closed itself ends it with why, as a poll would. */
  private endNow(): Promise<IteratorResult<GroupMessage>> {
    const gaveUp = this.g.closed && !this.opts.signal?.aborted ? this.g.closedWith : undefined;
    this.finish(gaveUp);
    return gaveUp !== undefined
      ? Promise.reject(gaveUp)
      : Promise.resolve({ value: undefined, done: true });
  }

  private readonly next = (): Promise<IteratorResult<GroupMessage>> => {
    if (this.step !== undefined) return this.step.then(this.next, this.next);
    if (this.at < this.batch.length) {
      // Ended meanwhile (the caller's signal, the client's close): nothing more of the batch.
      if (this.ended) return this.endNow();
      if (performance.now() - this.heldSince <= this.holdMs)
        return Promise.resolve({ value: this.batch[this.at++]!, done: false });
      this.releaseHeld();
    }
    if (this.finished) return Promise.resolve({ value: undefined, done: true });
    const s = this.advance();
    this.step = s;
    const clear = () => {
      if (this.step === s) this.step = undefined;
    };
    s.then(clear, clear);
    return s;
  };
}
