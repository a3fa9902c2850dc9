/**
 * `group.consume()`'s iterator. While the caller works through one batch the next poll is
 * already in flight, so the poll round trip overlaps the caller's work and acks; a caller that
 * works through its batches quickly (GROUP_CONSUME_QUICK_BATCH_MS) gets up to
 * GROUP_CONSUME_POLLS_AHEAD_MAX polls ahead, so round trips overlap one another too. Records the
 * loop never yields (the rest of the batch in hand, and whatever the polls still out when it
 * ends by break or return bring back) are handed back with a nack. A message of the batch in
 * hand is answered at once (no generator hop per message); only the step to the next batch
 * awaits a poll (whichever of those out answers first), and calls to next() made while it runs
 * wait behind it, so messages come out once each, each batch in its order.
 */
import { ConnectionLostError, isStreamGone } from '../errors.js';
import { GROUP_CONSUME_POLLS_AHEAD_MAX, GROUP_CONSUME_QUICK_BATCH_MS } from '../limits.js';
import type { FailoverClock } from './host.js';
import type { GroupMessage } from './group-message.js';
import type { PollOptions } from './group-poll.js';

/** What the loop needs from its group. */
export interface ConsumeSource {
  readonly closed: boolean;
  poll(opts: PollOptions): Promise<GroupMessage[]>;
  handBack(msgs: readonly GroupMessage[]): Promise<void>[];
  /** Sends the acks the group still gathers (before a hand-back, which would queue ahead). */
  sendGatheredAcks(): void;
  /** Releases idle poll streams. */
  release(): void;
  /** The shard polled, for following its owner (absent in tests of the loop alone). */
  readonly stream?: string;
  readonly shard?: number;
  /** Follows the shard's owner after a loss in a cluster (absent: a failure ends the loop). */
  readonly failover?: FailoverClock;
}

export function consumeIterator(g: ConsumeSource, opts: PollOptions): AsyncIterator<GroupMessage> {
  return new ConsumeLoop(g, opts).iterator();
}

class ConsumeLoop {
  private readonly stop = new AbortController();
  private readonly pollOpts: PollOptions;
  private readonly ahead: Array<Promise<GroupMessage[]>> = [];
  private batch: GroupMessage[] = [];
  private at = 0;
  private started = 0;
  /** Whether the caller worked through its last batch quickly: only then poll further ahead. */
  private quick = false;
  private finished = false;
  private step: Promise<IteratorResult<GroupMessage>> | undefined;

  constructor(
    private readonly g: ConsumeSource,
    private readonly opts: PollOptions,
  ) {
    opts.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.pollOpts = { ...opts, signal: this.stop.signal };
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

  private readonly onAbort = (): void => this.stop.abort();

  private get ended(): boolean {
    return this.finished || this.opts.signal?.aborted === true || this.g.closed;
  }

  private pollAhead(): void {
    const p = this.g.poll(this.pollOpts);
    p.catch(() => undefined); // observed when it is awaited (or dropped at the end)
    this.ahead.push(p);
  }

  private handBack(msgs: GroupMessage[]): void {
    // Nobody holds these messages: each one's outcome (stale or not) is only observed here.
    for (const p of this.g.handBack(msgs)) p.catch(() => undefined);
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    // The rest of the batch in hand was never yielded: it goes back, not out to lapse. Acks this
    // loop made that the group still gathers go first: on the request stream the last acks would
    // otherwise queue behind the hand-back's nacks (and wait for an answer). The hand-back looks
    // its connection up first, so it is sent after them.
    this.g.sendGatheredAcks();
    this.handBack(this.batch.slice(this.at));
    this.batch = [];
    const left = this.ahead.splice(0);
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

  /** In a cluster the shard's owner moved or died: poll its new owner, until a deadline. */
  private failsOver(err: unknown): Promise<boolean> {
    const g = this.g;
    if (g.failover === undefined || g.stream === undefined) return Promise.resolve(false);
    const where = { kind: 'stream' as const, name: g.stream, shard: g.shard ?? 0, from: '' };
    return g.failover.retries(err, where, this.opts.signal);
  }

  private async advance(): Promise<IteratorResult<GroupMessage>> {
    if (this.batch.length > 0)
      this.quick = performance.now() - this.started <= GROUP_CONSUME_QUICK_BATCH_MS;
    this.batch = [];
    this.at = 0;
    try {
      while (!this.ended) {
        if (this.ahead.length === 0) this.pollAhead();
        let next: GroupMessage[];
        try {
          const answered = await this.firstAnswered();
          if (answered === undefined) break; // finished meanwhile: it hands every poll back
          next = await answered.p;
        } catch (err) {
          if (this.ended) break;
          // A lost connection: the next poll waits for the reconnect.
          if (err instanceof ConnectionLostError || isStreamGone(err)) continue;
          // In a cluster the shard's owner moved or died: poll its new owner, until a deadline.
          if (await this.failsOver(err)) continue;
          throw err;
        }
        this.g.failover?.ok();
        if (this.finished) {
          this.handBack(next); // the loop ended while this poll was out
          break;
        }
        if (next.length === 0) continue;
        const depth = this.quick ? GROUP_CONSUME_POLLS_AHEAD_MAX : 1;
        while (this.ahead.length < depth) this.pollAhead();
        this.started = performance.now();
        this.batch = next;
        this.at = 1;
        return { value: next[0]!, done: false };
      }
    } catch (err) {
      this.finish();
      throw err;
    }
    this.finish();
    return { value: undefined, done: true };
  }

  private readonly next = (): Promise<IteratorResult<GroupMessage>> => {
    if (this.step !== undefined) return this.step.then(this.next, this.next);
    if (this.at < this.batch.length)
      return Promise.resolve({ value: this.batch[this.at++]!, done: false });
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
