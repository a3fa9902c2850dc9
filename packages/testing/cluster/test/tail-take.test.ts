// Goal: a quorum-acknowledged record survives a failover even when placement promotes a replica
// that lacks it (docs/replication.md, "The fence and divergent suffixes"): the leader's last
// report can be older than the newest acks, so the control plane may choose a follower that
// missed them; that follower, once its fence has a majority, takes the furthest tail from the
// fenced replica holding them before it serves.
// Method: 3 real brokers, a 1-shard durable `quorum` stream at replication factor 3. Records
// shipped to both followers and reported; then the leader is cut from the follower placement
// ranks first on a tie (the lower node id) and from the control plane (no more reports), and
// more records are acknowledged by the leader and the other follower; the leader is SIGKILLed.
// The cut-off follower is promoted (its reported offset ties the other's) and must serve every
// acknowledged record, in order, once each.
import type { FelixClient } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, storedReport } from './support.js';

const STEP_MS = 60_000;
const READ_ATTEMPT_MS = 5_000;
const TEXT = new TextDecoder();

/** Shard 0 of `orders` from offset 0 until `last` or `ms` pass (refusals end the attempt). */
async function readFor(client: FelixClient, last: string, ms: number): Promise<string[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  const seen: string[] = [];
  try {
    for await (const ev of client.subscribe('orders', { from: 0, shard: 0, signal: ac.signal })) {
      seen.push(TEXT.decode(ev.data));
      if (seen.at(-1) === last) break;
    }
  } catch {
    // Aborted at the bound, or refused while the shard opens: what was read is the attempt.
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return seen;
}

/** Publishes `shipped-0..9` to `orders` (retried while the shard opens); answers them. */
async function tenShipped(client: FelixClient): Promise<string[]> {
  const acked: string[] = [];
  for (let i = 0; i < 10; i++) {
    const v = `shipped-${i}`;
    await waitFor(
      async () => (await client.publish('orders', v).catch(() => null)) !== null,
      `publish ${v}`,
      scaled(STEP_MS),
    );
    acked.push(v);
  }
  return acked;
}

/** Waits for a report of `generation` naming both followers at offset 10. */
async function bothFollowersAtTen(c: FelixCluster, generation: number): Promise<void> {
  await waitFor(
    async () => {
      const r = await storedReport(c, 'stream', 'orders', generation);
      return r?.commit_offset === 10 && r.replica_offsets.every((o) => o.durable_offset === 10);
    },
    'a report naming both followers at 10',
    scaled(STEP_MS),
  );
}

describe('a promoted leader takes the furthest tail', () => {
  const held = clusterPerTest();

  it('a_quorum_acknowledged_record_survives_the_promotion_of_a_replica_that_lacked_it', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'orders', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
    });
    held.cluster = c;
    const before = (await c.assignments()).find((a) => a.stream === 'orders')!;
    const leader = c.node(before.leader);
    const [behind, ahead] = before.replicas.filter((id) => id !== leader.id).sort();
    const client: FelixClient = await c.connect({ servers: [leader.url()], routing: false });
    const acked = await tenShipped(client);
    // Placement will see both followers level at 10: on a tie it ranks the lower node id first.
    await bothFollowersAtTen(c, before.generation);
    await c.partition(leader.id, behind!);
    await c.partition(leader.id, 'controlplane');
    // Acked by the leader and `ahead` alone, and never reported (the lease still holds a while).
    for (let i = 0; i < 5; i++) {
      const v = `unreported-${i}`;
      await client.publish('orders', v);
      acked.push(v);
    }
    await c.kill(leader.id);
    // Its broker is gone: the close may fail, and the test's verdict is elsewhere.
    await client.close().catch(() => undefined);
    await c.heal();
    const after = await waitFor(
      async () => {
        const a = (await c.assignments()).find((x) => x.stream === 'orders');
        return a && a.generation > before.generation ? a : undefined;
      },
      'a follower to be promoted',
      scaled(STEP_MS),
    );
    expect(after.leader).toBe(behind);
    const reader = await c.connect({ servers: [c.node(behind!).url()], routing: false });
    try {
      // Read attempts bounded in time: without the take, the last records never come.
      let got: string[] = [];
      const deadline = performance.now() + scaled(STEP_MS);
      while (got.at(-1) !== acked.at(-1) && performance.now() < deadline)
        got = await readFor(reader, acked.at(-1)!, scaled(READ_ATTEMPT_MS));
      expect(got).toEqual(acked);
    } finally {
      await reader.close();
    }
    expect(ahead).toBeDefined();
  }, 240_000);

  // With a fourth broker free, placement once promoted a follower and topped the set up with that
  // empty broker in one generation: the fenced majority {promoted, fresh} need not overlap the
  // majority {old leader, other follower} that acknowledged records (lost 2 of 2 runs). A quorum
  // failover now keeps the set's members (the dead leader too), so the fence needs the other
  // follower; the set is topped up at a later generation, once the new leader reported.
  it('a_quorum_stream_failover_beside_an_empty_broker_keeps_every_acked_record', async () => {
    const c = await startCluster({
      brokers: 4,
      replication: true,
      streams: [{ name: 'orders', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
    });
    held.cluster = c;
    const before = await waitFor(
      async () => {
        const a = (await c.assignments()).find((x) => x.stream === 'orders');
        return a?.leader !== undefined && a.replicas.length === 3 ? a : undefined;
      },
      'the shard placed on three of four brokers',
      scaled(STEP_MS),
    );
    const leader = c.node(before.leader);
    const [behind, ahead] = before.replicas.filter((id) => id !== leader.id).sort() as [
      string,
      string,
    ];
    const client: FelixClient = await c.connect({ servers: [leader.url()], routing: false });
    const acked = await tenShipped(client);
    await bothFollowersAtTen(c, before.generation);
    await c.partition(leader.id, behind);
    await c.partition(leader.id, 'controlplane');
    // One link down between the two followers: `behind`'s fence reaches the fresh broker only.
    await c.partition(behind, ahead);
    // Acked by the leader and `ahead` (a majority of three), never reported.
    for (let i = 0; i < 5; i++) {
      const v = `unreported-${i}`;
      await client.publish('orders', v);
      acked.push(v);
    }
    await c.kill(leader.id);
    // Its broker is gone: the close may fail, and the test's verdict is elsewhere.
    await client.close().catch(() => undefined);
    const after = await waitFor(
      async () => {
        const a = (await c.assignments()).find((x) => x.stream === 'orders');
        return a && a.generation > before.generation ? a : undefined;
      },
      'a follower to be promoted',
      scaled(STEP_MS),
    );
    expect(after.leader).toBe(behind);
    // Only the leader changed: the dead one is still a member, the fresh broker is not yet.
    expect([...after.replicas].sort()).toEqual([...before.replicas].sort());
    const writer = await c.connect({ servers: [c.node(behind).url()], routing: false });
    try {
      // While `ahead` is unreachable the new leader may take a publish only above every acked
      // record (or refuse it until the link heals): a refusal wrote nothing and is retried.
      const publishAfter = () =>
        waitFor(
          async () => (await writer.publish('orders', 'after').catch(() => null)) !== null,
          'the publish after the failover',
          scaled(20_000),
        );
      // Not taken before the deadline is a correct outcome here; it is published after the heal.
      const early = await publishAfter().then(
        () => true,
        () => false,
      );
      await c.heal();
      if (!early) await publishAfter();
      let got: string[] = [];
      const deadline = performance.now() + scaled(STEP_MS);
      while (got.at(-1) !== 'after' && performance.now() < deadline)
        got = await readFor(writer, 'after', scaled(READ_ATTEMPT_MS));
      expect(got).toEqual([...acked, 'after']);
      // Once the new leader reported at its generation, the dead one is replaced by the fourth.
      const spare = c.nodes.map((n) => n.id).find((id) => !before.replicas.includes(id));
      const topped = await waitFor(
        async () => {
          const a = (await c.assignments()).find((x) => x.stream === 'orders');
          return a && a.generation > after.generation ? a : undefined;
        },
        'the set topped up',
        scaled(STEP_MS),
      );
      expect(topped.leader).toBe(behind);
      expect([...topped.replicas].sort()).toEqual([behind, ahead, spare].sort());
    } finally {
      await writer.close();
    }
  }, 240_000);
});
