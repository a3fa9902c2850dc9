// Goal: a broker stopping with SIGTERM hands the shards it leads to caught-up followers before it
// exits, so a rolling restart of every broker of a `quorum` stream loses no acknowledged write,
// and no publish is refused for longer than a hand-off (well under the failover path's
// expiry + margin of silence, which a restart without the hand-off waits for).
// Method: 3 real brokers with internal listeners, a 1-shard durable stream at replication
// factor 3 under `quorum`; one publisher keeps publishing (each attempt a fresh value, awaited;
// a refused one is retried with the next value after a short pause) while each broker is
// restarted in turn: SIGTERM, down until 20 more publishes were acked (an upgrade takes a
// while; a broker back within a second would find its own shards waiting and hide the
// difference), then started, the cluster served again before the next. The leader's shard
// must have moved away while it was down. At the end every acked value is read back from
// offset 0, exactly once each. Without the hand-off the refused stretch is L + margin or more.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { scaled, startCluster } from '../src/index.js';
import { CP_EXPIRY_TIMEOUT_MS } from '../src/limits.js';
import { clusterPerTest, readUpTo } from './support.js';

const RETRY_PAUSE_MS = 50;
const READ_DEADLINE_MS = 60_000;
const ACKS_PER_STEP = 20;

interface PublishRun {
  acked: string[];
  refused: number;
  /** The longest stretch from a first refusal to the next ack, in ms. */
  longestRefusedMs: number;
  /** The longest stretch between two acks (refusals and slow publishes alike), in ms. */
  longestGapMs: number;
  stop(): Promise<void>;
}

/** Publishes fresh values one at a time until stopped, recording acks and refused stretches. */
function publishUntilStopped(publish: (v: string) => Promise<unknown>): PublishRun {
  let stopped = false;
  const run: PublishRun = {
    acked: [],
    refused: 0,
    longestRefusedMs: 0,
    longestGapMs: 0,
    stop: async () => {},
  };
  const loop = (async () => {
    let i = 0;
    let refusedSince: number | null = null;
    let lastAck: number | null = null;
    while (!stopped) {
      const v = `rec-${i++}`;
      try {
        await publish(v);
        run.acked.push(v);
        const now = performance.now();
        if (lastAck !== null) run.longestGapMs = Math.max(run.longestGapMs, now - lastAck);
        lastAck = now;
        if (refusedSince !== null) {
          run.longestRefusedMs = Math.max(run.longestRefusedMs, performance.now() - refusedSince);
          refusedSince = null;
        }
      } catch {
        // Refused or unknown: never counted as acked; retried with the next value after a pause.
        run.refused++;
        refusedSince ??= performance.now();
        await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
      }
    }
  })();
  run.stop = async () => {
    stopped = true;
    await loop;
  };
  return run;
}

/** Waits until `ACKS_PER_STEP` more publishes were acked. */
async function acksGrow(run: PublishRun, what: string): Promise<void> {
  const before = run.acked.length;
  await waitFor(async () => run.acked.length >= before + ACKS_PER_STEP, what, scaled(30_000));
}

describe('hand-off on SIGTERM', () => {
  const holder = clusterPerTest();

  it('a_rolling_restart_loses_no_acknowledged_write', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'orders', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
    });
    holder.cluster = c;
    const client = await c.connect();
    const run = publishUntilStopped((v) => client.publish('orders', v));
    const moves: string[] = [];
    const pending = c.nodes.map((n) => n.id);
    while (pending.length > 0) {
      // The current leader first while it has not been restarted: as many hand-offs as can be.
      const lead = (await c.leaderOf('orders'))?.id;
      const id = pending.includes(lead ?? '') ? lead! : pending[0]!;
      pending.splice(pending.indexOf(id), 1);
      const node = c.node(id);
      await acksGrow(run, 'publishes to be acked before the restart');
      const leader = (await c.leaderOf('orders'))!.id;
      // The restart, with the broker down a while (an upgrade): SIGTERM, writes go on elsewhere,
      // then it starts again. Without the hand-off its shard would wait out L + margin.
      await c.stop(node.id);
      await acksGrow(run, `publishes to be acked while ${node.id} is down`);
      const now = (await c.leaderOf('orders'))?.id;
      if (leader === node.id) {
        moves.push(`${leader}->${now}`);
        expect(now).not.toBe(node.id);
      }
      await c.start(node.id);
      await c.waitServed();
    }
    await acksGrow(run, 'publishes after the last restart');
    await run.stop();
    expect(moves.length).toBeGreaterThanOrEqual(2);
    const last = run.acked[run.acked.length - 1]!;
    const reader = await c.connect({ servers: [(await c.leaderOf('orders'))!.url()] });
    const seen = await waitFor(
      () => readUpTo(reader, 'orders', last),
      'every acked record to be readable',
      scaled(READ_DEADLINE_MS),
    );
    const counts = new Map<string, number>();
    for (const v of seen) counts.set(v, (counts.get(v) ?? 0) + 1);
    const lost = run.acked.filter((v) => counts.get(v) !== 1);
    console.log(
      `acked ${run.acked.length}, refused ${run.refused}, longest refused run ${Math.round(run.longestRefusedMs)} ms, longest gap between acks ${Math.round(run.longestGapMs)} ms, moves ${moves.join(',')}`,
    );
    expect(lost).toEqual([]);
    // The failover path refuses for at least expiry + margin (L + L/4) of silence; a hand-off
    // moves the shard at once, so the longest refused stretch, and the longest wait between two
    // acks (a client may also hold a publish while it looks for the new owner), stay below that.
    expect(run.longestRefusedMs).toBeLessThan(CP_EXPIRY_TIMEOUT_MS * 1.25);
    expect(run.longestGapMs).toBeLessThan(CP_EXPIRY_TIMEOUT_MS * 1.25);
    await reader.close();
    await client.close();
  }, 600_000);
});
