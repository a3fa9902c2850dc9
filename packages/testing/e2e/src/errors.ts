import { FelixError } from '@felix/common';

/** A broker process exited or logged no `listening` line with its certificate fingerprint. */
export class BrokerStartError extends FelixError {
  readonly code = 'FELIX_TEST_E2E_BROKER_START';
}

/** A raw session's `auth` was answered with something other than `auth_ok`. */
export class RawAuthRefusedError extends FelixError {
  readonly code = 'FELIX_TEST_E2E_RAW_AUTH_REFUSED';
}
