/**
 * What a subscription hands out: the events of a decoded batch (EventRun, built one by one as
 * the caller reaches them) and the iterator that hands them out (EventIterator). Kept apart from
 * the shard readers and their merging (subscription.ts), which feed it.
 */

export interface StreamEvent {
  stream: string;
  shard: number;
  /** The record's offset in its shard (per-shard order). */
  offset: number;
  data: Uint8Array;
  /** Offsets lost immediately before this event (0 when none): see `status()` `gap`, emitted
   *  once for the same loss, as soon as the broker reports it (possibly before this event). */
  lostBefore: number;
  /** Offsets just before this event that hold no record and were not lost (a new leader's
   *  generation-start record): present only when above 0. Records retention removed before
   *  this subscription read them are lost to it: `lostBefore`, with a `gap` status. */
  skippedBefore?: number;
  /** When the record was appended (µs since the epoch, the broker's clock), on a subscription
   *  made with `timestamps: true` to a broker that sends them; absent otherwise. */
  timestampMicros?: number;
}

/**
 * The events of one decoded batch, built one by one as the caller reaches them (a batch of
 * 1,000 records is not turned into 1,000 objects up front): `payloads[i]` is at `base + i`.
 */
export class EventRun {
  constructor(
    readonly stream: string,
    readonly shard: number,
    readonly base: number,
    readonly payloads: Uint8Array[],
    /** Index of the first payload to deliver (earlier ones were delivered before). */
    readonly start: number,
    /** Offsets lost just before the first delivered event. */
    readonly lost: number,
    /** Append time of each payload, when the subscription carries them. */
    readonly timesMicros?: number[],
    /** Offsets holding no record just before the first delivered event. */
    readonly skipped = 0,
    /** How many times its reader had been moved back (`diverged`) when it made this run. */
    readonly rewinds = 0,
  ) {}

  private payloadBytes = -1;

  /** Payload bytes of the run (what a merged subscription's buffer counts). */
  get bytes(): number {
    if (this.payloadBytes < 0) {
      let n = 0;
      for (const p of this.payloads) n += p.byteLength;
      this.payloadBytes = n;
    }
    return this.payloadBytes;
  }

  event(i: number): StreamEvent {
    const ev: StreamEvent = {
      stream: this.stream,
      shard: this.shard,
      offset: this.base + i,
      data: this.payloads[i]!,
      lostBefore: i === this.start ? this.lost : 0,
    };
    if (i === this.start && this.skipped > 0) ev.skippedBefore = this.skipped;
    if (this.timesMicros !== undefined) ev.timestampMicros = this.timesMicros[i]!;
    return ev;
  }
}

const DONE: IteratorResult<StreamEvent> = { value: undefined, done: true };

/** How far a shard's events were handed out: the next offset, and the `rewinds` of the run the
 *  last one came from. */
export interface Handed {
  next: number;
  rewinds: number;
}

/**
 * Hands out the events of each decoded batch one by one: an event of a batch already decoded
 * costs its own object and one resolved promise, not an async-generator step, so reading is
 * paid per batch, not per event.
 */
export class EventIterator implements AsyncIterator<StreamEvent> {
  private run: EventRun | null = null;
  private index = 0;
  private source: AsyncGenerator<EventRun> | null = null;
  private finished = false;
  private pulling: Promise<IteratorResult<StreamEvent>> | null = null;
  /** The signal's state, kept as a field: `signal.aborted` is a getter paid on every event. */
  private aborted: boolean;
  /** Per shard, one past the last event handed out of the runs finished so far (the run in
   *  hand is read in `positions`), and its run's `rewinds`: kept per run, not per event. */
  private readonly passed = new Map<number, Handed>();

  constructor(
    private readonly open: () => AsyncGenerator<EventRun>,
    signal: AbortSignal,
    /** Stops the readers: a `return()` must not wait for a record to wake a pending `next()`. */
    private readonly stop: () => void,
  ) {
    this.aborted = signal.aborted;
    if (!this.aborted)
      signal.addEventListener(
        'abort',
        () => {
          this.aborted = true;
        },
        { once: true },
      );
  }

  /** Notes where the run in hand ends for its shard (every event of it before `index` went out). */
  private leaveRun(): void {
    const run = this.run;
    if (run !== null && this.index > run.start)
      this.passed.set(run.shard, { next: run.base + this.index, rewinds: run.rewinds });
  }

  /** Per shard that handed out an event: the offset after the last one (its next to read). */
  handed(): Map<number, Handed> {
    const out = new Map(this.passed);
    const run = this.run;
    if (run !== null && this.index > run.start)
      out.set(run.shard, { next: run.base + this.index, rewinds: run.rewinds });
    return out;
  }

  next(): Promise<IteratorResult<StreamEvent>> {
    if (this.pulling) return this.pulling.then(() => this.next());
    if (this.aborted || this.finished) return this.end();
    const run = this.run;
    if (run !== null && this.index < run.payloads.length)
      return Promise.resolve({ value: run.event(this.index++), done: false });
    const pulling = this.pull();
    this.pulling = pulling;
    const clear = () => {
      if (this.pulling === pulling) this.pulling = null;
    };
    pulling.then(clear, clear);
    return pulling;
  }

  private async pull(): Promise<IteratorResult<StreamEvent>> {
    this.source ??= this.open();
    for (;;) {
      let r: IteratorResult<EventRun>;
      try {
        r = await this.source.next();
      } catch (err) {
        this.finished = true;
        throw err;
      }
      if (r.done || this.aborted) return this.end();
      const run = r.value;
      if (run.start >= run.payloads.length) continue;
      this.leaveRun();
      this.run = run;
      this.index = run.start + 1;
      return { value: run.event(run.start), done: false };
    }
  }

  /**
   * Ends the iteration and lets the readers go (a `break` out of `for await` lands here). The
   * readers are stopped first: with a `next()` pending the source generator is suspended in a
   * wait, and its `return()` would queue behind the next record (on a quiet stream, for ever).
   */
  async return(): Promise<IteratorResult<StreamEvent>> {
    this.stop();
    return this.end();
  }

  private async end(): Promise<IteratorResult<StreamEvent>> {
    this.finished = true;
    // What the run in hand handed out still counts (positions saved after a `break`).
    this.leaveRun();
    this.run = null;
    this.index = 0;
    const source = this.source;
    this.source = null;
    await source?.return(undefined);
    return DONE;
  }
}
