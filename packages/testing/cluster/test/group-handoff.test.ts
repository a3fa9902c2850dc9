// Goal: a worker acking its jobs one at a time while the stream's leader stops with SIGTERM sees
// no error: acks the stopping leader refuses unapplied (`draining`, or its end of the request
// stream) are sent again to the shard's next owner, which owes what its predecessor handed out
// and applies them; afterwards the group hands out none of the acked records again.
// Method: 3 real brokers with internal listeners, a 1-shard durable `quorum` stream at
// replication factor 3, JOBS records published and claimed by one consumer of a group (the
// cluster-aware client); then the leader gets SIGTERM while the consumer acks each claimed
// record in turn, awaiting each ack, until every one is acked. Before, acks made during the
// hand-off failed with DrainingError or ConnectionLostError (a user's trial saw four).
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { scaled, startCluster } from '../src/index.js';
import { clusterPerTest, publishAll } from './support.js';

const JOBS = 3_000;

describe('group settles across a hand-off', () => {
  const holder = clusterPerTest();

  it('acks_made_while_their_leader_hands_off_on_sigterm_are_sent_again_and_applied', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'jobs', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
    });
    holder.cluster = c;
    await c.waitServed();
    const client = await c.connect();
    await publishAll(
      client,
      'jobs',
      Array.from({ length: JOBS }, (_, i) => `job-${i}`),
    );
    const group = client.group('jobs', 'workers', { shard: 0 });
    const held = await waitFor(
      async () => {
        const got = [];
        while (got.length < JOBS) {
          const batch = await group.poll({ max: JOBS - got.length, waitMs: 1_000 });
          if (batch.length === 0) return undefined;
          got.push(...batch);
        }
        return got;
      },
      'every job to be claimed',
      scaled(30_000),
    );
    const leader = (await c.leaderOf('jobs'))!;
    let stopped = false;
    const stopping = c.stop(leader.id).then(() => {
      stopped = true;
    });
    const failures: string[] = [];
    let ackedAfterStop = 0;
    for (const m of held) {
      try {
        await m.ack();
        if (stopped) ackedAfterStop++;
      } catch (err) {
        failures.push(`${m.offset}: ${(err as { code?: string }).code ?? String(err)}`);
      }
    }
    await stopping;
    console.log(
      `acked ${held.length - failures.length} of ${held.length}, ${ackedAfterStop} after the leader had stopped`,
    );
    expect(failures).toEqual([]);
    // The hand-off fell inside the loop: some acks were made after the leader was gone.
    expect(ackedAfterStop).toBeGreaterThan(0);
    // Every ack was applied: the new leader hands none of those records out again.
    const again = await waitFor(
      () =>
        group.poll({ max: 100, waitMs: 1_000 }).then(
          (b) => b,
          () => undefined,
        ),
      'the new leader to answer a poll',
      scaled(30_000),
    );
    expect(again.map((m) => m.offset)).toEqual([]);
    await client.close();
  }, 600_000);
});
