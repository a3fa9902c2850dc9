/**
 * A ShardTable of node `n1` over real durable stores, with replication stubbed to succeed at
 * once (every fence a majority, nothing shipped): for tests of what the table opens and how,
 * fed by hand through its feed handlers.
 */
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { Catalog } from '../../src/catalog/catalog.js';
import { ShardTable } from '../../src/cluster/shard-table.js';
import type { BrokerConfig, StreamConfig } from '../../src/config/types.js';
import type { BrokerMetrics } from '../../src/metrics.js';
import { openDurableStore } from '../../src/streams/durable-store.js';
import type { StreamRuntime } from '../../src/streams/shard.js';

export function durableTableOfN1(cfg: BrokerConfig): {
  t: ShardTable;
  installed: StreamRuntime[];
  opened: StreamConfig[];
} {
  const installed: StreamRuntime[] = [];
  const opened: StreamConfig[] = [];
  const catalog = {
    installStream: (rt: StreamRuntime) => installed.push(rt),
    removeStream: () => undefined,
  } as unknown as Catalog;
  const metrics = { fsyncs: { inc: () => undefined } } as unknown as BrokerMetrics;
  const t = new ShardTable(
    cfg,
    catalog,
    'n1',
    (s, i) => {
      opened.push(s);
      return openDurableStore(cfg, s, i, metrics);
    },
    { onDrop: () => undefined, onApply: () => undefined },
    pino({ level: 'silent' }),
    new Registry(),
  );
  t.replication = {
    replicator: {
      stop: async () => undefined,
      ship: async () => undefined,
      reports: () => [],
      wake: () => undefined,
      fence: async () => ({ majority: true, answers: [] }),
      link: () => undefined,
      shippingGeneration: () => undefined,
      moving: new Map<string, boolean>(),
    },
    releaseFollower: () => Promise.resolve(),
    refreshFollowerRetention: async () => 0,
    logOptions: () => ({}),
    riding: {
      admit: () => undefined,
      open: async () => null,
      release: async () => undefined,
      holdToCommit: () => null,
      busy: () => false,
    },
  } as unknown as NonNullable<ShardTable['replication']>;
  t.nodeAddresses.set('n2', '127.0.0.1:7002');
  return { t, installed, opened };
}

/** Catalog feed item of stream t1/ns/s: one durable shard at replication factor 2. */
export function streamS(
  opts: { consistency?: string; retention?: Record<string, number> } = {},
): Record<string, unknown> {
  return {
    tenant_id: 't1',
    namespace: 'ns',
    stream: 's',
    shards: 1,
    durable: true,
    consistency: opts.consistency ?? 'Leader',
    replication_factor: 2,
    ...(opts.retention === undefined ? {} : { retention: opts.retention }),
  };
}

/** Assignment feed item of t1/ns/s shard 0 over n1 and n2, led by `leader`. */
export function assignmentOfS(leader: string, generation: number): Record<string, unknown> {
  return {
    tenant_id: 't1',
    namespace: 'ns',
    kind: 'stream',
    stream: 's',
    shard: 0,
    leader,
    replicas: ['n1', 'n2'],
    generation,
  };
}

/** A feed change putting `value`. */
export const putChange = (value: Record<string, unknown>) =>
  ({ op: 'put', key: {}, value }) as never;
