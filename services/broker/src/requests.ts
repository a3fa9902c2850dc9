/**
 * The broker's request table, composed: streams, caches, counters and consumer groups each
 * register their handlers on one HandlerTable (session/handler.ts), which every client session
 * dispatches through. Also owns the services behind those handlers for the broker's lifecycle:
 * waking a shard's group polls on publish, the cache expiry timer, drain and close.
 */
import type { Io } from '@felix/storage';
import type { Logger } from 'pino';
import { ProjectionAnswers } from './caches/answers.js';
import { CacheService } from './caches/cache-service.js';
import { CacheExpiry, type LeadsCacheShard } from './caches/expiry.js';
import { registerCacheHandlers } from './caches/handlers.js';
import { ProjectionMetrics } from './caches/projection-metrics.js';
import type { Catalog } from './catalog/catalog.js';
import type { BrokerConfig } from './config/types.js';
import { registerCounterHandlers } from './counters/handlers.js';
import { GroupService } from './groups/group-service.js';
import { registerGroupHandlers } from './groups/handlers.js';
import type { RecordSource } from './groups/record-source.js';
import type { BrokerMetrics } from './metrics.js';
import type { Forwarding, ForwardingSlot, ShardOwnership } from './session/context.js';
import { HandlerTable } from './session/handler.js';
import { type StreamDeps, registerStreamHandlers } from './streams/handlers.js';

export interface RequestDeps {
  config: BrokerConfig;
  catalog: Catalog;
  metrics: BrokerMetrics;
  log: Logger;
  draining(): boolean;
  /** The storage Io every log goes through; absent: the real file system. */
  storageIo?: Io | undefined;
}

export class BrokerRequests {
  readonly table = new HandlerTable();
  readonly caches: CacheService;
  readonly groups: GroupService | null;
  private readonly streamDeps: StreamDeps;
  private readonly expiry: CacheExpiry;
  /** The forwarder of writes to shards other brokers lead (cluster mode with an internal
   *  listener); empty until the broker joins its cluster. */
  private readonly forwardingSlot: ForwardingSlot = { current: null };

  constructor(deps: RequestDeps) {
    const { config: cfg, catalog } = deps;
    const streams = (t: string, ns: string, name: string) => catalog.get(t, ns, name);
    this.streamDeps = { ...deps, streams: { get: streams }, forwarding: this.forwardingSlot };
    registerStreamHandlers(this.table, this.streamDeps);
    const metrics = new ProjectionMetrics(deps.metrics.registry);
    const answers = new ProjectionAnswers(metrics, deps.metrics);
    this.caches = new CacheService(cfg, deps.storageIo, (outcome) =>
      deps.metrics.quorumWaits.inc({ outcome }),
    );
    registerCacheHandlers(this.table, {
      config: cfg,
      brokerMetrics: deps.metrics,
      caches: this.caches,
      answers,
      forwarding: this.forwardingSlot,
    });
    registerCounterHandlers(this.table, this.caches, answers, this.forwardingSlot);
    this.groups =
      cfg.durable.data_dir === null
        ? null
        : new GroupService(cfg, streams, metrics, deps.storageIo);
    registerGroupHandlers(this.table, this.groups, answers);
    this.expiry = new CacheExpiry(this.caches, this.leadsCacheShard, deps.log);
    this.expiry.start(cfg.broker.cache_expiry_interval_ms);
  }

  /** Control-plane mode: the shards this broker holds (set once the cluster node exists). */
  set ownership(ownership: ShardOwnership) {
    this.streamDeps.ownership = ownership;
    if (this.groups !== null) this.groups.ownership = ownership;
  }

  /** Cluster mode with an internal listener: writes to other brokers' shards go there. */
  set forwarding(forwarding: Forwarding) {
    this.forwardingSlot.current = forwarding;
  }

  private readonly leadsCacheShard: LeadsCacheShard = (cache, shard) =>
    // Expiry writes: only where the assignment names this broker, as a put does.
    (this.streamDeps.ownership?.refuse(
      'cache',
      cache.tenant,
      cache.namespace,
      cache.name,
      shard,
      false,
      true,
    ) ?? null) === null;

  /** Records became visible on a shard: wake the group polls waiting on it. */
  onApply(source: RecordSource): void {
    this.groups?.wake(source);
  }

  /** The broker is draining: waiting polls answer now. */
  drain(): void {
    this.groups?.drain();
  }

  async close(): Promise<void> {
    await this.expiry.stop();
    await this.groups?.close();
    await this.caches.close();
  }
}
