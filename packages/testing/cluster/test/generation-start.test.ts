// Goal: a follower promoted to lead a `quorum` stream starts its generation with a
// generation-start record that every replica holds at the same offset, which no reader ever
// sees: a subscriber reading through the failover gets every record once with no gap reported, a
// consumer group hands out every record and never that one, and the user records keep their
// offsets (the record takes one offset between them). And the new leader serves the shard only
// once a majority holds that record: with its only live follower paused right after the fence,
// it holds the record but refuses readers and writers, and serves everything once the follower
// resumes.
// Method: 3-broker clusters from startCluster with internal listeners, a 1-shard stream at
// replication factor 3 and `quorum` consistency; the leader is SIGKILLed; each replica's log is
// read from its data directory with the storage log tool (`dump`, read-only, flags included).
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { StatusEvent, StreamEvent } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type ClusterNode, type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, metricOf, publishAll } from './support.js';

const run = promisify(execFile);
const LOG_TOOL = resolve(import.meta.dirname, '../../../storage/dist/log-tool.js');
const TEXT = new TextDecoder();
const DEADLINE_MS = 60_000;
const FLAG_GENERATION_START = 0x2000_0000;

interface Dumped {
  offset: number;
  flags: number;
  payload: Buffer;
}

/** The stream shard directory of `stream` shard 0 in a node's data directory. */
async function shardDir(node: ClusterNode, stream: string): Promise<string | undefined> {
  const root = join(node.dataDir, 'streams');
  const dir = (await readdir(root).catch(() => [] as string[])).find((d) =>
    d.includes(`_${stream}_0-`),
  );
  return dir === undefined ? undefined : join(root, dir);
}

/** Every record one replica's log holds, generation starts included. */
async function dump(node: ClusterNode, stream: string): Promise<Dumped[]> {
  const dir = await shardDir(node, stream);
  if (dir === undefined) return [];
  const { stdout } = await run(process.execPath, [LOG_TOOL, 'dump', dir]);
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { offset: number; flags: number; payload: string })
    .map((r) => ({ offset: r.offset, flags: r.flags, payload: Buffer.from(r.payload, 'base64') }));
}

function generationStarts(records: Dumped[]): { offset: number; generation: number }[] {
  return records
    .filter((r) => (r.flags & FLAG_GENERATION_START) !== 0)
    .map((r) => ({ offset: r.offset, generation: Number(r.payload.readBigUInt64BE(0)) }));
}

