/**
 * A GroupService for tests: real cursor and dead-letter stores in a temp dir, the stream's one
 * shard the record source the test gives, metrics that count nothing.
 */
import { tempDir } from '@felix/testing-harness';
import type { ProjectionMetrics } from '../../src/caches/projection-metrics.js';
import type { BrokerConfig, StreamConfig } from '../../src/config/types.js';
import { GroupService } from '../../src/groups/group-service.js';
import type { StreamRuntime } from '../../src/streams/shard.js';

/** Metrics whose every counter and gauge does nothing. */
export const quietMetrics = new Proxy(
  {},
  { get: () => ({ inc: () => undefined, set: () => undefined }) },
) as ProjectionMetrics;

/** A service over stream `jobs` (durable, `stream` overriding its config) whose shard 0 is
 *  `src`, its waiting polls re-checking every `waitRecheckMs` (1 s); `close` closes it and
 *  removes its directory. */
export async function groupServiceOver(
  src: object,
  opts: { stream?: Partial<StreamConfig>; maxAttempts?: number; waitRecheckMs?: number } = {},
): Promise<{ svc: GroupService; close: () => Promise<void> }> {
  const dir = await tempDir();
  const groups = {
    visibility_timeout_ms: 30_000,
    max_visibility_ms: 600_000,
    max_attempts: opts.maxAttempts ?? 5,
    max_in_flight: 1000,
    max_poll_records: 100,
    max_poll_bytes: 1 << 20,
    max_wait_ms: 30_000,
    wait_recheck_ms: opts.waitRecheckMs ?? 1000,
    cursor_fsync: 'onCommit',
    cursor_fsync_interval_ms: 250,
  } as BrokerConfig['groups'];
  const cfg = { durable: { data_dir: dir.path }, groups } as unknown as BrokerConfig;
  const runtime = {
    config: { name: 'jobs', durable: true, ...opts.stream },
    shards: [src],
  } as unknown as StreamRuntime;
  const svc = new GroupService(cfg, () => runtime, quietMetrics);
  return {
    svc,
    close: async () => {
      await svc.close();
      await dir.cleanup();
    },
  };
}
