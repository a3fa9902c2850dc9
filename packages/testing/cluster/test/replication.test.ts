// Goal: replication between real brokers: a leader ships a replicated stream's records to its
// followers, and when the leader is killed the control plane promotes a follower that serves
// every record it was shipped, instead of opening the shard empty (issue 23's first end to end);
// it promotes the most caught-up follower its leader's last replica report names, and a durable
// single copy waits for its owner rather than moving empty.
// Method: a 3-broker cluster from startCluster with internal listeners (mutual TLS: each node's
// certificate names its id), a 1-shard stream at replication factor 3 and `leader` consistency: publish to the
// leader, wait until the records are on the followers (their broker logs say nothing; the test
// waits on the new leader's reads after the failover), SIGKILL the leader, read on the new one.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type ClusterNode, type FelixCluster, scaled, startCluster } from '../src/index.js';
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
    // confirmed every record, as the leader's lag gauge says, and the control plane holds a
    // report saying so (under `leader` consistency only a follower holding the whole reported
    // log may be promoted), before killing it.
    await waitFor(
      async () => (await metricOf(httpUrl(leader!), 'felix_broker_replication_lag_records')) === 0,
      'the followers to confirm every record',
      scaled(FAILOVER_MS),
    );
    await waitFor(
      async () => {
        const r = await reportOf(c, 'orders');
        return r?.leader_offset === 200 && r.replica_offsets.every((o) => o.durable_offset === 200);
      },
      'a replica report naming the followers caught up',
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
        () => readUpTo(onNew, 'orders', 'order-199'),
        'the new leader to serve the shipped records',
        scaled(FAILOVER_MS),
      );
      expect(got).toEqual(sent);
    } finally {
      await onNew.close();
    }
  }, 180_000);

  it('a_failover_promotes_the_most_caught_up_replica', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'ledger', shards: 1, replicationFactor: 3 }],
    });
    held.cluster = c;
    const before = (await c.assignments()).find((a) => a.stream === 'ledger')!;
    const leader = c.node(before.leader);
    // replicas[1] is the follower placement ranks first, the one it would promote unaided: it
    // is the one made to lag (cut from the leader, still live), so only the report saves us.
    const [, lagging, caughtUp] = before.replicas as [string, string, string];
    const first = Array.from({ length: 40 }, (_, i) => `a-${i}`);
    await publishAll(c, leader, first);
    await c.partition(leader.id, lagging);
    const more = Array.from({ length: 40 }, (_, i) => `b-${i}`);
    await publishAll(c, leader, more);
    const total = first.length + more.length;
    const report = await waitFor(
      async () => {
        const r = await reportOf(c, 'ledger');
        const held = (id: string) =>
          r?.replica_offsets.find((o) => o.node_id === id)?.durable_offset ?? -1;
        return r && r.leader_offset === total && held(caughtUp) === total ? r : undefined;
      },
      'a replica report naming the caught-up follower',
      scaled(FAILOVER_MS),
    );
    expect(report.replica_offsets.find((o) => o.node_id === lagging)!.durable_offset).toBeLessThan(
      total,
    );
    await c.kill(leader.id);
    const promoted = await waitFor(
      async () => {
        const a = (await c.assignments()).find((x) => x.stream === 'ledger');
        return a && a.generation > before.generation ? a : undefined;
      },
      'a follower to be promoted',
      scaled(FAILOVER_MS),
    );
    expect(promoted.leader).toBe(caughtUp);
    const onNew = await c.connect({ servers: [c.node(caughtUp).url()] });
    try {
      const got = await waitFor(
        () => readUpTo(onNew, 'ledger', 'b-39'),
        'the promoted follower to serve every acked record',
        scaled(FAILOVER_MS),
      );
      expect(got).toEqual([...first, ...more]);
    } finally {
      await onNew.close();
    }
  }, 180_000);

  it('a_durable_single_copy_shard_waits_for_its_owner_instead_of_moving_empty', async () => {
    const c = await startCluster({
      brokers: 2,
      streams: [{ name: 'ledger', shards: 1, replicationFactor: 1 }],
    });
    held.cluster = c;
    const before = (await c.assignments()).find((a) => a.stream === 'ledger')!;
    const owner = c.node(before.leader);
    const values = Array.from({ length: 20 }, (_, i) => `v-${i}`);
    await publishAll(c, owner, values);
    await c.kill(owner.id);
    // Down on the control plane, and a placement pass sees the shard and leaves it unplaced.
    await waitFor(
      async () => {
        const n = (await c.operatorGet(`/v1/nodes/${owner.id}`)) as {
          node: { status: { lifecycle: string } };
        };
        return n.node.status.lifecycle === 'down';
      },
      'the owner to be marked down',
      scaled(FAILOVER_MS),
    );
    await waitFor(
      async () => {
        const plan = (await c.operatorGet('/v1/placement/plan')) as {
          items: { stream: string; action: string }[];
        };
        return plan.items.some((i) => i.stream === 'ledger' && i.action === 'unplaceable');
      },
      'placement to leave the shard unplaced',
      scaled(FAILOVER_MS),
    );
    expect((await c.assignments()).find((a) => a.stream === 'ledger')).toEqual(before);
    await c.start(owner.id);
    await c.waitServed();
    const client = await c.connect({ servers: [owner.url()] });
    try {
      expect(await readUpTo(client, 'ledger', 'v-19')).toEqual(values);
      expect((await client.publish('ledger', 'v-20')).offset).toBe(20);
    } finally {
      await client.close();
    }
  }, 180_000);

  it('a_deposed_leaders_unshipped_suffix_is_dropped_when_it_returns_as_a_follower', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'ledger', shards: 1, replicationFactor: 3 }],
    });
    held.cluster = c;
    const before = (await c.assignments()).find((a) => a.stream === 'ledger')!;
    const old = c.node(before.leader);
    const shared = Array.from({ length: 20 }, (_, i) => `s-${i}`);
    await publishAll(c, old, shared);
    await waitFor(
      async () => {
        const r = await reportOf(c, 'ledger');
        return r?.leader_offset === 20 && r.replica_offsets.every((o) => o.durable_offset === 20);
      },
      'a report naming the followers caught up',
      scaled(FAILOVER_MS),
    );
    // Cut from everyone: what it acks until its lease lapses is never shipped.
    for (const f of before.replicas.slice(1)) await c.partition(old.id, f);
    await c.partition(old.id, 'controlplane');
    const client = await c.connect({ servers: [old.url()] });
    const divergent: string[] = [];
    try {
      for (let i = 0; ; i++) {
        const ok = await client.publish('ledger', `x-${i}`).then(
          () => true,
          () => false,
        );
        if (!ok) break;
        divergent.push(`x-${i}`);
      }
    } finally {
      await client.close();
    }
    expect(divergent.length).toBeGreaterThan(0);
    const promoted = await waitFor(
      async () => {
        const a = (await c.assignments()).find((x) => x.stream === 'ledger');
        return a && a.leader !== old.id ? a : undefined;
      },
      'a follower to be promoted',
      scaled(FAILOVER_MS),
    );
    const next = c.node(promoted.leader);
    const fresh = Array.from({ length: 5 }, (_, i) => `n-${i}`);
    await waitFor(
      () => publishAll(c, next, fresh).then(() => true),
      'the new leader to take publishes',
      scaled(FAILOVER_MS),
    );
    // Back: it rejoins the set as a follower and must end with the new leader's log.
    await c.heal();
    await waitFor(
      async () => {
        const r = await reportOf(c, 'ledger');
        return r?.replica_offsets.some((o) => o.node_id === old.id && o.durable_offset === 25);
      },
      'the deposed leader to follow the new one',
      scaled(FAILOVER_MS),
    );
    // Only it is left: it is promoted and serves exactly the new leader's log.
    for (const id of before.replicas.filter((x) => x !== old.id)) await c.kill(id);
    await waitFor(
      async () => (await c.leaderOf('ledger'))?.id === old.id,
      'the deposed leader to lead again',
      scaled(FAILOVER_MS),
    );
    const back = await c.connect({ servers: [old.url()] });
    try {
      const got = await waitFor(
        () => readUpTo(back, 'ledger', 'n-4'),
        'the returned leader to serve the new log',
        scaled(FAILOVER_MS),
      );
      expect(got).toEqual([...shared, ...fresh]);
    } finally {
      await back.close();
    }
  }, 240_000);
});

interface StoredReport {
  stream: string;
  generation: number;
  leader_offset: number;
  replica_offsets: { node_id: string; durable_offset: number }[];
}

/** The control plane's stored replica report of `stream`'s shard 0, when there is one. */
async function reportOf(c: FelixCluster, stream: string): Promise<StoredReport | undefined> {
  const page = (await c.operatorGet('/v1/replica-reports')) as { items: StoredReport[] };
  return page.items.find((r) => r.stream === stream);
}

async function publishAll(c: FelixCluster, node: ClusterNode, values: string[]): Promise<void> {
  const client = await c.connect({ servers: [node.url()] });
  try {
    for (const v of values) await client.publish('ledger', v);
  } finally {
    await client.close();
  }
}

async function metricOf(url: string, name: string): Promise<number> {
  return gauge(await (await fetch(`${url}/metrics`)).text(), name);
}

function httpUrl(node: ClusterNode): string {
  return `http://127.0.0.1:${node.httpPort}`;
}
