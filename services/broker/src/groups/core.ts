/** What every group operation shares: config, metrics, the registry and the waiting polls. */
import type { ProjectionMetrics } from '../caches/projection-metrics.js';
import type { BrokerConfig } from '../config/types.js';
import type { GroupRegistry } from './registry.js';
import type { PollWaiters } from './waiters.js';

export interface GroupCore {
  readonly groups: BrokerConfig['groups'];
  readonly metrics: ProjectionMetrics;
  readonly registry: GroupRegistry;
  readonly waiters: PollWaiters;
}
