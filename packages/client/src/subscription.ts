/**
 * Subscriptions as bounded async iterators. One shard is read by a ShardReader: it subscribes,
 * decodes event batches only as the caller pulls (so the broker's queue, not the client's
 * memory, absorbs a slow caller), checks offsets for loss, and resumes after a reconnect or a
 * `subscription_lagged` from the offset after the last event it delivered. Several shards are
 * merged through one bounded queue.
 */
import { setMaxListeners } from 'node:events';
import {
  FLAG_BINARY_EVENT_BATCH_SHARED,
  FLAG_BINARY_EVENT_BATCH,
  decodeEventBatchPieces,
  decodeMessage,
} from '@felix/wire';
import {
  AbortedError,
  ClientClosedError,
  CursorInFutureError,
  CursorTooOldError,
  EventStreamTimeoutError,
  NotLeaderError,
  ProtocolError,
  SubscribeTimeoutError,
  TimeoutError,
  notLeaderOf,
  refusalOf,
} from './errors.js';
import type {
  BrokerConnection,
  OpenSubscription,
  StartPosition,
} from './protocol/broker-connection.js';
import type { SubscriptionHistory } from './protocol/subscribe.js';
import { offsetForTimeOn } from './offset-for-time.js';
import { eitherSignal, readerFailureOf } from './reader-retry.js';
import {
  EVENT_STREAM_REOPENS_MAX,
  FAILOVER_RETRY_BASE_MS,
  FAILOVER_RETRY_DELAY_MS_MAX,
  NOT_FOUND_RETRY_MS,
  NOT_LEADER_RESUBSCRIBES_MAX,
  RESUBSCRIBE_BASE_MS,
  RESUBSCRIBE_BUSY_DELAY_MS_MAX,
  SUBSCRIBE_UNANSWERED_RETRIES_MAX,
  RESUBSCRIBE_DELAY_MS_MAX,
  SUBSCRIPTION_BUFFER_BYTES_MAX,
} from './limits.js';
import { join } from './protocol/frame-stream.js';
import type { StatusEvent } from './status.js';
import { backoffDelayMs, sleep } from './util/backoff.js';
import { EventIterator, EventRun, type StreamEvent } from './stream-events.js';
import { BoundedQueue } from './util/bounded-queue.js';

export type { StreamEvent } from './stream-events.js';

function isCursorError(err: unknown): boolean {
  return err instanceof CursorTooOldError || err instanceof CursorInFutureError;
}

/** Where a reader starts: a position the broker knows, or a time (µs) resolved through
 *  `offset_for_time` before the first subscribe. */
export type ReaderStart = StartPosition | { time: number };

export interface ReaderHost {
  connection(signal?: AbortSignal): Promise<BrokerConnection>;
  emit(event: StatusEvent): void;
  readonly closed: boolean;
  /** What the client closed itself with (its reconnect gave up: ConnectError), which a reader
   *  ends with; undefined while open and after the caller's `close()`. */
  readonly closedWith?: Error | undefined;
  /** Aborted when the client closes: a backoff under way ends at once. */
  readonly closing?: AbortSignal;
  /** Cluster routing (absent or inactive: every subscribe goes to `connection()`). */
  route?: ReaderRoute;
}

