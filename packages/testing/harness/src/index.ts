export { spawnNode } from './child.js';
export type { Child } from './child.js';
export {
  ChildExitedError,
  DeadlineExceededError,
  NoFreePortError,
  TestPkiError,
} from './errors.js';
export { tempDir } from './fs.js';
export { type CleanupScope, cleanupScope } from './scope.js';
export {
  CHILD_OUTPUT_BYTES_MAX,
  CHILD_STOP_GRACE_MS,
  OPENSSL_COMMAND_DEADLINE_MS,
  TEST_CERT_DAYS,
  WAIT_FOR_DEADLINE_MS_DEFAULT,
  WAIT_FOR_POLL_INTERVAL_MS,
} from './limits.js';
export { ephemeralPortRange, freePort, releasedTcpPort } from './net.js';
export { TEST_CERT_SANS_DEFAULT, issueTestCert, makeTestCa } from './pki.js';
export type { TestCa } from './pki.js';
export { waitFor, withDeadline } from './wait.js';
export { take } from './iterators.js';
