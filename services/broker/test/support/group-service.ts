/**
 * A GroupService for tests: real cursor and dead-letter stores in a temp dir, the stream's one
 * shard the record source the test gives, metrics that count nothing.
 */
import { tempDir } from '@felix/testing-harness';
import { FEATURE_HI_GROUP_ACK_BATCH } from '@felix/wire';
import type { ProjectionMetrics } from '../../src/caches/projection-metrics.js';
import type { BrokerConfig, StreamConfig } from '../../src/config/types.js';
import { GroupService } from '../../src/groups/group-service.js';
import type { Negotiated } from '../../src/session/negotiation.js';
import type { StreamRuntime } from '../../src/streams/shard.js';

/** A connection's negotiation as the group tests' client makes it: batched acks on. */
export const GROUP_AUTH: Negotiated = {
  tenant: 't1',
  flags: 0,
  features: 0,
  featuresHi: FEATURE_HI_GROUP_ACK_BATCH,
  negotiating: false,
};

/** Group `g` on shard 0 of the stream `jobs` a service of groupServiceOver holds. */
export const GROUP_SCOPE = {
  tenant_id: 't1',
  namespace: 'default',
  stream: 'jobs',
  shard: 0,
  group: 'g',
} as const;

/** A stand-in shard's record reads when memory holds every record from offset 0 (record `o`'s
 *  payload is the byte `o`); spread into a shard that says its own tail (`appliedNext`). */
export const HELD_IN_MEMORY = {
  store: {},
  logBaseOffset: 0,
  visitHeld(from: number, until: number, visit: (o: number, p: Uint8Array, t: number) => void) {
    if (from >= until) return false;
    for (let o = from; o < until; o++) visit(o, new Uint8Array([o]), 0);
    return true;
  },
  readLog: () => Promise.reject(new Error('memory holds every record')),
};

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
