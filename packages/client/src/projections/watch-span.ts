/**
 * A prefix watch that names no shard of a multi-shard cache, on a client routing in a cluster:
 * one watch per shard, each on its own shard's owner and resuming on its own after a failover or
 * an outage as any watch does (cache.ts), merged into one iterator. Shards have different leaders,
 * so no one broker could serve the span; the client already knows each shard's owner.
 *
 * Pulled, not pushed: a shard's watch is asked for its next event only once its last was
 * yielded, so the span holds at most one event per shard beyond each watch's own bounded
 * buffers, and a slow caller slows every shard's watch (which lags, and resumes, as alone).
 */
import type { CacheWatchEvent } from './watch-events.js';

/** One shard's watch, ending when `signal` aborts. */
export type ShardWatch = (shard: number, signal: AbortSignal) => AsyncGenerator<CacheWatchEvent>;

type Step = { shard: number } & (
  | { ok: true; r: IteratorResult<CacheWatchEvent> }
  | { ok: false; err: unknown }
);

/** The shards' watches as one: each event names its shard; the first failure that ends one
 *  shard's watch ends them all and is thrown; so does the caller's `break` or abort. */
export async function* watchAcross(
  width: number,
  retained: boolean,
  signal: AbortSignal | undefined,
  watchShard: ShardWatch,
): AsyncGenerator<CacheWatchEvent> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) stop.abort();
  const watches = Array.from({ length: width }, (_, s) => watchShard(s, stop.signal));
  // Each shard's step, once settled, is queued and the merge woken: no Promise.race, which adds
  // a reaction to every pending step on each call, so a quiet shard's step would hold one per
  // event the busy ones yielded for as long as it stayed quiet.
  const pending = new Map<number, Promise<void>>();
  const ready: Step[] = [];
  let wake: (() => void) | null = null;
  const pull = (shard: number) =>
    pending.set(
      shard,
      watches[shard]!.next()
        .then(
          (r): Step => ({ shard, ok: true, r }),
          (err: unknown): Step => ({ shard, ok: false, err }),
        )
        .then((step) => {
          ready.push(step);
          wake?.();
          wake = null;
        }),
    );
  const phase = new SpanPhase(width, retained);
  try {
    for (let s = 0; s < width; s++) pull(s);
    while (pending.size > 0) {
      if (ready.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      const step = ready.shift()!;
      pending.delete(step.shard);
      if (!step.ok) throw step.err;
      // A shard's watch ends only on an abort or the client's close: the others end with it.
      if (step.r.done) continue;
      const out = phase.pass(step.shard, step.r.value);
      if (out !== null) yield out;
      pull(step.shard);
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    // The abort resets every shard's streams, so each pending step settles and each watch ends.
    stop.abort();
    await Promise.allSettled(pending.values());
    await Promise.allSettled(watches.map((w) => w.return(undefined)));
  }
}

/**
 * The span's `state_complete`: a retained span's first comes once every shard's own has (each
 * shard's values are in), carrying their sum; until then each shard's own is held back. A shard's
 * `resnapshot` before it sends its values again. After the first, each passes as its shard's.
 */
class SpanPhase {
  /** Shards whose current values are still coming before the span's first `state_complete`. */
  private readonly open = new Set<number>();
  private readonly counts: number[];
  private readonly offsets: number[];
  private done: boolean;

  constructor(width: number, retained: boolean) {
    this.counts = new Array<number>(width).fill(0);
    this.offsets = new Array<number>(width).fill(-1);
    if (retained) for (let s = 0; s < width; s++) this.open.add(s);
    this.done = !retained;
  }

  /** The event to yield for shard `shard`'s `ev` (null: held back). */
  pass(shard: number, ev: CacheWatchEvent): CacheWatchEvent | null {
    if (this.done) return { ...ev, shard };
    if (ev.type === 'resnapshot') this.open.add(shard);
    if (ev.type !== 'state_complete') return { ...ev, shard };
    this.open.delete(shard);
    this.counts[shard] = ev.retainedCount;
    this.offsets[shard] = ev.resumeOffset;
    if (this.open.size > 0) return null;
    this.done = true;
    const retainedCount = this.counts.reduce((a, b) => a + b, 0);
    return { type: 'state_complete', retainedCount, resumeOffset: -1, resumeOffsets: this.offsets };
  }
}
