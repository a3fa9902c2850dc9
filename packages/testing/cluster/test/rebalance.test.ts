// Goal: after a rolling restart, each `quorum` shard's leadership returns to its preferred
// broker (the one a fresh placement made its leader) once that broker has been back for the
// control plane's rebalance delay, with no acknowledged write lost and no wait between acks as
// long as the failover path's. Without it, the broker restarted last leads nothing it led.
// Method: 3 real brokers with internal listeners, a 3-shard durable stream at replication
// factor 3 under `quorum`, the control plane's rebalance delay shortened to REBALANCE_DELAY_MS.
// One publisher keeps publishing keyed values (spread over the shards, each awaited) while each
// broker is restarted in turn with SIGTERM, one that leads a shard last. Then every shard must
// be led by its first leader again within a deadline, and every acked value read back from its
// shard exactly once. The same for a 1-shard `quorum` cache: its leader stopped and started
// again gets the shard back, and every value and counter sum written on either side survives.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type FelixCluster, scaled, startCluster } from '../src/index.js';
import { CP_EXPIRY_TIMEOUT_MS } from '../src/limits.js';
import { acksGrow, clusterPerTest, publishUntilStopped, readUpTo, text } from './support.js';

const REBALANCE_DELAY_MS = 2_000;
const SHARDS = 3;

/** Each shard's leader, by shard. */
async function leadersOf(c: FelixCluster, name = 'orders'): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (const a of await c.assignments()) if (a.stream === name) out.set(a.shard, a.leader);
  return out;
}

describe('leaders return to their preferred brokers', () => {
  const holder = clusterPerTest();

  it('leaders_return_to_their_preferred_brokers_after_a_rolling_restart_without_losing_an_acknowledged_write', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'orders', shards: SHARDS, replicationFactor: 3, consistency: 'quorum' }],
      controlPlaneEnv: { FELIX_CONTROLPLANE_LEADER_REBALANCE_DELAY_MS: String(REBALANCE_DELAY_MS) },
    });
    holder.cluster = c;
    await c.waitServed();
    const preferred = await leadersOf(c);
    expect(preferred.size).toBe(SHARDS);
    const client = await c.connect();
    const shardOf = new Map<string, number>();
    const run = publishUntilStopped(async (v) => {
      const r = await client.publish('orders', v, { key: v });
      shardOf.set(v, r.shard!);
    });
    // A broker that leads a shard goes last: nothing but the rebalance gives its shards back.
    const leading = new Set(preferred.values());
    const order = [...c.nodes.map((n) => n.id)].sort(
      (a, b) => Number(leading.has(a)) - Number(leading.has(b)),
    );
    let displaced = 0;
    for (const id of order) {
      await acksGrow(run, `publishes to be acked before ${id} stops`);
      await c.stop(id);
      await acksGrow(run, `publishes to be acked while ${id} is down`);
      const now = await leadersOf(c);
      displaced = Math.max(
        displaced,
        [...now].filter(([shard, leader]) => preferred.get(shard) !== leader).length,
      );
      await c.start(id);
      await c.waitServed();
    }
    expect(displaced).toBeGreaterThan(0);
    const returnedIn = performance.now();
    await waitFor(
      async () => {
        const now = await leadersOf(c);
        return [...preferred].every(([shard, leader]) => now.get(shard) === leader);
      },
      'every shard to be led by its preferred broker again',
      scaled(REBALANCE_DELAY_MS + 30_000),
    );
    const backMs = performance.now() - returnedIn;
    await acksGrow(run, 'publishes after the leaders returned');
    await run.stop();
    const reader = await c.connect();
    const lost: string[] = [];
    for (let shard = 0; shard < SHARDS; shard++) {
      const mine = run.acked.filter((v) => shardOf.get(v) === shard);
      if (mine.length === 0) continue;
      const seen = await waitFor(
        () => readUpTo(reader, 'orders', mine[mine.length - 1]!, shard),
        `every acked record of shard ${shard} to be readable`,
        scaled(60_000),
      );
      const counts = new Map<string, number>();
      for (const v of seen) counts.set(v, (counts.get(v) ?? 0) + 1);
      lost.push(...mine.filter((v) => counts.get(v) !== 1));
    }
    console.log(
      `acked ${run.acked.length}, refused ${run.refused}, displaced ${displaced}, back ${Math.round(backMs)} ms after the last restart, longest gap between acks ${Math.round(run.longestGapMs)} ms`,
    );
    expect(lost).toEqual([]);
    // A move back is a fence over live members, far shorter than the failover path's wait.
    expect(run.longestGapMs).toBeLessThan(CP_EXPIRY_TIMEOUT_MS * 1.25);
    await reader.close();
    await client.close();
  }, 600_000);

  it('a_quorum_caches_leadership_returns_to_its_preferred_broker_with_every_value_and_sum', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      caches: [{ name: 'sessions', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
      controlPlaneEnv: { FELIX_CONTROLPLANE_LEADER_REBALANCE_DELAY_MS: String(REBALANCE_DELAY_MS) },
    });
    holder.cluster = c;
    await c.waitServed();
    const first = (await leadersOf(c, 'sessions')).get(0)!;
    const client = await c.connect();
    const cache = client.cache('sessions');
    const counter = client.counter('sessions');
    /** Puts `k0..k9` = `${round}-i` and adds 1 to `hits`, each retried until acked. */
    const writeRound = async (round: string) => {
      for (let i = 0; i < 10; i++) {
        await waitFor(
          () =>
            cache.put(`k${i}`, `${round}-${i}`).then(
              () => true,
              () => false,
            ),
          `put k${i} in round ${round}`,
          scaled(30_000),
        );
      }
      await waitFor(
        () =>
          counter.add('hits', 1n).then(
            () => true,
            () => false,
          ),
        `an add in round ${round}`,
        scaled(30_000),
      );
    };
    await writeRound('before');
    await c.stop(first);
    await waitFor(
      async () => (await leadersOf(c, 'sessions')).get(0) !== first,
      'the cache shard to be handed off',
      scaled(30_000),
    );
    await writeRound('away');
    await c.start(first);
    await c.waitServed();
    await waitFor(
      async () => (await leadersOf(c, 'sessions')).get(0) === first,
      'the cache shard to be led by its preferred broker again',
      scaled(REBALANCE_DELAY_MS + 30_000),
    );
    await writeRound('back');
    const values = await waitFor(
      async () => {
        const got = await Promise.all(
          Array.from({ length: 10 }, (_, i) => cache.get(`k${i}`).then(text, () => 'refused')),
        );
        return got.includes('refused') ? undefined : got;
      },
      'every value to be readable',
      scaled(30_000),
    );
    expect(values).toEqual(Array.from({ length: 10 }, (_, i) => `back-${i}`));
    expect(await counter.get('hits')).toBe(3n);
    await client.close();
  }, 600_000);
});
