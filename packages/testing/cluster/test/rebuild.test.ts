// Goal: a follower broker that comes back after its stream's retention passed everything it held
// (down longer than retention) is not left halted `needs_bootstrap` until the shard's next
// generation: its leader rebuilds it (the follower discards that copy and starts at the leader's
// base, kind 24) and ships to it from there, so the shard has all its copies again.
// Method: a 3-broker cluster (mutual TLS internal listeners), a 1-shard `quorum` stream at
// replication factor 3 with size retention over small segments; one follower SIGKILLed while
// the leader writes far past the retention, then started again on its data dir. Each replica's
// log is read from its data dir with the storage log tool (read-only).
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type ClusterNode, scaled, startCluster } from '../src/index.js';
import {
  clusterPerTest,
  gauge,
  heldRecords,
  publishAll,
  shippedAndReported,
  valuesOf,
} from './support.js';

const STEP_MS = 60_000;
const STREAM = 'events';
const KIB = 'x'.repeat(1000);

async function rebuildsOf(node: ClusterNode): Promise<number> {
  const page = await (await fetch(`http://127.0.0.1:${node.httpPort}/metrics`)).text();
  return gauge(page, 'felix_broker_replication_rebuilds_total', '{log="stream"}');
}

async function firstAndEnd(node: ClusterNode): Promise<{ first: number; end: number }> {
  const held = await heldRecords(node, STREAM);
  return { first: held[0]?.offset ?? 0, end: (held.at(-1)?.offset ?? -1) + 1 };
}

describe('a follower left behind its leader’s retention', () => {
  const holder = clusterPerTest();

  it('a_follower_back_after_retention_passed_its_copy_is_rebuilt_at_the_leaders_base', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [
        {
          name: STREAM,
          shards: 1,
          replicationFactor: 3,
          consistency: 'quorum',
          retention: { maxSizeBytes: 48 * 1024 },
        },
      ],
      env: { FELIX_DURABLE_SEGMENT_BYTES: '8192', FELIX_DURABLE_RETENTION_INTERVAL_MS: '100' },
    });
    holder.cluster = c;
    const a = (await c.assignments()).find((x) => x.stream === STREAM)!;
    const leader = c.node(a.leader);
    const away = c.node(a.replicas.find((id) => id !== a.leader)!);
    const client = await c.connect({ servers: [leader.url()] });
    try {
      await publishAll(
        client,
        STREAM,
        Array.from({ length: 20 }, (_, i) => `a-${i}-${KIB}`),
      );
      await shippedAndReported(c, leader, 'stream', STREAM, a.generation);
      await c.kill(away.id);
      const left = await firstAndEnd(away);
      expect(left.end).toBeGreaterThanOrEqual(20);
      // Far past the retention: the leader deletes every segment the away follower holds.
      await publishAll(
        client,
        STREAM,
        Array.from({ length: 200 }, (_, i) => `b-${i}-${KIB}`),
      );
      await waitFor(
        async () => (await firstAndEnd(leader)).first > left.end,
        "the leader's retention to pass the away follower's copy",
        scaled(STEP_MS),
      );
      await c.start(away.id);
      await waitFor(
        async () => (await rebuildsOf(leader)) >= 1,
        'the leader to rebuild the returning follower',
        scaled(STEP_MS),
      );
      await publishAll(client, STREAM, ['after-the-rebuild']);
      // The rebuilt copy starts past everything it held before and ends with the leader's log.
      await waitFor(
        async () => {
          const held = await heldRecords(away, STREAM);
          return valuesOf(held).at(-1) === 'after-the-rebuild';
        },
        'the rebuilt follower to hold the newest record',
        scaled(STEP_MS),
      );
      // The control plane no longer holds the follower halted, and knows what it holds now: it
      // may be promoted again once it qualifies (before, halted for the rest of the generation).
      await waitFor(
        async () => {
          const page = (await c.operatorGet('/v1/replica-reports')) as {
            items: {
              stream: string;
              generation: number;
              halted: { node_id: string }[];
              replica_offsets: { node_id: string; durable_offset: number }[];
            }[];
          };
          const r = page.items
            .filter((x) => x.stream === STREAM)
            .sort((x, y) => y.generation - x.generation)[0];
          const held = r?.replica_offsets.find((o) => o.node_id === away.id)?.durable_offset;
          return r !== undefined && r.halted.length === 0 && held !== undefined && held > left.end;
        },
        'the stored report to take the rebuilt follower back',
        scaled(STEP_MS),
      );
      const copy = await heldRecords(away, STREAM);
      expect(copy[0]!.offset).toBeGreaterThan(left.end);
      const source = await heldRecords(leader, STREAM);
      const from = source.findIndex((r) => r.offset === copy[0]!.offset);
      // The leader may have trimmed further since: compare where both hold records.
      const overlap = from >= 0 ? source.slice(from) : source;
      const start = copy.findIndex((r) => r.offset === overlap[0]!.offset);
      expect(start).toBeGreaterThanOrEqual(0);
      expect(valuesOf(copy.slice(start))).toEqual(valuesOf(overlap));
      expect(valuesOf(copy).some((v) => v.startsWith('a-'))).toBe(false);
    } finally {
      await client.close();
    }
  });
});
