// Goal: a whole campaign against one real broker passes the checker while the broker is killed,
// paused and slowed: the acked publishes, cache puts and gets, counter adds and group
// completions all happen and the history breaks no rule.
// Method: runCampaign with startCluster (a control plane and one broker as processes), the
// kill, pause and slow-fsync nemeses (no failing fsync), all four workloads for 45 s, and the
// real checker; on failure the report and the processes' log tails are printed.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '@felix/testing-harness';
import { check, renderSvg, renderText } from '@felix/testing-history';
import { describe, expect, it } from 'vitest';
import { runCampaign } from '../src/campaign/run.js';
import { startCluster } from '../src/cluster.js';

// Seed 2 schedules two pauses, a kill and four slow-fsync spells in 45 s (schedule.ts).
const SEED = 2;

describe('a campaign against a real cluster', () => {
  it('a_single_broker_campaign_with_kills_and_slow_fsync_passes', async () => {
    const out = await tempDir();
    const result = await runCampaign(
      {
        seed: SEED,
        durationMs: 45_000,
        brokers: 1,
        nemeses: ['kill', 'pause', 'fsync'],
        fsyncFailures: false,
        workloads: ['streams', 'caches', 'counters', 'groups'],
        out: out.path,
      },
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
    expect(ops.publish?.ok).toBeGreaterThanOrEqual(100);
    expect(ops.cache_put?.ok).toBeGreaterThan(0);
    expect(ops.cache_get?.ok).toBeGreaterThan(0);
    expect(ops.counter_add?.ok).toBeGreaterThan(0);
    expect(ops.group_ack?.ok).toBeGreaterThan(0);
    expect(result.steps.some((s) => s.fault === 'kill')).toBe(true);
    const history = await readFile(join(out.path, 'history.jsonl'), 'utf8');
    const kills = history.split('\n').filter((l) => l.includes('"fault":"kill"'));
    expect(kills.length).toBeGreaterThanOrEqual(1);
    expect(result.verdict).toMatch(/ VALID$/);
    await out.cleanup();
  }, 90_000);
});
