/** What a client session needs from the broker: config, handlers, metrics, logger, drain state. */
import type { Logger } from 'pino';
import type { Authenticator } from './authenticator.js';
import type { BrokerConfig } from '../config/types.js';
import type { BrokerMetrics } from '../metrics.js';
import type { Message } from '@felix/wire';
import type { HandlerTable } from './handler.js';
import type { Refusal } from './refusal.js';

/** Control-plane mode: which shards this broker serves (cluster/shard-table.ts). */
export interface ShardOwnership {
  /** Null when this broker serves the shard; otherwise the refusal to answer with. A `write`
   *  is also refused while this broker's lease is lapsed. */
  refuse(
    kind: 'stream' | 'cache',
    tenant: string,
    namespace: string,
    name: string,
    shard: number,
    write?: boolean,
  ): Refusal | null;
  /** The same for a cache, counter, watch or group request (null when served or unknown). */
  refuseMessage(msg: Message): Refusal | null;
}

export interface SessionContext {
  config: BrokerConfig;
  metrics: BrokerMetrics;
  log: Logger;
  draining(): boolean;
  /** Every request type this broker serves, registered by streams, caches, counters, groups. */
  handlers: HandlerTable;
  /** Verifies tokens (or, in dev mode, accepts them as given). */
  authenticator: Authenticator;
  /** Control-plane mode only: refuses shards this broker does not hold. */
  ownership?: ShardOwnership;
}
