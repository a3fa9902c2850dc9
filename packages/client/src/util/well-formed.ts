/**
 * Strings the client turns into bytes. A JavaScript string may hold a lone UTF-16 surrogate
 * (`'\ud800'` without its pair); UTF-8 has no bytes for one, and TextEncoder writes U+FFFD's
 * instead, so `'k\ud800'`, `'k\udbff'` and `'k\ufffd'` would all reach the broker as one key (a
 * put to one overwrites the others). Every string a call names (a key, a prefix, a name) or sends
 * as data is checked here instead, before anything is sent, and refused with the typed error that
 * names the argument. `isWellFormed` answers at once for a string of one-byte characters (every
 * ASCII name) and scans a two-byte one once.
 */
import { InvalidArgumentError } from '../errors.js';

/** Throws InvalidArgumentError naming `what` when `text` is no string (a JavaScript caller's
 *  `undefined` or number, which would fail later as a TypeError or a wire error naming a field
 *  the caller never wrote) or holds a lone surrogate. */
export function checkWellFormed(text: string, what: string): void {
  if (typeof text !== 'string') throw notString(text, what);
  if (!text.isWellFormed()) throw illFormed(what);
}

/** The refusal of an argument that must be a string and is not. */
export function notString(value: unknown, what: string): InvalidArgumentError {
  const got = typeof value === 'object' && value !== null ? 'an object' : shown(value);
  return new InvalidArgumentError(`${what} must be a string, got ${got}`);
}

/** A value as an error message shows it: a string quoted, so `'5'` is not read as 5; a bigint
 *  with its `n`. */
export function shown(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : typeof v === 'bigint' ? `${v}n` : String(v);
}

/** The refusal of an argument holding a lone surrogate. */
export function illFormed(what: string): InvalidArgumentError {
  return new InvalidArgumentError(
    `${what} holds a lone UTF-16 surrogate (U+D800..U+DFFF without its pair), which has no ` +
      'UTF-8 bytes: it would reach the broker as U+FFFD, the same as other strings ' +
      '(String.prototype.toWellFormed() makes that replacement explicit, if it is what you mean)',
  );
}
