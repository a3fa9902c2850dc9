/**
 * Full-jitter exponential backoff: attempt n waits a uniform time in
 * [0, min(maxMs, baseMs * 2^n)]. Pure given its random source, so tests pin it.
 */
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  random?: () => number;
}

export function backoffDelayMs(attempt: number, opts: BackoffOptions): number {
  const ceiling = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.min(attempt, 30));
  const r = (opts.random ?? Math.random)();
  return Math.floor(r * ceiling);
}

/** Resolves after `ms`, or rejects with `signal.reason` once it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
