/**
 * A durable shard's store: one @felix/storage SegmentLog per shard, opened with the stream's
 * fsync mode and retention, under `<data_dir>/streams/`. Also feeds the fsync metric.
 */
import { join } from 'node:path';
import { type Io, type LogOptions, SegmentLog } from '@felix/storage';
import type { BrokerConfig, StreamConfig } from '../config/types.js';
import type { BrokerMetrics } from '../metrics.js';
import type { Logger } from 'pino';
import type { Shard, ShardStore, StoreRead } from './shard.js';

/** A stream's retention as its log's options say it (leader and follower copies alike). */
export function retentionOf(cfg: BrokerConfig, stream: StreamConfig): LogOptions['retention'] {
  const r = stream.retention;
  if (r.max_bytes === null && r.max_age_seconds === null) return undefined;
  return {
    ...(r.max_bytes !== null ? { maxBytes: r.max_bytes } : {}),
    ...(r.max_age_seconds !== null ? { maxAgeMs: r.max_age_seconds * 1000 } : {}),
    checkIntervalMs: cfg.durable.retention_check_interval_ms,
  };
}

export async function openDurableStore(
  cfg: BrokerConfig,
  stream: StreamConfig,
  shard: number,
  metrics: BrokerMetrics,
  io?: Io,
): Promise<ShardStore> {
  const root = join(cfg.durable.data_dir!, 'streams');
  const retention = retentionOf(cfg, stream);
  const log = await SegmentLog.open({
    root,
    shard: { tenant: stream.tenant, namespace: stream.namespace, stream: stream.name, shard },
    fsync: stream.fsync,
    flushIntervalMs: stream.fsync_interval_ms,
    segmentBytes: cfg.durable.segment_bytes,
    ...(retention ? { retention } : {}),
    ...(io ? { io } : {}),
  });
  const unsubscribe = log.onDurable(() => metrics.fsyncs.inc());
  return {
    log,
    get baseOffset() {
      return log.baseOffset;
    },
    get tailOffset() {
      return log.tailOffset;
    },
    get newestTimestampMicros() {
      return log.newestTimestampMicros;
    },
    offsetForTime: (atMicros) => log.offsetForTime(atMicros),
    append: (payloads, timestampMicros) => log.append(payloads, { timestampMicros }),
    async read(from, budget): Promise<StoreRead> {
      const r = await log.read(from, budget);
      if (r.kind === 'trimmed') return { kind: 'trimmed', oldest: r.oldest };
      return { kind: 'records', records: r.records, next: r.next };
    },
    async close() {
      unsubscribe();
      await log.close();
    },
  };
}

/**
 * Applies `retention` to an open durable shard's log (the catalog changed it: a PATCH reaches an
 * open shard without a reopen). The bounds take effect at once; the deletions they call for run
 * behind, so a pass over the shards (a failover waits on it) never waits on them. A bound the log
 * refuses is logged; the old one stays.
 */
export function applyRetention(
  shard: Shard | undefined,
  retention: LogOptions['retention'],
  log: Logger,
): void {
  const segments = shard?.store?.log;
  if (segments === undefined) return;
  const name = shard!.name;
  segments.setRetention(retention).then(
    (deleted) => {
      if (deleted > 0) log.info({ shard: name, deleted }, 'retention changed: segments deleted');
    },
    (err: unknown) => log.warn({ err, shard: name }, 'retention not changed'),
  );
}