/** What a reader needs of the client's router (cluster/router.ts). */
export interface ReaderRoute {
  readonly active: boolean;
  request<T>(
    kind: 'stream',
    name: string,
    shard: number,
    call: (conn: BrokerConnection) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T>;
  refused(kind: 'stream', name: string, shard: number, err: unknown, from: string): void;
}

/** How a reader waits between resubscribes (real timers unless a test pins them). */
export interface ReaderTiming {
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export class ShardReader {
  /** Next offset to deliver; known once the broker answered the first subscribe. */
  private cursor: number | undefined;
  private open: OpenSubscription | null = null;
  /** Retryable refusals since the last subscribe that succeeded (drives the backoff). */
  private refusals = 0;
  /** Ends a backoff: the caller's signal or the client's close (made on the first backoff). */
  private backoffStop: AbortSignal | undefined;
  /** `not_leader` answers since the last subscribe that succeeded. */
  private notLeaderAnswers = 0;
  /** Subscribes answered whose event stream never came, since the last one that succeeded. */
  private eventStreamsMissing = 0;
  /** Subscribes the broker never answered, since the last one that succeeded. */
  private subscribesUnanswered = 0;
  /** When the `not_found` answers in a row began (ms), while it has not subscribed again. */
  private missingSinceMs: number | undefined;
  private stopped = false;
  /** The first subscribe, once started (by `opened()`). */
  private opening: Promise<boolean> | null = null;
  /** Offsets a loss notice (an event batch of no records) reported: `gap` went out at once, and
   *  the next event delivered carries them in `lostBefore` too. */
  private pendingLost = 0;
  /** As pendingLost, for offsets that hold no record (told by `skipped_before`). */
  private pendingSkipped = 0;
  /** The incarnation of the shard's offsets last subscribed to (in-memory shards only). */
  private offsetsEpoch: number | undefined;
  /** The history the cursor belongs to (a replicated shard's, from the last `subscribed`). */
  private history: SubscriptionHistory | undefined;
  /** Where this reader's first subscribe started (the offset asked for, or the broker's start
   *  for `latest`, `earliest` or a time), once known: a shard's position before it yielded. */
  startedAt: number | undefined;
  /** Times the cursor was moved back (`diverged`), and the lowest offset it was moved to: a
   *  position from a run made before is no further than that (positions()). */
  rewinds = 0;
  rewoundTo = Number.POSITIVE_INFINITY;

  constructor(
    private readonly host: ReaderHost,
    readonly stream: string,
    readonly shard: number,
    private start: ReaderStart,
    private readonly queueCapacity: number,
    private readonly signal: AbortSignal | undefined,
    private readonly timing: ReaderTiming = {},
    /** Ask for each record's append time (the timestamped event layout). */
    private readonly timestamps = false,
  ) {
    if (typeof start === 'object' && 'offset' in start) this.startedAt = start.offset;
  }

  /**
   * The position to subscribe at. A time is resolved to the first offset appended at or after
   * it, which becomes the cursor; when no record is that new yet the reader subscribes at the
   * tail and `recheckAt` asks for the time again once subscribed (a record appended between the
   * answer and the subscribe would otherwise be skipped).
   */
  private async startPosition(
    conn: BrokerConnection,
  ): Promise<{ start: StartPosition; recheckAt?: number }> {
    if (this.cursor !== undefined) return { start: { offset: this.cursor } };
    const s = this.start;
    if (typeof s === 'string' || !('time' in s)) return { start: s };
    const found = await offsetForTimeOn(conn, this.stream, this.shard, s.time);
    if (found === undefined) return { start: 'latest', recheckAt: s.time };
    this.cursor = found;
    return { start: { offset: found } };
  }

  /** After a subscribe at the tail for a time nothing matched: true when it must start over
   *  from an offset the time now names (below the tail it started at). */
  private async startsEarlier(conn: BrokerConnection, atMicros: number): Promise<boolean> {
    if (this.cursor === undefined) return false; // a broker without offsets: nothing to compare
    const again = await offsetForTimeOn(conn, this.stream, this.shard, atMicros);
    if (again === undefined || again >= this.cursor) return false;
    this.cursor = again;
    this.startedAt = again;
    return true;
  }

  /** Closes the subscription open now (the reader then resubscribes from its cursor). */
  close(): void {
    this.open?.close();
    this.open = null;
  }

  /** Ends the reader for good: the open subscription closes and no other is opened. */
  stop(): void {
    this.stopped = true;
    this.close();
  }

  /**
   * Starts the first subscribe now if it has not started (`Subscription.ready()` calls it before
   * any event is pulled), and resolves once the broker answered it: true when subscribed (the
   * shard's start position is fixed), false when stopped, aborted or the client closed first.
   * Rejects with what ends the reader before it subscribed. The same promise every time.
   */
  opened(): Promise<boolean> {
    if (this.opening === null) {
      this.opening = this.subscribeUntilOpen(true);
      // Its failure reaches the caller through `events()` or `ready()`; a reader that neither
      // awaits must not surface it as an unhandled rejection.
      this.opening.catch(() => undefined);
    }
    return this.opening;
  }

  async *events(): AsyncGenerator<EventRun> {
    try {
      let subscribed = await this.opened();
      while (subscribed) {
        // None open: closed since `ready()` subscribed it, before anything was pulled.
        if (this.open !== null) {
          yield* this.drain(this.open);
          const refused = this.open?.refusal?.();
          if (refused) throw refused; // ended by the broker for good (its token expired)
          this.open?.close();
          this.open = null;
        }
        // Lagged, moved, ended by the broker, or the connection died: resume from the cursor
        // (on the shard's owner as then known; `host.connection()` waits for a reconnect).
        subscribed = await this.subscribeUntilOpen(false);
      }
    } finally {
      this.close();
    }
  }

  /** Subscribes, retrying what may pass, until the broker answers: true when subscribed, false
   *  when the reader ends first (stopped, aborted, the client closed); throws a final failure.
   *  `first`: no subscribe of this reader has succeeded yet. */
  private async subscribeUntilOpen(first: boolean): Promise<boolean> {
    while (!this.stopped && !this.signal?.aborted && !this.host.closed) {
      const at: { conn?: BrokerConnection } = {};
      let again: boolean;
      try {
        again = await this.subscribeRouted(at);
      } catch (err) {
        this.close();
        if (this.signal?.aborted) return false;
        // Closed while it subscribed: ended, as a close between two subscribes ends it, whatever
        // the close did to this one (its stream reset, its connection ended). Only a client
        // that closed itself (its reconnect gave up) has an error to say.
        if (this.host.closed) return this.endOnClose();
        if (!(await this.onFailure(err, first, at.conn))) throw err;
        continue;
      }
      if (again) {
        this.close();
        continue;
      }
      this.refusals = 0;
      this.notLeaderAnswers = 0;
      this.eventStreamsMissing = 0;
      this.subscribesUnanswered = 0;
      this.missingSinceMs = undefined;
      if (!this.stopped) return true;
      this.close(); // stopped while the subscribe was on its way: nothing will read it
      return false;
    }
    // The loop ends on a stop, an abort or the client's close (a backoff it cut short included).
    return this.host.closed && !this.stopped ? this.endOnClose() : false;
  }

  /** A reader the client's close stopped ends (false), or throws the ConnectError the client
   *  closed itself with when its reconnect gave up, whichever step the close caught it at. */
  private endOnClose(): false {
    const gaveUp = this.signal?.aborted ? undefined : this.host.closedWith;
    if (gaveUp !== undefined) throw gaveUp;
    return false;
  }

  /** Subscribes on the shard's owner (routed) or the client's connection. True: start over
   *  (a time that now names an earlier offset). `at.conn` is the connection last tried. */
  private subscribeRouted(at: { conn?: BrokerConnection }): Promise<boolean> {
    const route = this.host.route;
    const on = (conn: BrokerConnection) => {
      at.conn = conn;
      return this.subscribeOn(conn);
    };
    if (route?.active) return route.request('stream', this.stream, this.shard, on, this.signal);
    return this.host.connection(this.signal).then(on);
  }

  private async subscribeOn(conn: BrokerConnection): Promise<boolean> {
    const { start, recheckAt } = await this.startPosition(conn);
    const resuming = typeof start === 'object' && 'offset' in start;
    try {
      this.open = await conn.subscribe(
        this.stream,
        this.shard,
        start,
        this.queueCapacity,
        this.timestamps,
        resuming ? this.history : undefined,
        // An abort ends a subscribe still opening at once, not when a stalled broker's silence
        // is noticed: `stop()` has no open subscription to close yet.
        this.signal,
      );
    } catch (err) {
      // Answered, but its event stream never came: the next subscribe resumes where this one
      // started, as after a lost stream, so what was appended meanwhile is not skipped. (A time
      // start still to be checked again asks from scratch: its recheck happens on success.)
      if (err instanceof EventStreamTimeoutError && err.answered && recheckAt === undefined)
        this.adopt(err.answered);
      throw err;
    }
    if (this.adopt(this.open)) return true;
    return recheckAt !== undefined && (await this.startsEarlier(conn, recheckAt));
  }

  /** Takes in what the broker's `subscribed` said. True: its offsets began again (start over). */
  private adopt(answer: NonNullable<EventStreamTimeoutError['answered']>): boolean {
    if (this.offsetsBeganAgain(answer.offsetsEpoch)) return true;
    this.history = answer.history;
    this.divergedFrom(answer.divergedAt);
    if (this.cursor === undefined && answer.startOffset !== undefined)
      this.cursor = answer.startOffset;
    this.startedAt ??= this.cursor;
    return false;
  }

  /**
   * True when an in-memory shard's offsets began again since the last subscribe (its broker
   * restarted, or it moved): the cursor names other records now, so the reader says `reset` and
   * starts over from the shard's earliest. (Resuming at the cursor, it skipped the new records
   * below it without a word; only a cursor past the new tail was caught, by `in_future`.)
   */
  private offsetsBeganAgain(epoch: number | undefined): boolean {
    if (epoch === undefined) return false;
    const before = this.offsetsEpoch;
    this.offsetsEpoch = epoch;
    if (before === undefined || before === epoch || this.cursor === undefined) return false;
    this.host.emit({ type: 'reset', stream: this.stream, shard: this.shard });
    this.cursor = undefined;
    this.start = 'earliest';
    return true;
  }

  /**
   * The broker started below the cursor: its log parted there from the history this reader
   * read (a `leader` shard's failover lost records no follower held, and the new leader wrote
   * others at their offsets). Said (`diverged`), and read from there: resuming at the cursor
   * skipped the new records below it without a word.
   */
  private divergedFrom(at: number | undefined): void {
    if (at === undefined || this.cursor === undefined || at >= this.cursor) return;
    this.host.emit({
      type: 'diverged',
      stream: this.stream,
      shard: this.shard,
      from: at,
      to: this.cursor,
    });
    this.cursor = at;
    this.rewinds++;
    this.rewoundTo = Math.min(this.rewoundTo, at);
  }

  /**
   * A failed subscribe: retried (true) or the end of the subscription (false). Whatever passes
   * is retried for as long as the client keeps reconnecting (reader-retry.ts), with or without
   * cluster routing: a lost connection, a wait for the reconnect that timed out (the broker down
   * longer than `requestTimeoutMs`), a broker refusing while it starts or its shard opens, an
   * owner lost or moved. It ends on the client's close (subscribeUntilOpen), the caller's abort,
   * or a failure that would recur.
   */
  private async onFailure(
    err: unknown,
    first: boolean,
    conn: BrokerConnection | undefined,
  ): Promise<boolean> {
    if (isCursorError(err)) return this.onCursorError(err, first);
    const route = this.host.route?.active ? this.host.route : undefined;
    if (conn?.isLost) {
      // Lost on the way: resumed from the cursor once reconnected (`connection()` waits).
      route?.refused('stream', this.stream, this.shard, err, conn.server);
      await conn.lost;
      return true;
    }
    if (conn !== undefined && this.givesUpOn(err, route !== undefined)) return false;
    const failure = readerFailureOf(err);
    if (failure === 'fatal' || (failure === 'not_found' && !this.stillMissing(route))) return false;
    if (failure !== 'not_found') this.missingSinceMs = undefined;
    // A redirect teaches the owner; anything else drops the one held, to be asked again.
    route?.refused('stream', this.stream, this.shard, err, conn?.server ?? '');
    const [baseMs, maxMs] =
      failure === 'unavailable'
        ? route
          ? [FAILOVER_RETRY_BASE_MS, FAILOVER_RETRY_DELAY_MS_MAX]
          : [RESUBSCRIBE_BASE_MS, RESUBSCRIBE_DELAY_MS_MAX]
        : [RESUBSCRIBE_BASE_MS, RESUBSCRIBE_BUSY_DELAY_MS_MAX];
    await this.backoff(baseMs, maxMs, failure, err);
    return true;
  }

  /** A `not_found` (unknown stream) is retried for NOT_FOUND_RETRY_MS in a row when routed (a
   *  name its new owner has not loaded yet, after a move); at once final on one broker, which
   *  loaded its streams before it answered anything. */
  private stillMissing(route: ReaderRoute | undefined): boolean {
    if (route === undefined) return false;
    const now = Date.now();
    this.missingSinceMs ??= now;
    return now - this.missingSinceMs <= NOT_FOUND_RETRY_MS;
  }

  /**
   * Whether a subscribe that failed on a live connection ends the reader although its failure
   * class passes: a broker that keeps refusing the same way is the caller's to hear of.
   */
  private givesUpOn(err: unknown, routed: boolean): boolean {
    // Without cluster routing a lasting redirect is the caller's to follow: say so, naming the
    // leader, rather than resubscribe to this broker forever. (With routing it is followed.)
    if (!routed && err instanceof NotLeaderError)
      return ++this.notLeaderAnswers > NOT_LEADER_RESUBSCRIBES_MAX;
    // An event stream that never came is a stream lost on the way: subscribed again from the
    // cursor (after a backoff), but a broker that never opens one ends the reader typed rather
    // than have it subscribe for ever.
    if (err instanceof EventStreamTimeoutError)
      return ++this.eventStreamsMissing > EVENT_STREAM_REOPENS_MAX;
    // So is a subscribe the broker never answered (a stalled handler, an answer lost), or the
    // `offset_for_time` a time start asks first (a TimeoutError of the request stream): tried
    // again, but a broker that answers none ends the reader typed instead of holding it (or
    // asking again every requestTimeoutMs for as long as the connection lives). A connection
    // found lost meanwhile is not counted: that was a lost connection, resumed from.
    if (err instanceof SubscribeTimeoutError || err instanceof TimeoutError)
      return ++this.subscribesUnanswered > SUBSCRIBE_UNANSWERED_RETRIES_MAX;
    return false;
  }

  /** Waits a full-jitter delay, said first (`subscribe_retry`); the caller's abort and the
   *  client's close end it at once (the loop then sees either and stops). */
  private async backoff(
    baseMs: number,
    maxMs: number,
    failure: 'unavailable' | 'busy' | 'not_found',
    err: unknown,
  ): Promise<void> {
    const delayMs = backoffDelayMs(this.refusals++, {
      baseMs,
      maxMs,
      ...(this.timing.random ? { random: this.timing.random } : {}),
    });
    this.host.emit({
      type: 'subscribe_retry',
      stream: this.stream,
      shard: this.shard,
      failure,
      error: err instanceof Error ? err : new Error(String(err)),
      failures: this.refusals,
      delayMs,
    });
    // Made once per reader: Node 20 keeps every combined signal alive (reader-retry.ts).
    this.backoffStop ??= eitherSignal(this.signal, this.host.closing);
    // Aborted or closed: the wait ends early, and the loop then sees why.
    await (this.timing.sleep ?? sleep)(delayMs, this.backoffStop).catch(() => undefined);
  }

  /** A cursor the broker refused on resume: the loss said (`gap`) or the start over (`reset`),
   *  then resubscribed; on the first subscribe from a position the caller gave, the end. */
  private onCursorError(err: unknown, first: boolean): boolean {
    if (err instanceof CursorTooOldError) {
      if (first && this.cursor === undefined) return false;
      this.host.emit({
        type: 'gap',
        stream: this.stream,
        shard: this.shard,
        from: err.requested,
        count: err.available - err.requested,
      });
      // The next event carries the loss too, as a loss notice's does: a caller checking
      // `lostBefore` must not miss what a resume below retention skipped.
      this.pendingLost += err.available - err.requested;
      this.cursor = err.available;
      return true;
    }
    if (first && this.cursor === undefined) return false;
    // The shard's offsets went backwards: an in-memory stream whose broker restarted.
    this.host.emit({ type: 'reset', stream: this.stream, shard: this.shard });
    this.cursor = undefined;
    this.start = 'earliest';
    return true;
  }

  private async *drain(
    open: OpenSubscription,
  ): AsyncGenerator<EventRun, 'lagged' | 'ended' | 'lost' | 'moved'> {
    for (;;) {
      let frame: Awaited<ReturnType<typeof open.events.nextPieces>>;
      try {
        // Event frames are decoded from the chunks they arrived in: never joined into one copy.
        frame = await open.events.nextPieces();
      } catch {
        return 'lost';
      }
      if (!frame) return 'ended';
      if (frame.flags === 0) {
        const msg = decodeMessage(join(frame));
        if (msg.type === 'subscription_lagged') {
          this.host.emit({
            type: 'lagged',
            stream: this.stream,
            shard: this.shard,
            resumeFrom: msg.resume_from,
          });
          if (this.cursor === undefined) this.cursor = msg.resume_from;
          return 'lagged';
        }
        if (msg.type === 'shard_moved') {
          this.moved(msg);
          return 'moved';
        }
        if (msg.type === 'event_batch') {
          yield this.toEvents(msg.base_offset, 0, msg.payloads);
          continue;
        }
        // The broker ended the subscription: its code says why (`unauthenticated` when the
        // connection's token expired, `forbidden` when a permission was withdrawn), and the
        // iterator ends with that typed error.
        if (msg.type === 'error') {
          if (msg.code !== undefined) throw refusalOf(msg);
          throw new ProtocolError(`subscription ended by the broker: ${msg.message}`);
        }
        continue; // other end-of-stream frames this client did not negotiate are ignored
      }
      if (!(frame.flags & (FLAG_BINARY_EVENT_BATCH_SHARED | FLAG_BINARY_EVENT_BATCH))) {
        throw new ProtocolError(
          `unexpected frame 0x${frame.flags.toString(16)} on an event stream`,
        );
      }
      const batch = decodeEventBatchPieces(frame.flags, frame.pieces, frame.length);
      yield this.toEvents(
        batch.baseOffset,
        batch.skippedBefore ?? 0,
        batch.payloads,
        batch.timestampsMicros,
      );
    }
  }

  /**
   * The broker handed the shard to another (FEATURE_SHARD_MOVED): learn the owner it names and
   * resume there at max(next undelivered, resume_from). A `resume_from` past the cursor is a
   * loss the broker owns up to, reported as a `gap`.
   */
  private moved(msg: {
    resume_from?: number | undefined;
    node_id?: string | undefined;
    addr?: string | undefined;
    generation: number;
  }): void {
    if (msg.node_id !== undefined && this.open !== null)
      this.host.route?.refused(
        'stream',
        this.stream,
        this.shard,
        notLeaderOf({ node_id: msg.node_id, addr: msg.addr, generation: msg.generation }),
        '',
      );
    const from = msg.resume_from;
    if (from === undefined) return;
    if (this.cursor !== undefined && from > this.cursor)
      this.host.emit({
        type: 'gap',
        stream: this.stream,
        shard: this.shard,
        from: this.cursor,
        count: from - this.cursor,
      });
    this.cursor = Math.max(this.cursor ?? 0, from);
  }

  private toEvents(
    base: number | undefined,
    skipped: number,
    payloads: Uint8Array[],
    times?: number[],
  ): EventRun {
    if (base === undefined) {
      // Without offsets (a broker that did not negotiate them) loss cannot be seen.
      const from = this.cursor ?? 0;
      this.cursor = from + payloads.length;
      return new EventRun(this.stream, this.shard, from, payloads, 0, 0, times, 0, this.rewinds);
    }
    let lost = 0;
    let skip = 0;
    let empty = 0;
    if (this.cursor !== undefined) {
      lost = Math.max(base - this.cursor - skipped, 0);
      empty = Math.max(0, Math.min(skipped, base - this.cursor));
      if (base < this.cursor) skip = this.cursor - base; // already delivered: never twice
    }
    if (lost > 0)
      this.host.emit({
        type: 'gap',
        stream: this.stream,
        shard: this.shard,
        from: this.cursor!,
        count: lost,
      });
    this.cursor = Math.max(this.cursor ?? 0, base + payloads.length);
    if (skip >= payloads.length) {
      // A loss notice (no records) or records all delivered before: nothing to hand out, so a
      // loss waits for the next event that is.
      this.pendingLost += lost;
      this.pendingSkipped += empty;
      return new EventRun(this.stream, this.shard, base, payloads, skip, 0, times, 0, this.rewinds);
    }
    lost += this.pendingLost;
    this.pendingLost = 0;
    empty += this.pendingSkipped;
    this.pendingSkipped = 0;
    const r = this.rewinds;
    return new EventRun(this.stream, this.shard, base, payloads, skip, lost, times, empty, r);
  }
}

/** The caller's view: an async iterable of events; `close()` or the signal ends it. */
export class Subscription implements AsyncIterable<StreamEvent> {
  private readonly controller = new AbortController();
  private used = false;
  /** The shard readers, made once: by `ready()` or the first `next()`, whichever comes first. */
  private opening: Promise<ShardReader[]> | null = null;
  /** The readers once made, and the iterator once asked for (for `positions`). */
  private made: ShardReader[] = [];
  private events: EventIterator | null = null;

