/**
 * A promise raced against a caller's signal. No I/O.
 */
import { AbortedError } from '../errors.js';

/** `p`, or an AbortedError once `signal` aborts; a write's abort leaves its outcome unknown, a
 *  read's (`sideEffects: false`) leaves nothing behind. */
export async function abortable<T>(
  p: Promise<T>,
  signal: AbortSignal | undefined,
  what: string,
  sideEffects = true,
): Promise<T> {
  if (!signal) return p;
  const aborted = () =>
    new AbortedError(what, {
      cause: signal.reason,
      ...(sideEffects ? { retry: 'unknown_outcome' as const } : {}),
    });
  if (signal.aborted) {
    // The call is abandoned: its own failure (often the same abort) must not surface as an
    // unhandled rejection, which ends a Node process by default.
    p.catch(() => undefined);
    throw aborted();
  }
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        onAbort = () => reject(aborted());
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
