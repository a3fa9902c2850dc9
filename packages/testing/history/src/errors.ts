/** Errors raised by @felix/testing-history. Every class has a stable code. */
import { FelixError } from '@felix/common';

/** Base of every history failure: a caller may catch this one class. */
export abstract class HistoryError extends FelixError {}

/** One line of the history is longer than HISTORY_LINE_BYTES_MAX. */
export class HistoryLineTooLongError extends HistoryError {
  readonly code = 'FELIX_HISTORY_LINE_TOO_LONG';
  constructor(
    readonly lineNumber: number,
    readonly bytes: number,
    readonly bytesMax: number,
  ) {
    super(`history line ${lineNumber} has ${bytes} bytes, more than the ${bytesMax} allowed`);
  }
}

/** The whole history is larger than HISTORY_BYTES_MAX (or has more than HISTORY_LINES_MAX). */
export class HistoryTooLargeError extends HistoryError {
  readonly code = 'FELIX_HISTORY_TOO_LARGE';
  constructor(
    readonly size: number,
    readonly sizeMax: number,
    readonly unit: 'bytes' | 'lines',
  ) {
    super(`the history has ${size} ${unit}, more than the ${sizeMax} allowed`);
  }
}

/** A line is not JSON, or not an object of the shape history.ts describes. */
export class HistoryLineMalformedError extends HistoryError {
  readonly code = 'FELIX_HISTORY_LINE_MALFORMED';
  constructor(
    readonly lineNumber: number,
    readonly reason: string,
  ) {
    super(`history line ${lineNumber} is malformed: ${reason}`);
  }
}

/** The history file could not be read (missing, unreadable, a directory). */
export class HistoryReadError extends HistoryError {
  readonly code = 'FELIX_HISTORY_READ_FAILED';
  constructor(
    readonly path: string,
    options?: ErrorOptions,
  ) {
    super(`could not read the history file ${path}`, options);
  }
}
