// Goal: a real follower broker's checks on what it is shipped (issue 23): a batch of an older
// generation than it accepted is refused, so a deposed leader writes nothing; a resent batch is
// compared byte for byte and never appended twice; nothing at or below the commit offset it
// knows is ever truncated, even by a newer generation's leader; and a deposed leader that
// returns as a follower truncates the divergent suffix it wrote above the commit mark, and
// nothing else.
// Method: 3-broker clusters from startCluster with internal listeners (mutual TLS), a 1-shard
// stream at replication factor 3 and `quorum` consistency. Where the test needs a sender a
// correct leader never is (a deposed leader still sending, a resend, a forged conflict), the
// test itself speaks on the follower's internal listener with a certificate of the cluster CA
// naming the broker it impersonates (cluster.peer). Each replica's log is read from its data
// directory with the storage log tool (read-only), its replica file with @felix/storage.
import type { FelixClient } from '@felix/client';
import { ReplicaFile, nodeIo } from '@felix/storage';
import { waitFor } from '@felix/testing-harness';
import { INTERNAL_ERROR, type InternalMessage, batchChecksum } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import {
  type Assignment,
  type ClusterNode,
  type FelixCluster,
  type PeerClient,
  scaled,
  startCluster,
} from '../src/index.js';
import {
  clusterPerTest,
  heldRecords,
  publishAll,
  readUpTo,
  shardDirOf,
  storedReport,
  valuesOf,
} from './support.js';

const STEP_MS = 60_000;
const ENC = new TextEncoder();
const STREAM = 'orders';

async function assignmentOf(c: FelixCluster): Promise<Assignment> {
  const a = (await c.assignments()).find((x) => x.stream === STREAM);
  expect(a).toBeDefined();
  return a!;
}

/** A quorum stream at RF 3 on three brokers: its first assignment, leader and followers. */
async function quorumStream(holder: { cluster: FelixCluster | undefined }) {
  const c = await startCluster({
    brokers: 3,
    replication: true,
    streams: [{ name: STREAM, shards: 1, replicationFactor: 3, consistency: 'quorum' }],
  });
  holder.cluster = c;
  const before = await assignmentOf(c);
  const leader = c.node(before.leader);
  const followers = before.replicas.filter((id) => id !== before.leader).map((id) => c.node(id));
  expect(followers).toHaveLength(2);
  return { c, before, leader, followers };
}

/** Publishes `values` through `node` (each acked: under quorum, a majority holds it). */
async function publishOn(c: FelixCluster, node: ClusterNode, values: string[]): Promise<void> {
  const client = await c.connect({ servers: [node.url()] });
  try {
    await publishAll(client, STREAM, values);
  } finally {
    await client.close();
  }
}

/** The assignment once a follower leads at a newer generation than `before`. */
function promotion(c: FelixCluster, before: Assignment): Promise<Assignment> {
  return waitFor(
    async () => {
      const a = await assignmentOf(c);
      return a.leader !== before.leader && a.generation > before.generation ? a : undefined;
    },
    'a follower to be promoted',
    scaled(STEP_MS),
  );
}

/** A records batch of the stream's shard 0 at `generation`, as a leader ships it. */
function batch(
  c: FelixCluster,
  peer: PeerClient,
  generation: number,
  firstOffset: number,
  values: string[],
): InternalMessage {
  const payloads = values.map((v) => ENC.encode(v));
  return {
    kind: 'ReplicateRecords',
    correlationId: peer.correlationId(),
    shard: { tenantId: c.tenant, namespace: c.namespace, stream: STREAM, shard: 0, generation },
    firstOffset,
    checksum: batchChecksum(payloads),
    payloads,
  };
}

/** Waits until `node`'s log holds exactly `values` (generation starts aside); its records. */
function holding(node: ClusterNode, values: string[], what: string) {
  return waitFor(
    async () => {
      const held = await heldRecords(node, STREAM);
      return JSON.stringify(valuesOf(held)) === JSON.stringify(values) ? held : undefined;
    },
    what,
    scaled(STEP_MS),
  );
}

/** The commit offset a replica's `replica` file holds (0 before it saved one). */
async function savedCommit(node: ClusterNode): Promise<number> {
  const dir = await shardDirOf(node, STREAM);
  if (dir === undefined) return 0;
  return (await ReplicaFile.open(nodeIo, dir)).state.commitOffset;
}

async function readAll(c: FelixCluster, node: ClusterNode, last: string): Promise<string[]> {
  const client: FelixClient = await c.connect({ servers: [node.url()] });
  try {
    return await waitFor(
      () => readUpTo(client, STREAM, last),
      `${node.id} to serve the stream up to ${last}`,
      scaled(STEP_MS),
    );
  } finally {
    await client.close();
  }
}

