/** What a client session needs from the broker: config, catalog, metrics, logger, drain state. */
import type { Logger } from 'pino';
import type { Catalog } from '../catalog/catalog.js';
import type { BrokerConfig } from '../config/types.js';
import type { Projections } from '../caches/projection-requests.js';
import type { BrokerMetrics } from '../metrics.js';
import type { Message } from '@felix/wire';
import type { Refusal } from './refusal.js';

/** Control-plane mode: which shards this broker serves (cluster/shard-table.ts). */
export interface ShardOwnership {
  /** Null when this broker serves the shard; otherwise the refusal to answer with. */
  refuse(
    kind: 'stream' | 'cache',
    tenant: string,
    namespace: string,
    name: string,
    shard: number,
  ): Refusal | null;
  /** The same for a cache, counter, watch or group request (null when served or unknown). */
  refuseMessage(msg: Message): Refusal | null;
}

export interface SessionContext {
  config: BrokerConfig;
  catalog: Catalog;
  metrics: BrokerMetrics;
  log: Logger;
  draining(): boolean;
  /** Caches, counters, watches and consumer groups (absent in tests that serve streams only). */
  projections?: Projections;
  /** Control-plane mode only: refuses shards this broker does not hold. */
  ownership?: ShardOwnership;
}
