export { Broker } from './broker.js';
export type { BrokerAddresses } from './broker.js';
export { loadConfig } from './config/load.js';
export { CONFIG_FILE_ENV, CONFIG_VARS } from './config/registry.js';
export type { ConfigVar } from './config/registry.js';
export type { BrokerConfig, CacheConfig, StreamConfig } from './config/types.js';
export {
  BrokerError,
  ConfigFileError,
  ConfigInvalidCombinationError,
  ConfigInvalidValueError,
  ConfigUnknownKeyError,
  ControlPlaneAnswerError,
  ControlPlaneRefusedError,
  ControlPlaneUnavailableError,
  DrainingError,
  ListenError,
  ShardFailedError,
  UnknownFlagError,
} from './errors.js';
export { createLogger } from './log.js';
export { Ring } from './streams/ring.js';
export { EventBatch } from './streams/event-batch.js';
export { SubscriberQueue } from './streams/subscriber.js';
export { Shard } from './streams/shard.js';
export type { ShardStore, StartSpec } from './streams/shard.js';
