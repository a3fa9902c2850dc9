/**
 * `felix.group(stream, group, { shard: 'all' })`: one consumer group over every shard of a
 * stream, as a Kafka consumer group reads every partition of a topic or a JetStream consumer its
 * whole stream. It is a Group per shard (each shard keeps its own cursor, claims and dead
 * letters under the same group name) and one `consume()` loop that merges theirs.
 *
 * The merge keeps one `next()` out on each shard's loop and yields whichever answers first, so a
 * busy shard never holds up another's records and a quiet one costs only its long poll. A
 * shard's loop hands back what it never yielded when it ends; the merge does the same for the
 * record a shard's loop yielded to it that it had not yet passed on (at most one per shard), so
 * ending the loop leaves nothing to lapse. A shard's loop that fails for good ends the merged
 * loop with its error, after the others were ended the same way.
 */
import { InvalidArgumentError, NotFoundError, UnknownStreamError } from '../errors.js';
import { abortable } from '../util/abortable.js';
import { rearmHold } from '../util/hold-timer.js';
import { type Group, type GroupAdminOptions, type GroupInfo, checkPollOptions } from './group.js';
import type { GroupMessage } from './group-message.js';
import { holdMsOf } from './group-consume.js';
import type { PollOptions } from './group-poll.js';

/** One shard's row of `StreamGroup.describe()`: the group there, or `missing` where it has not
 *  been made yet. */
export type ShardGroupInfo = (GroupInfo & { shard: number }) | { shard: number; missing: true };

/** A shard loop's next record, named by the shard it came from (and when it came: it waits in
 *  the merge while other shards' records go first). */
type Step =
  | { shard: number; r: IteratorResult<GroupMessage>; at: number }
  | { shard: number; err: unknown };

export class StreamGroup {
  private made: Promise<Group[]> | null = null;

  constructor(
    readonly stream: string,
    readonly name: string,
    /** The stream's shard count (a lookup, shared by every caller: it takes no one's signal). */
    private readonly shardCount: () => Promise<number>,
    /** The group handle of one shard. */
    private readonly groupOf: (shard: number) => Group,
  ) {}

  /** The group's handle on one shard (for dead letters, redrive, seek, delete). */
  shard(shard: number): Group {
    return this.groupOf(shard);
  }

  /** One handle per shard of the stream, made once the shard count is known. The lookup is
   *  shared; `signal` ends only this call's wait for it. */
  shards(signal?: AbortSignal): Promise<Group[]> {
    if (this.made === null) {
      const made = this.shardCount().then((n) =>
        Array.from({ length: n }, (_, i) => this.groupOf(i)),
      );
      // A failed lookup is asked again by the next call.
      made.catch(() => {
        if (this.made === made) this.made = null;
      });
      this.made = made;
    }
    return abortable(this.made, signal, `the shard lookup of ${this.stream}`, false);
  }

  /**
   * Each shard's position and work in flight, by shard (work left: at most `tail - committed +
   * owed`, a redriven dead letter being owed below the position); a shard the
   * group has not reached yet (no poll, seek or settle there: it exists from its first) is
   * `{ shard, missing: true }`, not a failure of the whole call.
   */
  async describe(opts: { signal?: AbortSignal } = {}): Promise<ShardGroupInfo[]> {
    const groups = await this.shards(opts.signal);
    return Promise.all(
      groups.map(async (g): Promise<ShardGroupInfo> => {
        try {
          return { shard: g.shard, ...(await g.describe(opts)) };
        } catch (err) {
          if (err instanceof NotFoundError && !(err instanceof UnknownStreamError))
            return { shard: g.shard, missing: true };
          throw err;
        }
      }),
    );
  }

