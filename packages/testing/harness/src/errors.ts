import { FelixError } from '@felix/common';

/** A condition a test waited on did not hold before its deadline. */
export class DeadlineExceededError extends FelixError {
  readonly code = 'FELIX_TEST_DEADLINE_EXCEEDED';
}

/** A child process exited before printing what a test waited for. */
export class ChildExitedError extends FelixError {
  readonly code = 'FELIX_TEST_CHILD_EXITED';
}

/** The openssl command line could not make a test CA or certificate. */
export class TestPkiError extends FelixError {
  readonly code = 'FELIX_TEST_PKI';
}

/** No port free for both TCP and UDP was found within the attempts' bound. */
export class NoFreePortError extends FelixError {
  readonly code = 'FELIX_TEST_NO_FREE_PORT';
}
