import { DeadlineExceededError } from './errors.js';
import { WAIT_FOR_DEADLINE_MS_DEFAULT, WAIT_FOR_POLL_INTERVAL_MS } from './limits.js';

/**
 * Waits until `condition` returns a truthy value (or resolves to one), polling, and fails with
 * `DeadlineExceededError` naming `what` once the deadline passes. Tests synchronise with this,
 * never with a bare sleep.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  what: string,
  deadlineMs = WAIT_FOR_DEADLINE_MS_DEFAULT,
): Promise<NonNullable<T>> {
  const until = Date.now() + deadlineMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > until) {
      throw new DeadlineExceededError(`timed out after ${deadlineMs} ms waiting for ${what}`, {
        cause: lastError,
      });
    }
    await new Promise((r) => setTimeout(r, WAIT_FOR_POLL_INTERVAL_MS));
  }
}

/** Resolves with the promise's value, or fails naming `what` when it takes longer than `ms`. */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new DeadlineExceededError(`timed out after ${ms} ms waiting for ${what}`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