  /**
   * Moves the group's position on every shard to its `earliest` or `latest` record, as a Kafka
   * consumer group resets every partition (`ifNew`: only on shards where the group does not
   * exist yet, so a group made on first use starts at the tail, `auto.offset.reset=latest`).
   * Voids every standing claim on each shard moved. An exact offset is one shard's:
   * `shard(i).seek({ offset })`. Answers each shard's position, in shard order.
   */
  async seek(
    start: 'earliest' | 'latest',
    opts: GroupAdminOptions & { ifNew?: boolean } = {},
  ): Promise<{ shard: number; offset: number; moved: boolean }[]> {
    if (start !== 'earliest' && start !== 'latest')
      throw new InvalidArgumentError(
        "a group over every shard seeks to 'earliest' or 'latest'; an offset is one shard's: shard(i).seek({ offset })",
      );
    const groups = await this.shards(opts.signal);
    return Promise.all(
      groups.map(async (g) => ({ shard: g.shard, ...(await g.seek(start, opts)) })),
    );
  }

  /** Deletes the group on every shard (position, dead letters, claims); answers whether it
   *  existed on any. */
  async delete(opts: GroupAdminOptions = {}): Promise<boolean> {
    const groups = await this.shards(opts.signal);
    const existed = await Promise.all(groups.map((g) => g.delete(opts)));
    return existed.some(Boolean);
  }

  /** Releases every shard handle's idle poll streams. */
  release(): void {
    void this.made?.then(
      (gs) => {
        for (const g of gs) g.release();
      },
      () => undefined,
    );
  }

  /**
   * Yields the records of every shard as their polls answer, each from its shard's `consume()`
   * loop (the options are each loop's: `max` records per poll of a shard). Runs until the caller
   * ends it or the client closes; ends with the error of a shard's loop that fails for good.
   */
  consume(opts: PollOptions = {}): AsyncIterable<GroupMessage> {
    checkPollOptions(opts); // at the call, as a one-shard loop's
    return { [Symbol.asyncIterator]: () => new MergedConsume(this, opts) };
  }
}

