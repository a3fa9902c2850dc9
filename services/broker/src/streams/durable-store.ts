/**
 * A durable shard's store: one @felix/storage SegmentLog per shard, opened with the stream's
 * fsync mode and retention, under `<data_dir>/streams/`. Also feeds the fsync metric.
 */
import { join } from 'node:path';
import { type Io, SegmentLog } from '@felix/storage';
import type { BrokerConfig, StreamConfig } from '../config/types.js';
import type { BrokerMetrics } from '../metrics.js';
import type { ShardStore, StoreRead } from './shard.js';

export async function openDurableStore(
  cfg: BrokerConfig,
  stream: StreamConfig,
  shard: number,
  metrics: BrokerMetrics,
  io?: Io,
): Promise<ShardStore> {
  const root = join(cfg.durable.data_dir!, 'streams');
  const retention =
    stream.retention.max_bytes !== null || stream.retention.max_age_seconds !== null
      ? {
          ...(stream.retention.max_bytes !== null ? { maxBytes: stream.retention.max_bytes } : {}),
          ...(stream.retention.max_age_seconds !== null
            ? { maxAgeMs: stream.retention.max_age_seconds * 1000 }
            : {}),
          checkIntervalMs: cfg.durable.retention_check_interval_ms,
        }
      : undefined;
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
