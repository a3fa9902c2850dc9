// Goal: the harness's storage faults reach a cluster broker's logs: slowFsync holds an onCommit
// publish's ack for at least the delay, failFsync('once') makes a publish refused (`storage`),
// and after healFsync and a restart the broker acks again and still serves every value it acked.
// Method: a real 1-broker cluster from startCluster with onCommit fsyncs
// (FELIX_DURABLE_FSYNC_MODE), @felix/client publishes and a subscription from offset 0.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { scaled, startCluster } from '../src/index.js';
import { clusterPerTest, readUpTo } from './support.js';

const SETTLE_MS = 20_000;
const DELAY_MS = 300;

/** The broker's code of a publish's refusal, or null when it was acked. */
async function refusalOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (err) {
    return String((err as { brokerCode?: string }).brokerCode ?? (err as Error).message);
  }
}

describe('startCluster storage faults', () => {
  const held = clusterPerTest();

  it('a_cluster_brokers_fsync_faults_delay_then_refuse_publishes_until_a_restart', async () => {
    const c = await startCluster({
      brokers: 1,
      streams: [{ name: 'audit', shards: 1 }],
      env: { FELIX_DURABLE_FSYNC_MODE: 'onCommit' },
    });
    held.cluster = c;
    const acked: string[] = [];
    const felix = await c.connect();
    try {
      await c.slowFsync(0, DELAY_MS);
      const t0 = performance.now();
      await felix.publish('audit', 'slow');
      expect(performance.now() - t0).toBeGreaterThanOrEqual(DELAY_MS);
      acked.push('slow');
      await c.healFsync(0);

      await c.failFsync('n0', 'once');
      let n = 0;
      let refused: string | null = null;
      await waitFor(
        async () => {
          const value = `during-${n++}`;
          refused = await refusalOf(felix.publish('audit', value));
          if (refused === null) acked.push(value);
          return refused !== null;
        },
        'a publish refused after failFsync once',
        scaled(SETTLE_MS),
      );
      expect(refused).toBe('storage');
      await c.healFsync(0);
    } finally {
      await felix.close();
    }

    await c.restart(0);
    await c.waitServed();
    const again = await c.connect();
    try {
      await again.publish('audit', 'after-restart');
      const seen = await readUpTo(again, 'audit', 'after-restart');
      // Refused values are outcome-unknown (their bytes may have reached the page cache).
      expect(seen.filter((v) => acked.includes(v))).toEqual(acked);
      expect(c.faults.map((f) => f.fault)).toEqual([
        'slow_fsync',
        'heal_fsync',
        'fail_fsync',
        'heal_fsync',
        'restart',
      ]);
    } finally {
      await again.close();
    }
  });
});