  /** Takes this subscription's listener off the caller's signal (which may outlive it). */
  private unlink: () => void = () => undefined;

  constructor(
    private readonly makeReaders: (signal: AbortSignal) => Promise<ShardReader[]>,
    private readonly bufferBatches: number,
    signal: AbortSignal | undefined,
  ) {
    // Every shard reader waits on this signal while it opens (its stream's auth, its answer,
    // its event stream), each wait taking its listener off when it ends: a merged subscription
    // of four shards passed Node's leak warning at 10, a count of shards, not of leaks.
    setMaxListeners(0, this.controller.signal);
    if (signal?.aborted) this.controller.abort(signal.reason);
    else if (signal !== undefined) {
      const onAbort = () => this.controller.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.unlink = () => signal.removeEventListener('abort', onAbort);
    }
  }

  close(): void {
    this.controller.abort(new AbortedError('subscription'));
  }

  /**
   * Opens the subscription now if nothing has (no `next()` yet), and resolves once every shard
   * read has answered `subscribed`: its start position (`'latest'`: the tail) is then fixed, so
   * a record published after this resolves is delivered to the iterator. Until the caller
   * iterates, events wait in the broker's per-subscriber queue. Rejects with the error the
   * iterator then ends with; with AbortedError when the signal, `close()` or `return()` ends the
   * subscription first (as a call given a signal does), and rejects too when the client closes
   * first (ClientClosedError; the ConnectError it closed itself with when its reconnect gave up).
   */
  async ready(): Promise<void> {
    const signal = this.controller.signal;
    let readers: ShardReader[] = [];
    let subscribed = false;
    try {
      readers = await this.readers();
      subscribed = (await Promise.all(readers.map((r) => r.opened()))).every(Boolean);
    } catch (err) {
      if (!signal.aborted) {
        // The subscription failed: the shards that did subscribe are let go now, not when the
        // caller iterates (which ends with this error) or closes.
        for (const r of readers) r.stop();
        this.unlink();
        throw err;
      }
    }
    if (signal.aborted) throw new AbortedError('the subscription', { cause: signal.reason });
    if (!subscribed) throw new ClientClosedError();
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    if (this.used) throw new ClientClosedError();
    this.used = true;
    const signal = this.controller.signal;
    const stop = () => this.controller.abort(new AbortedError('subscription'));
    this.events = new EventIterator(() => this.batches(signal), signal, stop);
    return this.events;
  }

