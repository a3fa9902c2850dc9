// Goal: a broker that does not lead a shard forwards the shard's writes (publishes, cache puts,
// counter adds) to its leader and answers with the leader's result; a forward the leader does not
// answer is reported outcome-unknown and never resent; reads are redirected with the leader's
// node id, client address and generation (issue 23, "Routing").
// Method: 3 real brokers with internal listeners (mutual TLS) from startCluster; a client
// connected to one non-owner only; what it wrote is read back from the owner (a client connected
// to the owner only). The timeout case SIGSTOPs the owner after a first forward opened the link,
// with the control plane's expiry raised so the paused owner keeps its shard; after SIGCONT the
// owner's log holds the unanswered record at most once, and the ingress counted one forward.
import { type FelixClient, NotLeaderError } from '@felix/client';
import { describe, expect, it } from 'vitest';
import { type ClusterNode, type FelixCluster, scaled, startCluster } from '../src/index.js';
import { waitFor } from '@felix/testing-harness';
import { clusterPerTest, gauge } from './support.js';

const TEXT = new TextDecoder();

/** The leader of a one-shard stream or cache, and a broker that does not lead it. */
async function ownerAndOther(c: FelixCluster, name: string, kind: 'stream' | 'cache') {
  const owner = await c.leaderOf(name, 0, kind);
  expect(owner).toBeDefined();
  const other = c.nodes.find((n) => n.id !== owner!.id)!;
  return { owner: owner!, other };
}

/** Offsets and values of a one-shard stream from 0 up to and including the value `last`. */
async function readWithOffsets(client: FelixClient, stream: string, last: string) {
  const ac = new AbortController();
  const seen: { offset: number; value: string }[] = [];
  try {
    for await (const ev of client.subscribe(stream, { from: 0, shard: 0, signal: ac.signal })) {
      const value = TEXT.decode(ev.data);
      seen.push({ offset: ev.offset, value });
      if (value === last) return seen;
    }
    return seen;
  } finally {
    ac.abort();
  }
}

/** `felix_broker_forwards_total{outcome}` on a broker. */
async function forwards(node: ClusterNode, outcome: string): Promise<number> {
  const page = await (await fetch(`http://127.0.0.1:${node.httpPort}/metrics`)).text();
  const n = gauge(page, 'felix_broker_forwards_total', `{outcome="${outcome}"}`);
  return Number.isNaN(n) ? 0 : n;
}

async function withClient<T>(
  c: FelixCluster,
  node: ClusterNode,
  run: (client: FelixClient) => Promise<T>,
): Promise<T> {
  // routing off: the client talks to this broker only, so what it does is the broker's forward
  // (a routed client would go to the owner itself).
  const client = await c.connect({ servers: [node.url()], routing: false });
  try {
    return await run(client);
  } finally {
    await client.close();
  }
}

