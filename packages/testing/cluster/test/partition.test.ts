// Goal: a partition cuts exactly the links it names, both ways, and heal restores them: brokers
// n0 and n1 cut from each other report each other unreachable while n2 still reaches both; n0
// cut from the control plane reports it unreachable; after heal every link is up again.
// Method: a real 3-broker cluster from startCluster; the brokers' own gauges
// (felix_broker_peer_reachable{peer}, felix_broker_controlplane_reachable) read from /metrics.
// Needs the broker's fault seams (docs/reliability.md, "Fault seams in the broker").
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type FelixCluster, scaled, startCluster } from '../src/index.js';
import { clusterPerTest, gauge } from './support.js';

const SETTLE_MS = 20_000;

/** Peer reachability as n<i> sees n<j>: 1, 0 or NaN (no such gauge). */
async function reach(c: FelixCluster, from: number, to: number): Promise<number> {
  const page = await (await fetch(`http://127.0.0.1:${c.nodes[from]?.httpPort}/metrics`)).text();
  return gauge(page, 'felix_broker_peer_reachable', `{peer="n${to}"}`);
}

async function cpReach(c: FelixCluster, from: number): Promise<number> {
  const page = await (await fetch(`http://127.0.0.1:${c.nodes[from]?.httpPort}/metrics`)).text();
  return gauge(page, 'felix_broker_controlplane_reachable');
}

/** Waits until every listed link reads as expected: [from, to, value]. */
async function links(c: FelixCluster, want: [number, number, number][], what: string) {
  await waitFor(
    async () => {
      const got = await Promise.all(want.map(([a, b]) => reach(c, a, b)));
      if (got.every((v, i) => v === want[i]?.[2])) return true;
      // Thrown, so the deadline's error carries the last reading as its cause.
      throw new Error(`links [from, to, want] ${JSON.stringify(want)} read ${JSON.stringify(got)}`);
    },
    what,
    scaled(SETTLE_MS),
  );
}

describe('startCluster partitions', () => {
  const held = clusterPerTest();

  it('a_partitioned_broker_cannot_reach_its_peers_or_the_control_plane', async () => {
    const c = await startCluster({ brokers: 3, streams: [{ name: 'events', shards: 3 }] });
    held.cluster = c;
    // Every broker was started with its own fault files (their paths are in its log).
    for (const n of c.nodes) {
      const log = await readFile(n.logPath, 'utf8');
      expect(log).toContain(`"partition_file":${JSON.stringify(join(c.dir, n.id, 'partition'))}`);
      const storage = join(c.dir, n.id, 'storage-faults');
      expect(log).toContain(`"storage_fault_file":${JSON.stringify(storage)}`);
    }
    for (const shard of [0, 1, 2]) {
      expect(c.nodes).toContain(await c.leaderOf('events', shard));
    }
    const all: [number, number][] = [
      [0, 1],
      [0, 2],
      [1, 0],
      [1, 2],
      [2, 0],
      [2, 1],
    ];
    await links(
      c,
      all.map(([a, b]) => [a, b, 1]),
      'every peer link up at start',
    );

    await c.partition(0, 1);
    await links(
      c,
      [
        [0, 1, 0],
        [1, 0, 0],
        [2, 0, 1],
        [2, 1, 1],
        [0, 2, 1],
        [1, 2, 1],
      ],
      'n0 and n1 cut from each other only',
    );

    await c.partition(0, 'controlplane');
    await waitFor(async () => (await cpReach(c, 0)) === 0, 'n0 cut from the control plane');
    expect(await cpReach(c, 1)).toBe(1);
    expect(await cpReach(c, 2)).toBe(1);

    await c.heal();
    await links(
      c,
      all.map(([a, b]) => [a, b, 1]),
      'every peer link up after heal',
    );
    await waitFor(
      async () => (await Promise.all([0, 1, 2].map((i) => cpReach(c, i)))).every((v) => v === 1),
      'every broker reaches the control plane after heal',
      scaled(SETTLE_MS),
    );
    expect(c.faults.map((f) => [f.fault, f.target])).toEqual([
      ['partition', 'n0 | n1'],
      ['partition', 'n0 | controlplane'],
      ['heal', 'all'],
    ]);
  });
});
