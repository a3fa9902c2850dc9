// Goal: a whole campaign against three replicating brokers passes the checker while brokers are
// killed, paused, cut from each other and from the control plane, and slowed: every acked
// publish of the `quorum` streams (replication factor 3) survives the failovers in the final
// reads, readers agree on every offset, the consumer group completes every record (at least
// once across failovers, docs/replication.md "The redelivery window"), and the `quorum` cache's
// keys and counters hold the cache-register and counter-sum rules (docs/reliability.md).
// Method: runCampaign with startCluster (a control plane and three brokers with internal
// listeners, as processes), the kill, pause, partition and slow-fsync nemeses (no failing fsync),
// the stream, group, cache and counter workloads for 50 s, and the real checker; on failure the
// report and the processes' log tails are printed and the cluster's dir is kept.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '@felix/testing-harness';
import { check, renderSvg, renderText } from '@felix/testing-history';
import { describe, expect, it } from 'vitest';
import { runCampaign } from '../src/campaign/run.js';
import { schedule } from '../src/campaign/schedule.js';
import { startCluster } from '../src/cluster.js';
import { scaled } from '../src/limits.js';

// Seed 13 schedules, in 50 s, three kills, a pause, a partition between two brokers, one from the
// control plane and a slow-fsync spell (schedule.ts; the test checks the schedule first).
const SEED = 13;
const OPTS = {
  seed: SEED,
  durationMs: 50_000,
  brokers: 3,
  nemeses: ['kill', 'pause', 'partition', 'fsync'] as const,
  fsyncFailures: false,
  workloads: ['streams', 'groups', 'caches', 'counters'] as const,
};

describe('a campaign against a replicated cluster', () => {
  it(
    'a_three_broker_replicated_campaign_with_kills_pauses_partitions_and_slow_fsync_passes',
    async () => {
      const planned = schedule(SEED, OPTS).map((s) => s.fault);
      for (const fault of ['kill', 'pause', 'partition', 'slow_fsync'] as const)
        expect(planned, `the schedule of seed ${SEED}`).toContain(fault);
      const out = await tempDir();
      const result = await runCampaign(
        { ...OPTS, out: out.path },
        { startCluster, check, renderText, renderSvg },
      );
      const report = result.report;
      if (result.exitCode !== 0) {
        const text = report ? renderText(report) : '(no report)';
        console.error(`${result.verdict}\n${text}\n${result.logTails ?? ''}\nkept in ${out.path}`);
      }
      expect(result.failure).toBeUndefined();
      expect(report?.valid).toBe(true);
      const ops = report!.stats.ops;
      expect(ops.publish?.ok).toBeGreaterThanOrEqual(20);
      expect(ops.group_ack?.ok).toBeGreaterThan(0);
      expect(ops.cache_put?.ok).toBeGreaterThan(0);
      expect(ops.counter_add?.ok).toBeGreaterThan(0);
      // Every fault family took effect: the history holds each injection answered ok.
      const history = (await readFile(join(out.path, 'history.jsonl'), 'utf8'))
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { f: string; id: string; phase: string; fault?: string });
      const done = new Set(
        history.filter((l) => l.f === 'nemesis' && l.phase === 'ok').map((l) => l.id),
      );
      const took = new Set(
        history
          .filter((l) => l.f === 'nemesis' && l.phase === 'invoke' && done.has(l.id))
          .map((l) => l.fault),
      );
      for (const fault of ['kill', 'pause', 'partition', 'slow_fsync'])
        expect(took, `a ${fault} took effect`).toContain(fault);
      expect(result.verdict).toMatch(/ brokers=3 .* VALID$/);
      await out.cleanup();
    },
    scaled(150_000),
  );
});
