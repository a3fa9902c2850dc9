// Goal: the seed alone decides the fault schedule, and the runner turns a schedule into the same
// cluster calls in the same order every time; each call is recorded as a paired nemesis line.
// Method: pure schedules from seeds; the runner driven against a fake Cluster that records its
// calls, with a sleep that does not wait, into a recorder writing to a temp file.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '@felix/testing-harness';
import type { HistoryLine } from '@felix/testing-history';
import { describe, expect, it } from 'vitest';
import { healAll, runNemesis } from '../src/campaign/nemesis.js';
import { schedule } from '../src/campaign/schedule.js';
import { Recorder } from '../src/recorder.js';
import type { NodeState } from '../src/types.js';

const META = { seed: 1, streams: [], groups: [], caches: [], counters: [] };
const ALL = ['kill', 'pause', 'partition', 'fsync'] as const;

/** A Cluster's fault calls, recorded; nodes change state as a real cluster's would. */
function fakeCluster(brokers: number) {
  const calls: string[] = [];
  const nodes = Array.from({ length: brokers }, (_, index) => ({
    index,
    state: 'running' as NodeState,
  }));
  const call =
    (name: string, state?: NodeState) =>
    async (...args: unknown[]) => {
      calls.push(`${name}(${args.join(',')})`);
      const node = nodes[Number(args[0])];
      if (state && node) node.state = state;
    };
  const cluster = {
    nodes: nodes as never,
    kill: call('kill', 'stopped'),
    start: call('start', 'running'),
    restart: call('restart', 'running'),
    pause: call('pause', 'paused'),
    resume: call('resume', 'running'),
    partition: call('partition'),
    heal: call('heal'),
    slowFsync: call('slowFsync'),
    failFsync: call('failFsync'),
    healFsync: call('healFsync'),
  };
  return { cluster, calls };
}

async function runOnce(seed: number, dir: string, name: string) {
  const steps = schedule(seed, { durationMs: 60_000, brokers: 3, nemeses: ALL });
  const { cluster, calls } = fakeCluster(3);
  const recorder = new Recorder(join(dir, name), META);
  const signal = new AbortController().signal;
  const injected = await runNemesis(cluster, steps, {
    recorder,
    signal,
    sleepUntil: async () => {},
  });
  await healAll(cluster, recorder);
  recorder.close();
  const lines = (await readFile(join(dir, name), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as HistoryLine);
  return { steps, calls, injected, lines };
}

describe('the seeded nemesis', () => {
  it('the_same_seed_replays_the_same_fault_schedule', async () => {
    const opts = { durationMs: 120_000, brokers: 3, nemeses: ALL };
    expect(schedule(42, opts)).toEqual(schedule(42, opts));
    expect(schedule(43, opts)).not.toEqual(schedule(42, opts));
    const dir = await tempDir();
    try {
      const a = await runOnce(7, dir.path, 'a.jsonl');
      const b = await runOnce(7, dir.path, 'b.jsonl');
      expect(a.steps.length).toBeGreaterThan(5);
      expect(a.calls).toEqual(b.calls);
      expect(a.injected).toBe(a.steps.length);
      // Every fault call is one invoke and one ok line, in the order the calls were made.
      const nemesis = a.lines.filter((l) => l.f === 'nemesis');
      expect(nemesis.filter((l) => l.phase === 'invoke')).toHaveLength(a.calls.length);
      expect(nemesis.filter((l) => l.phase === 'ok')).toHaveLength(a.calls.length);
      const c = await runOnce(8, dir.path, 'c.jsonl');
      expect(c.calls).not.toEqual(a.calls);
    } finally {
      await dir.cleanup();
    }
  });

  it('a_schedule_never_overlaps_its_faults_and_keeps_each_within_its_bounds', () => {
    for (const seed of [1, 2, 3, 99, 123456]) {
      const steps = schedule(seed, { durationMs: 300_000, brokers: 1, nemeses: ALL });
      let end = 0;
      for (const s of steps) {
        expect(s.atMs - end).toBeGreaterThanOrEqual(1_000);
        expect(s.atMs - end).toBeLessThanOrEqual(4_000);
        expect(s.holdMs).toBeGreaterThanOrEqual(2_000);
        expect(s.holdMs).toBeLessThanOrEqual(6_000);
        // One broker: a partition can only cut it from the control plane.
        if (s.fault === 'partition') expect(s.target).toBe('n0|controlplane');
        end = s.atMs + s.holdMs;
      }
      expect(end).toBeLessThanOrEqual(300_000);
      expect(new Set(steps.map((s) => s.fault))).toEqual(
        new Set(['kill', 'pause', 'partition', 'slow_fsync', 'fail_fsync']),
      );
    }
  });

  it('a_schedule_without_fsync_failures_only_slows_fsyncs', () => {
    const steps = schedule(5, {
      durationMs: 600_000,
      brokers: 1,
      nemeses: ['fsync'],
      fsyncFailures: false,
    });
    expect(steps.length).toBeGreaterThan(10);
    for (const s of steps) {
      expect(s.fault).toBe('slow_fsync');
      expect(Number(s.params.ms)).toBeGreaterThanOrEqual(100);
      expect(Number(s.params.ms)).toBeLessThanOrEqual(300);
    }
  });
});
