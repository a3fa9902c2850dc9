/** What a client session needs from the broker: config, catalog, metrics, logger, drain state. */
import type { Logger } from 'pino';
import type { Catalog } from '../catalog/catalog.js';
import type { BrokerConfig } from '../config/types.js';
import type { Projections } from '../caches/projection-requests.js';
import type { BrokerMetrics } from '../metrics.js';

export interface SessionContext {
  config: BrokerConfig;
  catalog: Catalog;
  metrics: BrokerMetrics;
  log: Logger;
  draining(): boolean;
  /** Caches, counters, watches and consumer groups (absent in tests that serve streams only). */
  projections?: Projections;
}
