/**
 * Latency samples and rates: percentiles of sorted samples, the median of rounds, per-round
 * ratios of two systems, and the two loops every bench times (one at a time, N in flight).
 */

/**
 * The `p`-th percentile of ascending samples: the sample at rank floor(p% of n), the last one
 * for p = 100. NaN when there are none, so an empty run shows as NaN rather than crashing.
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The median of `values` (any order): the middle one, or the mean of the middle two. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Round by round ratios `a[i] / b[i]` of two systems measured back to back, and their median:
 * a round's ratio cancels most of the drift a shared machine shows between rounds, so the
 * median of ratios is the verdict, not a ratio of medians taken at different moments.
 */
export function pairedRatios(
  a: readonly number[],
  b: readonly number[],
): { ratios: number[]; median: number } {
  const n = Math.min(a.length, b.length);
  const ratios = Array.from({ length: n }, (_, i) => a[i]! / b[i]!);
  return { ratios, median: median(ratios) };
}

/** Runs `op` `n` times one at a time; answers its latencies in µs, ascending. */
export async function latencies(n: number, op: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await op(i);
    out.push((performance.now() - t) * 1000);
  }
  return out.sort((a, b) => a - b);
}

/**
 * Runs `workers` loops of `op` for `seconds`, each awaiting its previous op; answers completed
 * ops per second. `op` gets its worker's number and that worker's count so far.
 */
export async function opsPerSecond(
  workers: number,
  seconds: number,
  op: (worker: number, i: number) => Promise<unknown>,
): Promise<number> {
  let done = 0;
  const start = performance.now();
  const until = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; performance.now() < until; i++) {
        await op(w, i);
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

/**
 * The `p`th percentile of each successive window of `size` samples, in the order taken (a tail
 * shorter than `size` is left out): shows whether a loop was still warming while it was timed.
 */
export function windowPercentiles(samples: readonly number[], size: number, p: number): number[] {
  const out: number[] = [];
  for (let i = 0; size > 0 && i + size <= samples.length; i += size)
    out.push(
      percentile(
        samples.slice(i, i + size).sort((a, b) => a - b),
        p,
      ),
    );
  return out;
}
