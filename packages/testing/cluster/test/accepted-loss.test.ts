// Goal: once an operator accepted a node's loss and its shard restarted empty elsewhere, a copy of
// the data given up never comes back: a broker holding one (the lost node returned, its disk
// intact) discards it before it serves the shard, even when a second accepted loss makes it the
// shard's leader again (docs/control-plane.md, "Accepting a lost node's data").
// Method: a real control plane and two real brokers with data dirs, a one-copy durable stream.
// Its leader is SIGKILLed holding three records and its loss accepted (the shard restarts empty
// on the other broker, whose assignment carries the restart's generation as its floor); three
// new records are written there; the first broker starts again with its old files, the second
// is SIGKILLed and its loss accepted, so the shard goes back to the first. A read from offset 0
// must see only what is written after that: none of the old records the first broker still had.
// Replicated: three brokers with internal listeners, a `quorum` stream of replication factor 2
// whose follower and then leader are SIGKILLed holding three acked records (the third broker
// paused meanwhile, so no failover gives it a copy); the leader's loss accepted, the shard
// restarts empty on the third broker, which acks nothing alone (a quorum of 2); the old
// follower returns with its copy and is added to the set: it must discard that copy
// and follow the restart from nothing, so the new records are acked and the old never return
// (before, the restarted leader fenced it and took its tail, the given-up records, as its own).
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, heldRecords, publishAll, readUpTo, valuesOf } from './support.js';

const STEP_MS = 60_000;

/** Accepts `nodeId`'s loss once its lease lapsed (refused while it is live); the moved shard. */
async function acceptLoss(c: FelixCluster, nodeId: string) {
  return waitFor(
    async () => {
      const out = (await c
        .operatorCall('POST', `/v1/nodes/${nodeId}/accept-loss`)
        .catch(() => null)) as { moved: { leader: string }[] } | null;
      return out !== null && out.moved.length === 1 ? out.moved[0]! : undefined;
    },
    `the loss of ${nodeId} to be accepted`,
    scaled(STEP_MS),
  );
}

async function ordersAssignment(c: FelixCluster) {
  return (await c.assignments()).find((a) => a.stream === 'orders')!;
}

async function eligible(c: FelixCluster, nodeId: string, want: boolean): Promise<void> {
  await waitFor(
    async () => {
      const node = (await c.operatorGet(`/v1/nodes/${nodeId}`)) as {
        placement: { eligible: boolean };
      };
      return node.placement.eligible === want;
    },
    `${nodeId} to be ${want ? '' : 'no longer '}eligible`,
    scaled(STEP_MS),
  );
}

describe('an accepted loss', () => {
  const holder = clusterPerTest();

  it('a_node_returning_after_its_data_was_given_up_starts_the_shard_empty', async () => {
    const c = await startCluster({ brokers: 2, streams: [{ name: 'orders', shards: 1 }] });
    holder.cluster = c;
    const first = (await c.leaderOf('orders'))!;
    const second = c.brokers.find((b) => b.id !== first.id)!;
    const old = await c.connect({ servers: [first.url()] });
    await publishAll(old, 'orders', ['old-0', 'old-1', 'old-2']);
    await old.close();

    await c.kill(first.id);
    const moved = await acceptLoss(c, first.id);
    expect(moved.leader).toBe(second.id);
    const restarted = await ordersAssignment(c);
    expect(restarted.floor_generation).toBe(restarted.generation);
    const onSecond = await c.connect({ servers: [second.url()] });
    await publishAll(onSecond, 'orders', ['new-0', 'new-1', 'new-2']);
    expect(await readUpTo(onSecond, 'orders', 'new-2')).toEqual(['new-0', 'new-1', 'new-2']);
    await onSecond.close();

    // The first broker returns with its old files; the second is lost in turn.
    await c.start(first.id);
    await eligible(c, first.id, true);
    await c.kill(second.id);
    expect((await acceptLoss(c, second.id)).leader).toBe(first.id);
    const back = await ordersAssignment(c);
    expect(back.floor_generation).toBe(back.generation);
    expect(back.generation).toBeGreaterThan(restarted.generation);

    const onFirst = await c.connect({ servers: [first.url()] });
    await publishAll(onFirst, 'orders', ['after-0']);
    // Only what this restart wrote: the old records the first broker kept are gone.
    expect(await readUpTo(onFirst, 'orders', 'after-0')).toEqual(['after-0']);
    await onFirst.close();
  }, 240_000);

  it('a_replica_returning_after_its_data_was_given_up_follows_the_restart_from_nothing', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'orders', shards: 1, replicationFactor: 2, consistency: 'quorum' }],
    });
    holder.cluster = c;
    const before = await ordersAssignment(c);
    const [leader, follower] = before.replicas.map((id) => c.node(id));
    const third = c.brokers.find((b) => !before.replicas.includes(b.id))!;
    const old = await c.connect({ servers: [leader!.url()] });
    // Acked under quorum: the follower holds each of them durably.
    await publishAll(old, 'orders', ['old-0', 'old-1', 'old-2']);
    await old.close();

    // The third broker is away while both copies go (so no failover hands it a copy), the
    // follower first (so it cannot be promoted), then the leader: the shard waits for them.
    await c.pause(third.id);
    await eligible(c, third.id, false);
    await c.kill(follower!.id);
    await eligible(c, follower!.id, false);
    await c.kill(leader!.id);
    await eligible(c, leader!.id, false);
    await c.resume(third.id);
    await eligible(c, third.id, true);
    expect((await acceptLoss(c, leader!.id)).leader).toBe(third.id);
    await c.start(follower!.id);
    await waitFor(
      async () => (await ordersAssignment(c)).replicas.includes(follower!.id),
      'the returned follower to join the restarted shard',
      scaled(STEP_MS),
    );
    const now = await ordersAssignment(c);
    expect(now.leader).toBe(third.id);
    expect(now.floor_generation).toBeLessThan(now.generation);

    const client = await c.connect({ servers: [third.url()] });
    await publishAll(client, 'orders', ['new-0', 'new-1', 'new-2']);
    expect(await readUpTo(client, 'orders', 'new-2')).toEqual(['new-0', 'new-1', 'new-2']);
    await client.close();
    // The follower acked them from a copy that no longer holds the old records.
    expect(valuesOf(await heldRecords(follower!, 'orders'))).toEqual(['new-0', 'new-1', 'new-2']);
  }, 240_000);
});