async function quorumStream(holder: { cluster: FelixCluster | undefined }) {
  const c = await startCluster({
    brokers: 3,
    replication: true,
    streams: [{ name: 'orders', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
    // A replica holds a record once synced under `onCommit` (once written under `periodic`):
    // a slowed fsync then keeps a follower from holding the generation start.
    env: { FELIX_DURABLE_FSYNC_MODE: 'onCommit' },
  });
  holder.cluster = c;
  const leader = (await c.leaderOf('orders'))!;
  const before = (await c.assignments()).find((a) => a.stream === 'orders')!;
  const followers = c.nodes.filter((n) => n.id !== leader.id);
  return { c, leader, before, followers };
}

async function promotion(c: FelixCluster, leader: ClusterNode, generation: number) {
  return waitFor(
    async () => {
      const a = (await c.assignments()).find((x) => x.stream === 'orders');
      return a && a.leader !== leader.id && a.generation > generation ? a : undefined;
    },
    'a follower to be promoted',
    scaled(DEADLINE_MS),
  );
}

describe('generation-start records between brokers', () => {
  const holder = clusterPerTest();

  it('readers_never_see_a_generation_start_record_and_user_records_keep_their_offsets', async () => {
    const { c, leader, before, followers } = await quorumStream(holder);
    const seed = followers[0]!;
    const client = await c.connect({
      servers: [seed.url()],
      failoverDeadlineMs: scaled(DEADLINE_MS * 2),
    });
    const gaps: StatusEvent[] = [];
    const statusAc = new AbortController();
    void (async () => {
      for await (const ev of client.status({ signal: statusAc.signal }))
        if (ev.type === 'gap') gaps.push(ev);
    })().catch(() => {
      // Aborted at the end of the test: the gaps seen are the result.
    });
    const got: StreamEvent[] = [];
    const ac = new AbortController();
    const reading = (async () => {
      for await (const ev of client.subscribe('orders', {
        shard: 0,
        from: 'earliest',
        signal: ac.signal,
      }))
        got.push(ev);
    })().catch(() => {
      // Aborted at the end of the test: what was read is the result.
    });
    const first = Array.from({ length: 10 }, (_, i) => `a-${i}`);
    const second = Array.from({ length: 5 }, (_, i) => `b-${i}`);
    try {
      await waitFor(() => client.brokers.length === 3, 'the topology', scaled(DEADLINE_MS));
      for (const v of first) await client.publish('orders', v);
      // Acked under quorum: a majority holds them, so any promoted follower does too.
      await waitFor(() => got.length >= first.length, 'the first records', scaled(DEADLINE_MS));
      await c.kill(leader.id);
      const promoted = await promotion(c, leader, before.generation);
      const writer = await c.connect({ servers: [c.node(promoted.leader).url()] });
      await publishAll(writer, 'orders', second);
      await writer.close();
      const total = first.length + second.length;
      await waitFor(() => got.length >= total, 'every record read', scaled(DEADLINE_MS * 2));
      // The new leader's generation start sits at offset 10 on both live replicas.
      for (const n of followers) {
        const starts = await waitFor(
          async () => {
            const s = generationStarts(await dump(n, 'orders'));
            return s.length > 0 ? s : undefined;
          },
          `${n.id} to hold the generation start`,
          scaled(DEADLINE_MS),
        );
        expect(starts).toEqual([{ offset: first.length, generation: promoted.generation }]);
      }
      const offsets = got.map((e) => e.offset);
      expect(offsets).toEqual([
        ...first.map((_, i) => i),
        ...second.map((_, i) => first.length + 1 + i),
      ]);
      expect(got.map((e) => TEXT.decode(e.data))).toEqual([...first, ...second]);
      expect(got.every((e) => e.lostBefore === 0)).toBe(true);
      expect(gaps).toEqual([]);
      // A consumer group on the new leader hands out every record, and never the start.
      const group = client.group('orders', 'readers');
      const polled: { offset: number; value: string }[] = [];
      await waitFor(
        async () => {
          for (const m of await group.poll({ max: 100, waitMs: 0 })) {
            polled.push({ offset: m.offset, value: TEXT.decode(m.payload) });
            await m.ack();
          }
          return polled.length >= total;
        },
        'the group to hand out every record',
        scaled(DEADLINE_MS),
      );
      expect(polled.map((p) => p.offset)).toEqual(offsets);
      expect(polled.map((p) => p.value)).toEqual([...first, ...second]);
      // Its cursor passes the start (which no ack finishes): every offset is behind it.
      await waitFor(
        async () => (await group.describe()).committed === total + 1,
        'the group cursor past every offset',
        scaled(DEADLINE_MS),
      );
    } finally {
      ac.abort();
      statusAc.abort();
      await reading;
      await client.close();
    }
  }, 300_000);

  it('a_subscriber_resuming_at_a_new_leaders_generation_start_hears_of_no_loss', async () => {
    // A reader that had every record up to offset 2 resumes at 3 on the promoted leader, after
    // it opened (its generation start now at 3) and before anything else is published there.
    const { c, leader, before } = await quorumStream(holder);
    const first = await c.connect({ servers: [leader.url()] });
    await publishAll(first, 'orders', ['a-0', 'a-1', 'a-2']);
    await first.close();
    await c.kill(leader.id);
    const promoted = await promotion(c, leader, before.generation);
    const client = await c.connect({ servers: [c.node(promoted.leader).url()] });
    const ac = new AbortController();
    try {
      const sub = await waitFor(
        async () => {
          const attempt = new AbortController();
          ac.signal.addEventListener('abort', () => attempt.abort());
          const s = client.subscribe('orders', { shard: 0, from: 3, signal: attempt.signal });
          try {
            await s.ready();
            return s;
          } catch {
            // Refused while the new leader opens: a new subscription, once it serves.
            attempt.abort();
            return undefined;
          }
        },
        'the subscription to open on the new leader',
        scaled(DEADLINE_MS),
      );
      await client.publish('orders', 'b-0');
      const next = await sub[Symbol.asyncIterator]().next();
      expect(next.done).toBe(false);
      const ev = next.value as StreamEvent;
      // Offset 3 holds the generation start, which no reader is given, and nothing was lost.
      expect({ offset: ev.offset, value: TEXT.decode(ev.data), lostBefore: ev.lostBefore }).toEqual(
        { offset: 4, value: 'b-0', lostBefore: 0 },
      );
    } finally {
      ac.abort();
      await client.close();
    }
  }, 240_000);

  it('a_promoted_leader_serves_nothing_until_a_majority_holds_its_generation_start', async () => {
    const { c, leader, before, followers } = await quorumStream(holder);
    const [ahead, behind] = followers as [ClusterNode, ClusterNode];
    const client = await c.connect({ servers: [leader.url()] });
    // One follower cut from the leader: every ack needs the other, which is then the most caught
    // up and the one promoted.
    await c.partition(leader.id, behind.id);
    const first = Array.from({ length: 10 }, (_, i) => `a-${i}`);
    await publishAll(client, 'orders', first);
    await client.close();
    await waitFor(
      async () => {
        const page = (await c.operatorGet('/v1/replica-reports')) as { items: StoredReport[] };
        const r = page.items.find((x) => x.stream === 'orders');
        const at = r?.replica_offsets.find((o) => o.node_id === ahead.id)?.durable_offset;
        return r?.leader_offset === first.length && at === first.length;
      },
      'a replica report naming the caught-up follower',
      scaled(DEADLINE_MS),
    );
    // The follower left behind answers the new leader's fence, but every later write of its
    // (the generation start among them) takes a while to reach its disk.
    // Long enough that no load lets it end before the test heals it (a heal releases it).
    await c.slowFsync(behind.id, scaled(20_000));
    await c.kill(leader.id);
    await c.heal();
    const promoted = await promotion(c, leader, before.generation);
    expect(promoted.leader).toBe(ahead.id);
    // The new leader fenced a majority and wrote its generation start: it holds it, and still
    // serves nothing (readers and writers are refused not_ready) while no follower holds it.
    const starts = await waitFor(
      async () => {
        const s = generationStarts(await dump(ahead, 'orders'));
        return s.length > 0 ? s : undefined;
      },
      'the new leader to write its generation start',
      scaled(DEADLINE_MS),
    );
    expect(starts).toEqual([{ offset: first.length, generation: promoted.generation }]);
    expect(await metricOf(ahead, 'felix_broker_cluster_shards_held')).toBe(0);
    await c.healFsync(behind.id);
    await waitFor(
      async () => (await metricOf(ahead, 'felix_broker_cluster_shards_held')) === 1,
      'the new leader to serve once a majority holds its generation start',
      scaled(DEADLINE_MS),
    );
    const writer = await c.connect({ servers: [ahead.url()] });
    await publishAll(writer, 'orders', ['b-0']);
    const got: StreamEvent[] = [];
    const ac = new AbortController();
    try {
      for await (const ev of writer.subscribe('orders', {
        shard: 0,
        from: 'earliest',
        signal: ac.signal,
      })) {
        got.push(ev);
        if (got.length === first.length + 1) break;
      }
    } finally {
      ac.abort();
      await writer.close();
    }
    expect(got.map((e) => e.offset)).toEqual([...first.map((_, i) => i), first.length + 1]);
    expect(got.map((e) => TEXT.decode(e.data))).toEqual([...first, 'b-0']);
    // The follower that was behind holds the same log, generation start included.
    expect(generationStarts(await dump(behind, 'orders'))).toEqual(starts);
  }, 300_000);
});

interface StoredReport {
  stream: string;
  leader_offset: number;
  replica_offsets: { node_id: string; durable_offset: number }[];
}
