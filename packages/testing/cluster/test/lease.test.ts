// Goal: a leader cut off from the control plane stops writing before the control plane could
// give its shards away: its lease is 0.75 L from the send of its last accepted heartbeat, and
// the control plane marks it down only after L + margin; it refuses publishes retryably from
// then until a heartbeat is accepted again, and nothing it refused is in the log.
// Method: one real broker and control plane (the harness's L = 3 s, margin L/4), the broker's
// partition file cutting it from the control plane; publishes through a client until refused,
// compared with the control plane's stamp of the broker's last heartbeat; then heal.
import { ShardUnavailableError } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { scaled, startCluster } from '../src/index.js';
import { CP_EXPIRY_TIMEOUT_MS } from '../src/limits.js';
import { clusterPerTest, readUpTo } from './support.js';

const L = CP_EXPIRY_TIMEOUT_MS;
const MARGIN = L / 4;
const DEADLINE_MS = 60_000;

interface NodeView {
  node: { status: { lifecycle: string; last_heartbeat_at_ms: number } };
}

describe('the write lease', () => {
  const held = clusterPerTest();

  it('an_isolated_leader_stops_writing_before_its_lease_lapses', async () => {
    const c = await startCluster({ brokers: 1, streams: [{ name: 'ledger', shards: 1 }] });
    held.cluster = c;
    // routing off: the test times the broker's refusals, not the client's owner lookups.
    const client = await c.connect({ routing: false });
    const acked: string[] = [];
    let n = 0;
    /** One publish: its value when acked, the refusal when refused retryably. */
    const attempt = async (): Promise<ShardUnavailableError | undefined> => {
      const v = `v-${n++}`;
      try {
        await client.publish('ledger', v);
        acked.push(v);
        return undefined;
      } catch (err) {
        if (err instanceof ShardUnavailableError) return err;
        throw err;
      }
    };
    try {
      expect(await attempt()).toBeUndefined();
      await c.partition('n0', 'controlplane');
      const refusal = await waitFor(attempt, 'a publish to be refused', scaled(DEADLINE_MS));
      const refusedAt = Date.now();
      expect(refusal.brokerCode).toBe('shard_unavailable');
      expect(refusal.message).toContain('lease_lapsed');
      const view = (await c.operatorGet('/v1/nodes/n0')) as NodeView;
      const lastBeat = view.node.status.last_heartbeat_at_ms;
      // Stopped before the control plane may mark it down (and free its shard).
      expect(refusedAt).toBeLessThan(lastBeat + L + MARGIN);
      expect(view.node.status.lifecycle).not.toBe('down');
      // Refused from then until the control plane marks it down, every time.
      let refusedWhileUp = 0;
      await waitFor(
        async () => {
          const v = (await c.operatorGet('/v1/nodes/n0')) as NodeView;
          if (v.node.status.lifecycle === 'down') return true;
          expect(await attempt()).toBeInstanceOf(ShardUnavailableError);
          refusedWhileUp++;
          return false;
        },
        'the control plane to mark the isolated broker down',
        scaled(DEADLINE_MS),
      );
      expect(refusedWhileUp).toBeGreaterThan(0);
      // Back in touch: a heartbeat (a re-registration) is accepted and writes resume.
      await c.heal();
      await waitFor(
        async () => (await attempt()) === undefined,
        'publishes to be accepted again',
        scaled(DEADLINE_MS),
      );
      const last = acked[acked.length - 1]!;
      expect(await readUpTo(client, 'ledger', last)).toEqual(acked);
    } finally {
      await client.close();
    }
  }, 180_000);
});
