// Goal: a broker without the cluster certificate cannot join the cluster's internal network
// (issue 23): a real member's internal listener refuses a peer presenting another CA's
// certificate or none, and greets one with the cluster's; a broker process configured with an
// internal listener and no certificate refuses to start unless told by name to run
// unauthenticated; and one told so starts, yet the members refuse its connections, so a write
// it would forward never reaches the leader's log.
// Method: a 2-broker cluster from startCluster with internal listeners (mutual TLS), a one-shard
// stream at replication factor 2; a second CA made like the cluster's (makeClusterPki); the test
// dials a member's internal listener itself (cluster.peer) and starts extra broker processes
// with a node credential but no cluster certificate (cluster.startOutsider); the leader's log is
// read from its data directory with the storage log tool.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { ProcessStartError, makeClusterPki, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, heldRecords, publishAll, valuesOf } from './support.js';

const STEP_MS = 30_000;
const STREAM = 'orders';

describe('the cluster certificate', () => {
  const held = clusterPerTest();

  it('a_broker_without_the_cluster_certificate_cannot_join', async () => {
    const c = await startCluster({
      brokers: 2,
      replication: true,
      streams: [{ name: STREAM, shards: 1, replicationFactor: 2 }],
    });
    held.cluster = c;
    const leader = (await c.leaderOf(STREAM))!;
    expect(leader).toBeDefined();
    // Another CA's certificate naming the node it claims, and no certificate at all: refused.
    const foreign = await makeClusterPki(join(c.dir, 'foreign'));
    const issued = await foreign.issue('n9');
    const [certPem, keyPem] = await Promise.all([
      readFile(issued.certPath, 'utf8'),
      readFile(issued.keyPath, 'utf8'),
    ]);
    await expect(c.peer(leader.id, 'n9', { certPem, keyPem })).rejects.toThrow();
    await expect(c.peer(leader.id, 'n9', null)).rejects.toThrow();
    // The cluster's certificate naming the same node is greeted.
    const member = await c.peer(leader.id, 'n9');
    await member.close();

    // Configured to join without the certificate: it exits before it listens, naming the
    // setting that would allow it.
    const refused = await c.startOutsider().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ProcessStartError);
    const first = c.outsiders[0]!;
    const log = await readFile(first.logPath, 'utf8');
    expect(log).toContain('cluster.internal_allow_unauthenticated');
    expect(log).toMatch(/exited code [1-9]/);
    expect(first.state).toBe('stopped');

    // Told by name to run unauthenticated, it starts and knows the leader, but a write it
    // forwards is refused at the leader's listener: it never reaches the leader's log.
    const outsider = await c.startOutsider({ FELIX_INTERNAL_ALLOW_UNAUTHENTICATED: 'true' });
    const client = await c.connect({ servers: [outsider.url()], routing: false });
    try {
      const why = await waitFor(
        async () => {
          const err = await client.publish(STREAM, 'through-the-outsider').then(
            () => ({ message: 'acked' }),
            (e: Error) => e,
          );
          if (err.message === 'acked') return err;
          return err.message.includes('cannot be reached') ? err : undefined;
        },
        'the outsider to try the leader',
        scaled(STEP_MS),
      );
      expect(why.message).toContain(`the leader (node ${leader.id}) cannot be reached`);
    } finally {
      await client.close();
    }
    const onLeader = await c.connect({ servers: [leader.url()] });
    try {
      await publishAll(onLeader, STREAM, ['direct']);
    } finally {
      await onLeader.close();
    }
    // Read after a later record: the outsider's write would sit before it.
    const values = valuesOf(
      await waitFor(
        async () => {
          const h = await heldRecords(leader, STREAM);
          return valuesOf(h).includes('direct') ? h : undefined;
        },
        'the direct write in the leader log',
        scaled(STEP_MS),
      ),
    );
    expect(values).toEqual(['direct']);
  }, 180_000);
});
