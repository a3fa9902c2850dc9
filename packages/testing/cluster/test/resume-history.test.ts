// Goal: a subscriber of a `quorum` stream that resumes on a new leader after a failover gets
// each record once (docs/replication.md, "Readers"), also when its first leader's generation
// changed meanwhile only because its follower set did (a follower dropped while paused, then
// added back: the same leader, no fence, no generation-start record). Found by a 120 s
// campaign (seed 1472277018): the followers dated each such generation from their tail, so the
// promoted one told the resuming reader, whose history named the leader's first generation,
// that the log parted there, and the reader got about 180 records again.
// Method: 3 real brokers, a 1-shard `quorum` stream at replication factor 3, a cluster-aware
// reader from earliest; records published and read; a follower paused until the control plane
// drops it from the set (a new generation of the same leader) and resumed until it is added
// back (another), with records published and read in each; the leader SIGKILLed; more records
// published through the promoted follower. The reader must see every offset once, in order, and
// no `diverged` status.
import type { StatusEvent, StreamEvent } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, publishAll } from './support.js';

const STEP_MS = 60_000;
const TEXT = new TextDecoder();
const BATCH = 10;

async function assignment(c: FelixCluster) {
  const a = (await c.assignments()).find((x) => x.stream === 'orders');
  if (a?.leader === undefined) throw new Error('orders is not placed');
  return a;
}

describe('a resume after a failover', () => {
  const held = clusterPerTest();

  it('a_resumed_subscription_gets_no_record_twice_after_its_leader_changed_followers_and_failed_over', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'orders', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
    });
    held.cluster = c;
    const first = await assignment(c);
    const leader = c.node(first.leader);
    const [paused, promoted] = first.replicas
      .filter((id) => id !== leader.id)
      .map((id) => c.node(id));
    const reader = await c.connect({
      servers: [promoted!.url()],
      failoverDeadlineMs: scaled(STEP_MS),
    });
    const writer = await c.connect({ servers: [leader.url()], routing: false });
    const got: StreamEvent[] = [];
    const statuses: StatusEvent[] = [];
    const ac = new AbortController();
    void (async () => {
      for await (const s of reader.status({ signal: ac.signal })) statuses.push(s);
    })().catch(() => undefined); // ends with the reader
    const reading = (async () => {
      for await (const ev of reader.subscribe('orders', {
        shard: 0,
        from: 'earliest',
        signal: ac.signal,
      }))
        got.push(ev);
    })().catch(() => undefined); // aborted at the end; the checks below judge what was read
    const sent: string[] = [];
    const round = async (label: string, via = writer) => {
      const values = Array.from({ length: BATCH }, (_, i) => `${label}-${i}`);
      await publishAll(via, 'orders', values);
      sent.push(...values);
      await waitFor(() => got.length >= sent.length, `${label} read`, scaled(STEP_MS));
    };
    try {
      await round('first');
      // The same leader at a newer generation twice: the paused follower dropped, then back.
      await c.pause(paused!.id);
      const dropped = await waitFor(
        async () => {
          const a = await assignment(c);
          return a.leader === leader.id && !a.replicas.includes(paused!.id) ? a : undefined;
        },
        'the paused follower dropped from the set',
        scaled(STEP_MS),
      );
      expect(dropped.generation).toBeGreaterThan(first.generation);
      await round('without');
      await c.resume(paused!.id);
      const back = await waitFor(
        async () => {
          const a = await assignment(c);
          return a.leader === leader.id && a.replicas.includes(paused!.id) ? a : undefined;
        },
        'the follower added back',
        scaled(STEP_MS),
      );
      expect(back.generation).toBeGreaterThan(dropped.generation);
      await round('back');
      await c.kill(leader.id);
      await writer.close().catch(() => undefined); // its broker is gone
      await waitFor(
        async () => {
          const a = (await c.assignments()).find((x) => x.stream === 'orders');
          return a?.leader !== undefined && a.leader !== leader.id;
        },
        'a follower promoted',
        scaled(STEP_MS),
      );
      const after = await c.connect({ servers: [promoted!.url(), paused!.url()] });
      try {
        await round('after', after);
      } finally {
        await after.close();
      }
    } finally {
      ac.abort();
      await reading;
      await reader.close();
    }
    expect(got.map((e) => TEXT.decode(e.data))).toEqual(sent);
    expect(got.map((e) => e.offset)).toEqual([...got.map((e) => e.offset)].sort((a, b) => a - b));
    expect(statuses.filter((s) => s.type === 'diverged')).toEqual([]);
  }, 300_000);
});
