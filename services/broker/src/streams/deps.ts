/** What the stream request handlers need from the broker, handed in at registration. */
import type { Logger } from 'pino';
import type { BrokerConfig } from '../config/types.js';
import type { BrokerMetrics } from '../metrics.js';
import type { ForwardingSlot, ShardOwnership } from '../session/context.js';
import type { StreamRuntime } from './shard.js';

export interface StreamDeps {
  config: BrokerConfig;
  metrics: BrokerMetrics;
  log: Logger;
  draining(): boolean;
  /** The streams this broker serves (the catalog). */
  streams: { get(tenant: string, namespace: string, name: string): StreamRuntime | undefined };
  /** Control-plane mode only: refuses shards this broker does not hold. */
  ownership?: ShardOwnership;
  /** Where a publish to a shard another broker leads is forwarded (when the slot is set). */
  forwarding?: ForwardingSlot;
}
