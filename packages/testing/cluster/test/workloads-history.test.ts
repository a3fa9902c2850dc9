// Goal: the workloads record a history the checker can read: every invoke has exactly one
// completion, an operation whose outcome is unknown (its connection died before the answer) is
// `info` and never `fail`, a refusal that applied nothing is `fail`, and after a broker restart
// the final reads hold every acknowledged publish at the offset its ack named.
// Method: a standalone durable felix-broker process (test/workloads-broker.ts) wrapped as the
// workloads' target; the recorder writes to a temp file, read back as the contract's lines.
import { setMaxListeners } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir, waitFor } from '@felix/testing-harness';
import { type HistoryLine, check, parseHistory, renderText } from '@felix/testing-history';
import { describe, expect, it } from 'vitest';
import { CAMPAIGN_NAMES, campaignMeta } from '../src/campaign/run.js';
import { classifyError, Recorder } from '../src/recorder.js';
import { Rng } from '../src/rng.js';
import type { WorkloadContext } from '../src/workloads/common.js';
import { finalReads } from '../src/workloads/final.js';
import { planWorkloads, runWorkloads } from '../src/workloads/plan.js';
import { recordedPublish } from '../src/workloads/publishers.js';
import { NodeClients } from '../src/workloads/router.js';
import { startStandalone } from './workloads-broker.js';

const META = campaignMeta(11, ['streams', 'caches', 'counters', 'groups']);

/** The history as the checker reads it (parseHistory: bounded, every line's shape checked). */
async function readLines(path: string): Promise<HistoryLine[]> {
  return parseHistory(await readFile(path, 'utf8'));
}

describe('workload histories', () => {
  it('a_publish_whose_connection_dies_before_its_ack_is_recorded_info_not_fail', async () => {
    const dir = await tempDir();
    const broker = await startStandalone(dir.path);
    const recorder = new Recorder(join(dir.path, 'h.jsonl'), META);
    const nodes = new NodeClients(broker);
    const ctx = {
      target: broker,
      recorder,
      names: CAMPAIGN_NAMES,
      signal: new AbortController().signal,
    };
    try {
      const send = { stream: 'history-0', key: 'a', value: 'v-1', attempt: 1 };
      expect((await recordedPublish(ctx, nodes, 'pub-0', send)).phase).toBe('ok');
      // Frozen, then killed: the publish is on the wire when the connection goes.
      process.kill(broker.child.proc.pid!, 'SIGSTOP');
      const pending = recordedPublish(ctx, nodes, 'pub-0', { ...send, value: 'v-2' });
      await waitFor(() => recorder.lines >= 4, 'the second publish to be invoked', 5_000);
      await broker.kill();
      expect((await pending).phase).toBe('info');
      // Nothing was sent for a stream the catalog does not hold: a sure refusal.
      await broker.start();
      const unknown = { stream: 'no-such-stream', key: 'a', value: 'v-3', attempt: 1 };
      expect((await recordedPublish(ctx, nodes, 'pub-0', unknown)).phase).toBe('fail');
      recorder.close();
      const lines = await readLines(join(dir.path, 'h.jsonl'));
      expect(lines[0]).toMatchObject({ f: 'meta', id: 'meta', t: 0, phase: 'ok' });
      expect(lines.filter((l) => l.f === 'publish').map((l) => l.phase)).toEqual([
        'invoke',
        'ok',
        'invoke',
        'info',
        'invoke',
        'fail',
      ]);
    } finally {
      await nodes.close();
      await broker.stop();
      await dir.cleanup();
    }
  }, 60_000);

  it('an_unknown_error_and_a_storage_refusal_are_info_and_a_stale_claim_is_fail', () => {
    expect(classifyError(new Error('boom')).phase).toBe('info');
    expect(classifyError('a string').phase).toBe('info');
    const refusal = (brokerCode: string, retry: string) =>
      Object.assign(new Error(brokerCode), { code: 'X', brokerCode, retry });
    expect(classifyError(refusal('storage', 'retry')).phase).toBe('info');
    expect(classifyError(refusal('internal', 'retry')).phase).toBe('info');
    expect(classifyError(refusal('not_found', 'never')).phase).toBe('fail');
    expect(classifyError(refusal('stale_claim', 'never')).phase).toBe('fail');
    // A refusal the broker itself marks outcome-unknown stays unknown, whatever its code.
    expect(classifyError(refusal('overloaded', 'unknown_outcome')).phase).toBe('info');
  });

  it('workloads_across_a_broker_kill_leave_every_acked_publish_in_the_final_reads', async () => {
    const dir = await tempDir();
    const broker = await startStandalone(dir.path);
    const path = join(dir.path, 'history.jsonl');
    const recorder = new Recorder(path, META);
    const stop = new AbortController();
    setMaxListeners(100, stop.signal);
    const ctx: WorkloadContext = {
      target: broker,
      recorder,
      names: CAMPAIGN_NAMES,
      signal: stop.signal,
    };
    const all = ['streams', 'caches', 'counters', 'groups'] as const;
    try {
      const running = runWorkloads(planWorkloads(all, CAMPAIGN_NAMES, new Rng(11)), ctx);
      const okPublishes = async (n: number) =>
        (await readLines(path).catch(() => [])).filter((l) => l.f === 'publish' && l.phase === 'ok')
          .length >= n;
      await waitFor(() => okPublishes(20), 'acked publishes before the kill', 20_000);
      // Recorded as the nemesis would, so the checker knows when the broker was down.
      const kill = recorder.invoke('nemesis', { f: 'nemesis', fault: 'kill', target: 'n0' });
      await broker.kill();
      recorder.complete(kill, 'ok');
      const start = recorder.invoke('nemesis', { f: 'nemesis', fault: 'start', target: 'n0' });
      await broker.start();
      recorder.complete(start, 'ok');
      const before = (await readLines(path)).length;
      await waitFor(
        async () => (await readLines(path)).length > before + 200,
        'the workloads to go on after the restart',
        30_000,
      );
      stop.abort();
      expect(await runWorkloads([], ctx)).toEqual([]);
      expect(await running).toEqual([]);
      await finalReads(
        { ...ctx, signal: new AbortController().signal },
        { logs: true, caches: true, groups: true },
      );
      recorder.close();
      const lines = await readLines(path);
      // The checker's reading: every invoke paired, every line of the contract's shape, and
      // every acknowledged publish in the final read at the (shard, offset) its ack named.
      const report = check(lines);
      expect(report.byRule['malformed-history'], renderText(report)).toBe(0);
      expect(report.byRule['acked-publish-present'], renderText(report)).toBe(0);
      const kinds = new Set(lines.filter((l) => l.phase === 'ok').map((l) => l.f));
      for (const f of [
        'publish',
        'deliver',
        'cache_put',
        'cache_get',
        'counter_add',
        'group_poll',
        'group_ack',
      ])
        expect(kinds).toContain(f);
      for (const f of ['final_read', 'cache_final', 'counter_final', 'group_final'])
        expect(kinds).toContain(f);
      expect(lines.filter((l) => l.f === 'final_read')).toHaveLength(4);
      expect(lines.filter((l) => l.f === 'group_final')).toHaveLength(2);
    } finally {
      stop.abort();
      await broker.stop();
      await dir.cleanup();
    }
  }, 90_000);
});