const first = Array.from({ length: 10 }, (_, i) => `c-${i}`);

describe('a follower broker checks what it is shipped', () => {
  const holder = clusterPerTest();

  it('a_follower_rejects_a_batch_from_an_older_generation', async () => {
    const { c, before, leader } = await quorumStream(holder);
    await publishOn(c, leader, first);
    await c.kill(leader.id);
    const promoted = await promotion(c, before);
    // Serving means the new leader fenced a majority: the other follower accepted its
    // generation (the old leader is dead).
    await publishOn(c, c.node(promoted.leader), ['after']);
    const bystander = c.node(
      promoted.replicas.find((id) => id !== promoted.leader && id !== leader.id)!,
    );
    const held = await holding(
      bystander,
      [...first, 'after'],
      'the bystander to hold every record',
    );
    // The deposed leader, still sending at its own generation, at the follower's tail.
    const deposed = await c.peer(bystander.id, leader.id);
    try {
      const answer = await deposed.call(
        batch(c, deposed, before.generation, held.length, ['stale']),
      );
      expect(answer).toMatchObject({ kind: 'ReplicateError', code: INTERNAL_ERROR.FencedEpoch });
    } finally {
      await deposed.close();
    }
    expect(await heldRecords(bystander, STREAM)).toEqual(held);
    // Once it leads (the new leader gone too, the old one back), it serves no `stale`. The old
    // one is back in the set first: the dead one was dropped, and a set of two that loses its
    // leader waits for it (docs/replication.md, "Quorum sets change one step at a time"; CI
    // under load: killed before the set regrew, the bystander fenced a dead member until the
    // deadline). Cut off from the new leader, the old one falls behind a record acked by the
    // bystander, so the bystander is the only member the control plane may promote.
    await c.start(leader.id);
    const whole = await waitFor(
      async () => {
        const a = await assignmentOf(c);
        return a.leader === promoted.leader && a.replicas.length === 3 ? a : undefined;
      },
      'the old leader back in the replica set',
      scaled(STEP_MS),
    );
    await c.partition(promoted.leader, leader.id);
    await publishOn(c, c.node(promoted.leader), ['ahead']);
    await waitFor(
      async () => {
        const r = await storedReport(c, 'stream', STREAM, whole.generation);
        const at = (id: string) => r?.replica_offsets.find((o) => o.node_id === id)?.durable_offset;
        return r !== undefined && r.commit_offset >= held.length + 1
          ? (at(bystander.id) ?? 0) >= r.commit_offset && (at(leader.id) ?? 0) < r.commit_offset
          : false;
      },
      'a report naming the bystander, not the old leader, at the commit mark',
      scaled(STEP_MS),
    );
    await c.kill(promoted.leader);
    await c.heal();
    await waitFor(
      async () => (await c.leaderOf(STREAM))?.id === bystander.id,
      'the bystander to lead',
      scaled(STEP_MS),
    );
    expect(await readAll(c, bystander, 'after')).toEqual([...first, 'after']);
  }, 300_000);

  it('a_resent_batch_is_byte_compared_not_appended_twice', async () => {
    const { c, before, leader, followers } = await quorumStream(holder);
    const follower = followers[0]!;
    await publishOn(c, leader, first);
    const held = await holding(follower, first, 'the follower to hold every record');
    // The leader's own name and generation: what its shipper sends again after a lost answer.
    const resender = await c.peer(follower.id, leader.id);
    const gen = before.generation;
    try {
      for (let i = 0; i < 2; i++) {
        expect(await resender.call(batch(c, resender, gen, 0, first))).toMatchObject({
          kind: 'ReplicateOk',
          durableOffset: first.length,
        });
      }
      expect(await resender.call(batch(c, resender, gen, 7, first.slice(7)))).toMatchObject({
        kind: 'ReplicateOk',
        durableOffset: first.length,
      });
      // The same offsets with other bytes at the same generation: a conflict, nothing written.
      expect(await resender.call(batch(c, resender, gen, 8, ['c-8', 'zz']))).toMatchObject({
        kind: 'ReplicateError',
        code: INTERNAL_ERROR.LogConflict,
        expectedOffset: 9,
      });
    } finally {
      await resender.close();
    }
    expect(await heldRecords(follower, STREAM)).toEqual(held);
    // The real leader ships on past them: each record once, in order.
    await publishOn(c, leader, ['c-10']);
    const after = await holding(follower, [...first, 'c-10'], 'the follower to hold c-10');
    expect(after.map((r) => r.offset)).toEqual([...first, 'c-10'].map((_, i) => i));
  }, 300_000);

  it('nothing_at_or_below_the_commit_offset_is_ever_truncated', async () => {
    const { c, before, leader, followers } = await quorumStream(holder);
    await publishOn(c, leader, first);
    // Both followers saved a commit offset covering every record (the mark travels with the
    // batches, and alone once they hold everything).
    for (const f of followers) {
      await waitFor(
        async () => (await savedCommit(f)) >= first.length,
        `${f.id} to save a commit offset of ${first.length}`,
        scaled(STEP_MS),
      );
    }
    await c.kill(leader.id);
    const promoted = await promotion(c, before);
    await publishOn(c, c.node(promoted.leader), ['after']);
    const bystander = followers.find((f) => f.id !== promoted.leader)!;
    const held = await holding(
      bystander,
      [...first, 'after'],
      'the bystander to hold every record',
    );
    // Once the new leader reported, the dead one leaves the set at a newer generation (a quorum
    // failover changes only the leader): the forged batches speak at that one.
    const settled = await waitFor(
      async () => {
        const a = await assignmentOf(c);
        return a.replicas.includes(leader.id) ? undefined : a;
      },
      'the dead leader to leave the set',
      scaled(STEP_MS),
    );
    // The new leader's name and generation, newer than the generation that wrote the records:
    // a conflict at or below the commit offset is the one a newer leader may never repair.
    const newer = await c.peer(bystander.id, promoted.leader);
    try {
      for (const at of [0, first.length - 1]) {
        const forged = batch(c, newer, settled.generation, at, ['forged', 'forged-too']);
        expect(await newer.call(forged)).toMatchObject({
          kind: 'ReplicateError',
          code: INTERNAL_ERROR.LogConflict,
          expectedOffset: at,
        });
      }
    } finally {
      await newer.close();
    }
    expect(await heldRecords(bystander, STREAM)).toEqual(held);
    expect(await readAll(c, c.node(promoted.leader), 'after')).toEqual([...first, 'after']);
  }, 300_000);

  it('a_divergent_uncommitted_suffix_is_truncated_on_return', async () => {
    const { c, before, leader, followers } = await quorumStream(holder);
    await publishOn(c, leader, first);
    // The control plane holds a report whose commit mark covers them: both followers qualify.
    await waitFor(
      async () => {
        const r = await reportOf(c);
        return (
          r?.commit_offset === first.length &&
          r.replica_offsets.every((o) => o.durable_offset === first.length)
        );
      },
      'a report of the commit mark at every record',
      scaled(STEP_MS),
    );
    // Cut from both followers (not from the control plane): what it writes now stays its own,
    // above the commit mark, its publishers never acked.
    for (const f of followers) await c.partition(leader.id, f.id);
    const client = await c.connect({ servers: [leader.url()] });
    const divergent = ['x-0', 'x-1', 'x-2'];
    const pending = divergent.map((v) =>
      client.publish(STREAM, v).then(
        () => 'acked',
        () => 'refused',
      ),
    );
    await holding(leader, [...first, ...divergent], 'the leader to hold its divergent suffix');
    await c.kill(leader.id);
    expect(await Promise.all(pending)).toEqual(['refused', 'refused', 'refused']);
    await client.close().catch(() => undefined); // its broker is gone
    await c.heal();
    const promoted = await promotion(c, before);
    const next = c.node(promoted.leader);
    const fresh = Array.from({ length: 5 }, (_, i) => `n-${i}`);
    await publishOn(c, next, fresh);
    const successor = await holding(next, [...first, ...fresh], 'the new leader to hold its log');
    // Back as a follower of the newer generation: it must end with exactly the new leader's
    // log, its own suffix above the mark gone and the committed prefix untouched.
    await c.start(leader.id);
    await waitFor(
      async () => JSON.stringify(await heldRecords(leader, STREAM)) === JSON.stringify(successor),
      "the returned leader to hold exactly the new leader's log",
      scaled(STEP_MS),
    );
    await c.stop(leader.id);
    const back = await heldRecords(leader, STREAM);
    expect(back).toEqual(successor);
    expect(valuesOf(back)).toEqual([...first, ...fresh]);
  }, 300_000);
});

interface StoredReport {
  stream: string;
  commit_offset: number;
  leader_offset: number;
  replica_offsets: { node_id: string; durable_offset: number }[];
}

/** The control plane's stored replica report of the stream's shard 0, when there is one. */
async function reportOf(c: FelixCluster): Promise<StoredReport | undefined> {
  const page = (await c.operatorGet('/v1/replica-reports')) as { items: StoredReport[] };
  return page.items.find((r) => r.stream === STREAM);
}
