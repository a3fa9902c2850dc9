/**
 * The base of every operating error Felix raises. Programmer errors are `AssertionError`
 * (see assert.ts) and are never caught below the process top level.
 */

/** How a caller should treat a failure before trying again. */
export type RetryClass =
  | 'never'
  | 'retry'
  | 'retry_after_backoff'
  | 'reconnect'
  | 'unknown_outcome';

export interface FelixErrorOptions extends ErrorOptions {
  retry?: RetryClass;
}

export abstract class FelixError extends Error {
  /** Stable identifier, e.g. `FELIX_WIRE_BAD_MAGIC`; never changes once published. */
  abstract readonly code: string;
  readonly retry: RetryClass;

  constructor(message: string, options?: FelixErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.retry = options?.retry ?? 'never';
  }
}

/** Raised by `assert()`: a broken invariant, i.e. a bug in Felix itself. */
export class AssertionError extends Error {
  readonly code = 'FELIX_ASSERTION';
  constructor(message: string) {
    super(message);
    this.name = 'AssertionError';
  }
}