describe('forwarding and redirects', () => {
  const held = clusterPerTest();

  it('a_publish_to_a_non_owner_is_forwarded_and_acked_with_the_owners_offset', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'orders', shards: 1 }],
    });
    held.cluster = c;
    const { owner, other } = await ownerAndOther(c, 'orders', 'stream');
    // More forwards than one internal connection has stream slots (1024): the link stays up.
    const n = 1_100;
    const acked = await withClient(c, other, async (client) => {
      const out: { offset: number | null; value: string }[] = [];
      for (let i = 0; i < n; i++) {
        const r = await client.publish('orders', `order-${i}`);
        out.push({ offset: r.offset, value: `order-${i}` });
      }
      const batch = await client.publishBatch('orders', ['b-0', 'b-1', 'b-2']);
      out.push({ offset: batch.offset, value: 'b-0' });
      return out;
    });
    const onOwner = await withClient(c, owner, (client) =>
      readWithOffsets(client, 'orders', 'b-2'),
    );
    // Every ack named the offset the owner's log holds the record at.
    const atOffset = new Map(onOwner.map((r) => [r.offset, r.value]));
    for (const a of acked) {
      expect(a.offset).not.toBeNull();
      expect(atOffset.get(a.offset!)).toBe(a.value);
    }
    expect(onOwner.map((r) => r.value)).toEqual([
      ...Array.from({ length: n }, (_, i) => `order-${i}`),
      'b-0',
      'b-1',
      'b-2',
    ]);
    expect(await forwards(other, 'ok')).toBe(n + 1);
    expect(await forwards(other, 'unknown')).toBe(0);
    expect(await forwards(owner, 'ok')).toBe(0);
  }, 180_000);

  it('a_cache_put_to_a_non_owner_is_forwarded_to_the_owner', async () => {
    const c = await startCluster({ brokers: 3, replication: true, caches: [{ name: 'users' }] });
    held.cluster = c;
    const { owner, other } = await ownerAndOther(c, 'users', 'cache');
    await withClient(c, other, async (client) => {
      await client.cache('users').put('alice', 'v1');
      await client.cache('users').put('bob', 'v2');
      // A delete is a write too: forwarded, answered with the value it removed.
      expect(TEXT.decode((await client.cache('users').delete('bob'))!)).toBe('v2');
    });
    await withClient(c, owner, async (client) => {
      expect(TEXT.decode((await client.cache('users').get('alice'))!)).toBe('v1');
      expect(await client.cache('users').get('bob')).toBeUndefined();
    });
    expect(await forwards(other, 'ok')).toBe(3);
  }, 180_000);

  it('a_counter_add_to_a_non_owner_is_forwarded_to_the_owner', async () => {
    const c = await startCluster({ brokers: 3, replication: true, caches: [{ name: 'users' }] });
    held.cluster = c;
    const { owner, other } = await ownerAndOther(c, 'users', 'cache');
    await withClient(c, other, async (client) => {
      expect(await client.counter('users').add('hits', 5n)).toBe(5n);
      expect(await client.counter('users').add('hits', -2n)).toBe(3n);
    });
    await withClient(c, owner, async (client) => {
      expect(await client.counter('users').get('hits')).toBe(3n);
    });
    expect(await forwards(other, 'ok')).toBe(2);
  }, 180_000);

  it('a_forward_that_times_out_is_reported_as_outcome_unknown_not_retried', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'orders', shards: 1 }],
      // The paused owner must keep its shard: no expiry within the pause.
      controlPlaneEnv: { FELIX_CONTROLPLANE_EXPIRY_TIMEOUT_MS: '600000' },
    });
    held.cluster = c;
    const { owner, other } = await ownerAndOther(c, 'orders', 'stream');
    // Longer than the forward's deadline (the owner's quorum wait plus its margin, 10 s).
    const client = await c.connect({
      servers: [other.url()],
      requestTimeoutMs: scaled(30_000),
      routing: false,
    });
    try {
      // A first forward opens the link, so the next one is sent and then goes unanswered.
      await client.publish('orders', 'before');
      await c.pause(owner.id);
      const err = await client.publish('orders', 'maybe').then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ brokerCode: 'unacknowledged', retry: 'unknown_outcome' });
      await c.resume(owner.id);
      await client.publish('orders', 'after');
    } finally {
      await client.close();
    }
    const onOwner = await withClient(c, owner, (cl) => readWithOffsets(cl, 'orders', 'after'));
    const copies = onOwner.filter((r) => r.value === 'maybe').length;
    expect(copies).toBeLessThanOrEqual(1);
    expect(onOwner.filter((r) => r.value === 'before')).toHaveLength(1);
    // Sent once, never again: one unanswered forward, two answered.
    expect(await forwards(other, 'unknown')).toBe(1);
    expect(await forwards(other, 'ok')).toBe(2);
  }, 180_000);

  it('a_forwarded_quorum_publish_is_answered_with_the_leaders_quorum_outcome', async () => {
    // Four brokers, a quorum stream on three of them: the fourth holds no copy and forwards.
    const c = await startCluster({
      brokers: 4,
      replication: true,
      streams: [{ name: 'orders', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
      env: { FELIX_PUBLISH_QUORUM_TIMEOUT_MS: String(scaled(3_000)) },
    });
    held.cluster = c;
    const a = (await c.assignments()).find((x) => x.stream === 'orders')!;
    const ingress = c.nodes.find((n) => !a.replicas.includes(n.id))!;
    const followers = a.replicas.filter((id) => id !== a.leader);
    const client = await c.connect({
      servers: [ingress.url()],
      requestTimeoutMs: scaled(30_000),
      routing: false,
    });
    try {
      // Committed by a majority: acked through the forward.
      await waitFor(
        async () => (await client.publish('orders', 'warm-up').catch(() => null)) !== null,
        'a forwarded quorum publish to be acked',
        scaled(60_000),
      );
      // No majority: the leader's quorum_timeout reaches the client as such, not as a forward
      // the leader did not answer.
      for (const f of followers) await c.pause(f);
      const err = await client.publish('orders', 'lonely').then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ brokerCode: 'quorum_timeout', retry: 'unknown_outcome' });
      for (const f of followers) await c.resume(f);
    } finally {
      await client.close();
    }
    expect(await forwards(ingress, 'unknown')).toBe(0);
  }, 240_000);

  it('a_subscription_to_a_non_owner_is_redirected_with_the_owners_address_and_generation', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'orders', shards: 1 }],
    });
    held.cluster = c;
    const { owner, other } = await ownerAndOther(c, 'orders', 'stream');
    const assignment = (await c.assignments()).find((a) => a.stream === 'orders')!;
    const err = await withClient(c, other, async (client) => {
      try {
        for await (const _ of client.subscribe('orders', { from: 0, shard: 0 })) break;
        return null;
      } catch (e) {
        return e;
      }
    });
    expect(err).toBeInstanceOf(NotLeaderError);
    expect((err as NotLeaderError).detail).toMatchObject({
      reason: 'not_leader',
      node_id: owner.id,
      addr: `127.0.0.1:${owner.port}`,
      generation: assignment.generation,
    });
    // The redirect is precise: the address it names serves the subscription.
    const served = await withClient(c, owner, async (client) => {
      await client.publish('orders', 'x');
      return readWithOffsets(client, 'orders', 'x');
    });
    expect(served).toEqual([{ offset: 0, value: 'x' }]);
  }, 180_000);

  it('a_group_poll_to_a_non_owner_is_redirected_with_the_owners_address_and_generation', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'jobs', shards: 1 }],
    });
    held.cluster = c;
    const { owner, other } = await ownerAndOther(c, 'jobs', 'stream');
    const assignment = (await c.assignments()).find((a) => a.stream === 'jobs')!;
    await withClient(c, owner, (client) => client.publish('jobs', 'job-0'));
    // Never forwarded: a claim and its ack must live on one broker.
    const err = await withClient(c, other, (client) =>
      client
        .group('jobs', 'workers')
        .poll({ max: 1 })
        .then(
          () => null,
          (e: unknown) => e,
        ),
    );
    expect(err).toBeInstanceOf(NotLeaderError);
    expect((err as NotLeaderError).detail).toMatchObject({
      reason: 'not_leader',
      node_id: owner.id,
      addr: `127.0.0.1:${owner.port}`,
      generation: assignment.generation,
    });
    const polled = await withClient(c, owner, (client) =>
      client.group('jobs', 'workers').poll({ max: 1 }),
    );
    expect(polled.map((m) => TEXT.decode(m.payload))).toEqual(['job-0']);
  }, 180_000);
});
