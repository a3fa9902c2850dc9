import { AssertionError } from './errors.js';

/**
 * Checks a programmer invariant. Always on, including in production: a broken invariant
 * means state can no longer be trusted, so we stop rather than guess.
 */
export function assert(condition: unknown, message = 'assertion failed'): asserts condition {
  if (!condition) throw new AssertionError(message);
}
