// Goal: a leader's replica reports reach the control plane as soon as the broker is registered,
// not one placeholder interval later: the control plane promotes only from a report, so a leader
// lost in its first seconds left its shard unplaced (found by demos/cluster-failover); and a
// nudge (a follower newly in sync) sends the next report without waiting for the interval,
// nudges close together making one report.
// Method: a ReplicaReporter over a fake membership (unregistered, with the 5 s placeholder
// interval, then registered at the control plane's 500 ms) and a fake client, on fake timers.
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ControlPlaneClient, ShardReport } from '../src/cluster/control-plane-client.js';
import type { Membership } from '../src/cluster/membership.js';
import { ReplicaReporter } from '../src/cluster/replica-reporter.js';
import { REPLICA_REPORT_NUDGE_GAP_MS } from '../src/limits.js';

const REPORT: ShardReport = {
  tenant_id: 't',
  namespace: 'n',
  kind: 'stream',
  stream: 's',
  shard: 0,
  generation: 1,
  leader_offset: 10,
  commit_offset: 10,
  replica_offsets: [{ node_id: 'n1', durable_offset: 10 }],
  halted: [],
  in_sync: ['n1'],
};

afterEach(() => {
  vi.useRealTimers();
});

/** A reporter of REPORT over stand-ins of the control-plane client and the membership. */
function reporterOver(client: object, membership: object): ReplicaReporter {
  return new ReplicaReporter(
    client as unknown as ControlPlaneClient,
    membership as unknown as Membership,
    () => [REPORT],
    pino({ level: 'silent' }),
    new Registry(),
  );
}

describe('replica reports', () => {
  it('a_leader_reports_its_replicas_as_soon_as_it_registers', async () => {
    vi.useFakeTimers();
    const membership = {
      isRegistered: false,
      heartbeatIntervalMs: 5_000,
      currentIncarnation: 7,
      spec: { node_id: 'n0' },
      nextReportSeq: () => 1,
    };
    const sent: number[] = [];
    const client = {
      replicaStatus: async (_node: string, _inc: number, shards: ShardReport[]) => {
        sent.push(shards.length);
        return [];
      },
    };
    const reporter = reporterOver(client, membership);
    reporter.start();
    await vi.advanceTimersByTimeAsync(200);
    expect(sent).toEqual([]);
    membership.isRegistered = true;
    membership.heartbeatIntervalMs = 500;
    await vi.advanceTimersByTimeAsync(300);
    expect(sent).toEqual([1]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sent.length).toBe(3);
    const stopping = reporter.stop();
    await vi.advanceTimersByTimeAsync(0);
    await stopping;
  });

  it('a_nudge_sends_the_next_report_without_waiting_for_the_interval', async () => {
    vi.useFakeTimers();
    const membership = {
      isRegistered: true,
      heartbeatIntervalMs: 60_000,
      currentIncarnation: 7,
      spec: { node_id: 'n0' },
      nextReportSeq: () => 1,
    };
    let sent = 0;
    const client = {
      replicaStatus: async () => {
        sent++;
        return [];
      },
    };
    const reporter = reporterOver(client, membership);
    reporter.start();
    await vi.advanceTimersByTimeAsync(10);
    expect(sent).toBe(1);
    // Well inside the 60 s interval: a nudge is answered by a report within the gap.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sent).toBe(1);
    reporter.nudge();
    await vi.advanceTimersByTimeAsync(REPLICA_REPORT_NUDGE_GAP_MS);
    expect(sent).toBe(2);
    // Nudges within one gap make one report, and a nudge during the gap after a report is not
    // lost: it sends the next once the gap has passed.
    reporter.nudge();
    reporter.nudge();
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toBe(3);
    reporter.nudge();
    await vi.advanceTimersByTimeAsync(REPLICA_REPORT_NUDGE_GAP_MS - 10);
    expect(sent).toBe(3);
    await vi.advanceTimersByTimeAsync(20);
    expect(sent).toBe(4);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sent).toBe(4);
    const stopping = reporter.stop();
    await vi.advanceTimersByTimeAsync(0);
    await stopping;
  });

  it('a_leaders_replica_reports_are_numbered_in_the_order_it_sends_them', async () => {
    vi.useFakeTimers();
    let counted = 0;
    const membership = {
      isRegistered: true,
      heartbeatIntervalMs: 500,
      currentIncarnation: 7,
      spec: { node_id: 'n0' },
      nextReportSeq: () => ++counted,
    };
    const seqs: number[] = [];
    const client = {
      replicaStatus: async (
        _node: string,
        _inc: number,
        _shards: ShardReport[],
        _timeoutMs: number,
        seq: number,
      ) => {
        seqs.push(seq);
        // The second request is given up on: the next one must still be numbered after it.
        if (seqs.length === 2) throw new Error('timed out');
        return [];
      },
    };
    const reporter = reporterOver(client, membership);
    reporter.start();
    await vi.advanceTimersByTimeAsync(1_600);
    expect(seqs.length).toBeGreaterThanOrEqual(3);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    const stopping = reporter.stop();
    await vi.advanceTimersByTimeAsync(0);
    await stopping;
  });
});
