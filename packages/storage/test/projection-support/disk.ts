// Disk fixtures for projection tests: a SegmentLog-backed cache or counter log under a temp
// root's projection directories, reopened across "restarts".
import { tempDir } from '@felix/testing-harness';
import { LogCache, type LogCacheOptions } from '../../src/cache/log-cache.js';
import { projectionRoot } from '../../src/cache/projection-store.js';
import { SegmentLogPort } from '../../src/compaction/segment-log-port.js';
import { CounterLog } from '../../src/counter/counter-log.js';
import type { FsyncMode } from '../../src/log/segment-log.js';

export const SHARD = { tenant: 'acme', namespace: 'default', stream: 'orders', shard: 0 };

export interface DiskOptions {
  fsync?: FsyncMode;
  segmentBytes?: number;
}

export function openPort(root: string, kind: 'caches' | 'counters', o: DiskOptions = {}) {
  return SegmentLogPort.open({
    root: projectionRoot(root, kind),
    shard: SHARD,
    fsync: o.fsync ?? 'none',
    segmentBytes: o.segmentBytes ?? 4096,
  });
}

export async function openDiskCache(
  root: string,
  o: DiskOptions & Omit<LogCacheOptions, 'log'> = {},
): Promise<{ cache: LogCache; port: SegmentLogPort }> {
  const port = await openPort(root, 'caches', o);
  const cache = await LogCache.open({
    compaction: { auto: false, bytesPerSec: 0 },
    ...o,
    log: port,
  });
  return { cache, port };
}

export async function openDiskCounters(root: string, o: DiskOptions = {}) {
  const port = await openPort(root, 'counters', o);
  const counters = await CounterLog.open({
    log: port,
    compaction: { auto: false, bytesPerSec: 0 },
  });
  return { counters, port };
}

export { tempDir };
