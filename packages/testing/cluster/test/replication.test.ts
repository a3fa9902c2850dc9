// Goal: replication between real brokers: a leader ships a replicated stream's records to its
// followers, and when the leader is killed the control plane promotes a follower that serves
// every record it was shipped, instead of opening the shard empty (issue 23's first end to end).
// Method: a 3-broker cluster from startCluster with internal listeners (mutual TLS: each node's
// certificate names its id), a 1-shard stream at replication factor 3 and `leader` consistency: publish to the
// leader, wait until the records are on the followers (their broker logs say nothing; the test
// waits on the new leader's reads after the failover), SIGKILL the leader, read on the new one.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type ClusterNode, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, gauge, readUpTo } from './support.js';

const FAILOVER_MS = 60_000;

describe('replication between brokers', () => {
  const held = clusterPerTest();

  it('a_promoted_follower_serves_every_record_its_leader_shipped', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'orders', shards: 1, replicationFactor: 3 }],
    });
    held.cluster = c;
    const leader = await c.leaderOf('orders');
    expect(leader).toBeDefined();
    const onLeader = await c.connect({ servers: [leader!.url()] });
    const sent: string[] = [];
    for (let i = 0; i < 200; i++) {
      sent.push(`order-${i}`);
      await onLeader.publish('orders', `order-${i}`);
    }
    await onLeader.close();
    const before = (await c.assignments()).find((a) => a.stream === 'orders')!;
    // The leader acks on its own fsync (`leader` consistency): wait until both followers have
    // confirmed every record, as the leader's lag gauge says, before killing it.
    await waitFor(
      async () => (await metricOf(httpUrl(leader!), 'felix_broker_replication_lag_records')) === 0,
      'the followers to confirm every record',
      scaled(FAILOVER_MS),
    );
    await c.kill(leader!.id);
    const promoted = await waitFor(
      async () => {
        const a = (await c.assignments()).find((x) => x.stream === 'orders');
        return a && a.leader !== leader!.id && a.generation > before.generation ? a : undefined;
      },
      'a follower to be promoted',
      scaled(FAILOVER_MS),
    );
    expect(before.replicas).toContain(promoted.leader);
    const next = c.node(promoted.leader);
    const onNew = await c.connect({ servers: [next.url()] });
    try {
      const got = await waitFor(
        async () => {
          const seen = await readUpTo(onNew, 'orders', 'order-199').catch(() => null);
          return seen;
        },
        'the new leader to serve the shipped records',
        scaled(FAILOVER_MS),
      );
      expect(got).toEqual(sent);
    } finally {
      await onNew.close();
    }
  }, 180_000);
});

async function metricOf(url: string, name: string): Promise<number> {
  return gauge(await (await fetch(`${url}/metrics`)).text(), name);
}

function httpUrl(node: ClusterNode): string {
  return `http://127.0.0.1:${node.httpPort}`;
}
