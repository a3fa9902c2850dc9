export {
  REPO_ROOT,
  brokerArgs,
  brokerMetric,
  durableBrokerForSuite,
  startBroker,
} from './broker-process.js';
export type { BrokerProcess, BrokerSpec } from './broker-process.js';
export { BrokerStartError, RawAuthRefusedError } from './errors.js';
export { BROKER_START_DEADLINE_MS } from './limits.js';
export { rawAuthed } from './raw-session.js';
export type { RawCredentials, RawSession } from './raw-session.js';
export { TestTenants, allDataPermissions } from './tokens.js';
export type { MintOptions } from './tokens.js';