  /**
   * Where each shard of this subscription stands: the offset after the last event it handed
   * out of that shard, or, for a shard that handed out none yet, where its read started (once
   * subscribed: after `ready()`, or once it yielded). Saved after the events it follows were
   * handled, it resumes the stream with no gap and no duplicate:
   * `subscribe(stream, { from: { offsets: sub.positions() } })`. Offsets of a durable stream;
   * an in-memory shard's offsets begin again when its broker restarts.
   */
  positions(): Record<number, number> {
    const at = new Map<number, number>();
    for (const r of this.made) if (r.startedAt !== undefined) at.set(r.shard, r.startedAt);
    const handed = this.events?.handed();
    for (const r of this.made) {
      const h = handed?.get(r.shard);
      if (h === undefined) continue;
      // Moved back (`diverged`) since the run its last event came from: the records from there
      // on are other records now, not read yet.
      at.set(r.shard, r.rewinds > h.rewinds ? Math.min(h.next, r.rewoundTo) : h.next);
    }
    const out: Record<number, number> = {};
    for (const [shard, next] of [...at].sort((a, b) => a[0] - b[0])) out[shard] = next;
    return out;
  }

  /** The shard readers (a shard lookup first when no shard was given), made on the first call;
   *  an abort stops them, whether or not anything iterates them. */
  private readers(): Promise<ShardReader[]> {
    if (this.opening !== null) return this.opening;
    const signal = this.controller.signal;
    this.opening = this.makeReaders(signal).then((readers) => {
      this.made = readers;
      const stop = () => {
        for (const r of readers) r.stop();
      };
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
      return readers;
    });
    // A failure reaches the caller through `ready()` or `next()`; when only one of them is
    // called, the other must not surface it as an unhandled rejection.
    this.opening.catch(() => undefined);
    return this.opening;
  }