class MergedConsume implements AsyncIterator<GroupMessage> {
  /** Ends every shard's loop: the caller's signal, a return, or a failure. */
  private readonly stop = new AbortController();
  private loops: { group: Group; it: AsyncIterator<GroupMessage> }[] | null = null;
  /** The `next()` out on each shard's loop, by shard. */
  private readonly out = new Map<number, Promise<Step>>();
  /** The shards whose loop ended. */
  private readonly ended = new Set<number>();
  private finished = false;
  private step: Promise<IteratorResult<GroupMessage>> | undefined;
  /** The longest a record waits in the merge for its turn: each shard's loop holds a record at
   *  most this before it yields it (holdMsOf), so a record passed on is within two thirds of its
   *  claim; one that waited longer (many shards, a slow caller) goes back instead. */
  private readonly holdMs: number;
  /** The shards whose `next()` answered with a record the merge holds for a later turn. */
  private readonly waiting = new Map<number, Extract<Step, { r: unknown }>>();
  /** Hands back a held record once it waited the hold bound while the caller works (a long
   *  job): no step runs then to look at its age. */
  private holdTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly owner: StreamGroup,
    private readonly opts: PollOptions,
  ) {
    this.holdMs = holdMsOf(opts);
    const signal = opts.signal;
    if (signal?.aborted) this.stop.abort(signal.reason);
    else signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = (): void => this.stop.abort(this.opts.signal?.reason);

  next(): Promise<IteratorResult<GroupMessage>> {
    // One step at a time: calls made while one runs wait behind it.
    if (this.step !== undefined) {
      const again = () => this.next();
      return this.step.then(again, again);
    }
    const s = this.advance();
    this.step = s;
    const clear = () => {
      if (this.step === s) this.step = undefined;
    };
    s.then(clear, clear);
    return s;
  }

  async return(): Promise<IteratorResult<GroupMessage>> {
    await this.finish();
    return { value: undefined, done: true };
  }

  private async advance(): Promise<IteratorResult<GroupMessage>> {
    if (this.finished || this.stop.signal.aborted) {
      await this.finish();
      return { value: undefined, done: true };
    }
    if (this.loops === null) {
      let groups: Group[];
      try {
        groups = await this.owner.shards(this.stop.signal);
      } catch (err) {
        await this.finish();
        if (this.stop.signal.aborted) return { value: undefined, done: true };
        throw err;
      }
      // Ended while the lookup ran: no shard's loop is started (none would be ended).
      if (this.finished) return { value: undefined, done: true };
      const inner = { ...this.opts, signal: this.stop.signal };
      this.loops = groups.map((group) => ({
        group,
        it: group.consume(inner)[Symbol.asyncIterator](),
      }));
    }
    const loops = this.loops;
    for (;;) {
      for (const [shard, { it }] of loops.entries()) {
        if (!this.out.has(shard) && !this.ended.has(shard))
          this.out.set(shard, this.ask(shard, it));
      }
      if (this.out.size === 0) {
        await this.finish();
        return { value: undefined, done: true };
      }
      const first = await Promise.race(this.out.values());
      // Ended meanwhile: `finish` took every step out then, this one included, and hands back
      // what it brings.
      if (this.finished) return { value: undefined, done: true };
      this.out.delete(first.shard);
      this.waiting.delete(first.shard);
      if ('err' in first) {
        await this.finish();
        throw first.err;
      }
      if (first.r.done) {
        // That shard's loop ended (the caller's signal, or the client closed): so do the rest.
        this.ended.add(first.shard);
        if (this.stop.signal.aborted || this.finished) continue;
        await this.finish();
        return { value: undefined, done: true };
      }
      if (performance.now() - first.at > this.holdMs) {
        // Its claim may lapse before the caller is done with the records ahead of it.
        this.handBack(first.shard, first.r.value);
        continue;
      }
      this.armHold(); // what it holds for later is watched while the caller works
      return first.r;
    }
  }

  private ask(shard: number, it: AsyncIterator<GroupMessage>): Promise<Step> {
    return it.next().then(
      (r) => {
        const step = { shard, r, at: performance.now() };
        if (!r.done && !this.finished) {
          this.waiting.set(shard, step);
          if (this.step === undefined && this.holdTimer === undefined) this.armHold();
        }
        return step;
      },
      (err: unknown) => ({ shard, err }),
    );
  }

  private armHold(): void {
    let due = Number.POSITIVE_INFINITY;
    for (const w of this.waiting.values()) due = Math.min(due, w.at + this.holdMs);
    this.holdTimer = rearmHold(this.holdTimer, due, this.heldTooLong);
  }

  /** Records held for a later turn that waited the hold bound go back (their shard's loop is
   *  asked again by the next step); a step running takes what it holds itself. */
  private readonly heldTooLong = (): void => {
    this.holdTimer = undefined;
    if (this.finished || this.step !== undefined) return;
    const now = performance.now();
    for (const [shard, w] of [...this.waiting]) {
      if (now - w.at < this.holdMs || w.r.done) continue;
      this.waiting.delete(shard);
      this.out.delete(shard);
      this.handBack(shard, w.r.value);
    }
    this.armHold();
  };

  private handBack(shard: number, msg: GroupMessage): void {
    const group = this.loops?.[shard]?.group;
    // Nobody holds this record: its hand-back's outcome is only observed here.
    if (group !== undefined) for (const p of group.handBack([msg])) p.catch(() => undefined);
  }

  /** Ends every shard's loop; a record one yielded that was not passed on goes back. */
  private async finish(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.holdTimer);
    this.waiting.clear();
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    const loops = this.loops ?? [];
    // Each loop hands back what it holds; a next() still out resolves done (once the polls it
    // waits on answer: not waited for here), or with a record it had yielded just before, which
    // goes back.
    await Promise.all(loops.map(({ it }) => it.return?.()));
    for (const step of this.out.values()) {
      void step.then((s) => {
        if ('r' in s && !s.r.done) this.handBack(s.shard, s.r.value);
      });
    }
    this.out.clear();
  }
}
