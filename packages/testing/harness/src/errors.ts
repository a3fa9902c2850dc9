import { FelixError } from '@felix/common';

/** A condition a test waited on did not hold before its deadline. */
export class DeadlineExceededError extends FelixError {
  readonly code = 'FELIX_TEST_DEADLINE_EXCEEDED';
}
