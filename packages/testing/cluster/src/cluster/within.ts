/** Bounds a promise in time, failing with the caller's typed error. */
export async function within<T>(
  promise: Promise<T>,
  ms: number,
  onTimeout: () => Error,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `cond` until it answers true (a throw counts as false) or `ms` pass; answers whether. */
export async function pollUntil(
  cond: () => boolean | Promise<boolean>,
  ms: number,
  everyMs: number,
): Promise<boolean> {
  const until = performance.now() + ms;
  for (;;) {
    try {
      if (await cond()) return true;
    } catch {
      // not yet: a condition that throws (a refused connection) is one that does not hold
    }
    if (performance.now() > until) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