  /** Decoded batches from the shard readers (merged when there are several). */
  private async *batches(signal: AbortSignal): AsyncGenerator<EventRun> {
    let readers: ShardReader[];
    try {
      readers = await this.readers();
    } catch (err) {
      this.unlink(); // an unknown stream ends the subscription before it began
      // Aborted or the client closed (before or while its shards were looked up): ended, not
      // failed, as a one-shard subscription is.
      if (signal.aborted || err instanceof ClientClosedError) return;
      throw err;
    }
    try {
      if (readers.length === 1) {
        yield* readers[0]!.events();
        return;
      }
      yield* this.merge(readers, signal);
    } finally {
      for (const r of readers) r.stop();
      this.unlink();
    }
  }

  private async *merge(readers: ShardReader[], signal: AbortSignal): AsyncGenerator<EventRun> {
    const queue = new BoundedQueue<EventRun>(this.bufferBatches, {
      bytesMax: SUBSCRIPTION_BUFFER_BYTES_MAX,
      weigh: (run) => run.bytes,
    });
    let running = readers.length;
    const pumps = readers.map(async (r) => {
      try {
        for await (const batch of r.events()) {
          if (!(await queue.push(batch, signal))) break;
        }
      } catch (err) {
        queue.fail(err);
      } finally {
        if (--running === 0) queue.close();
      }
    });
    const onAbort = () => {
      // Stopped, not just closed: a closed reader resubscribes, and its pump would never end.
      for (const r of readers) r.stop();
      queue.close();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const batch = await queue.pull();
        if (batch === undefined || signal.aborted) return;
        yield batch;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      onAbort();
      await Promise.allSettled(pumps);
    }
  }
}
