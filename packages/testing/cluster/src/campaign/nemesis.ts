/**
 * The nemesis runner: executes a schedule's steps against a Cluster, one at a time (inject, hold,
 * heal), recording each call as `nemesis` lines: invoke when it starts, ok when the harness says
 * it took effect, info when it failed or did not answer in time. `healAll` undoes whatever may
 * still stand (a paused or stopped broker, partitions, fsync faults) at the end.
 */
import { withDeadline } from '@felix/testing-harness';
import type { Recorder } from '../recorder.js';
import type { Cluster } from '../types.js';
import { pause } from '../workloads/common.js';
import { NEMESIS_CALL_TIMEOUT_MS, scaled } from '../limits.js';
import type { Step } from './schedule.js';

/** The part of a Cluster the nemesis drives. */
export type FaultTarget = Pick<
  Cluster,
  | 'nodes'
  | 'kill'
  | 'start'
  | 'restart'
  | 'pause'
  | 'resume'
  | 'partition'
  | 'heal'
  | 'slowFsync'
  | 'failFsync'
  | 'healFsync'
>;

export interface NemesisOptions {
  recorder: Recorder;
  /** Ends the run before its next step (a step under way is still healed). */
  signal: AbortSignal;
  /** Waits until `atMs` on the recorder's clock (tests pass one that does not wait). */
  sleepUntil?: (atMs: number, signal: AbortSignal) => Promise<void>;
}

type Params = Record<string, number | string>;

/** `n3` → 3. */
function nodeOf(target: string): number {
  return Number(target.replace(/^n/, ''));
}

/** Records one fault or heal call; answers whether it took effect. */
async function act(
  recorder: Recorder,
  fault: string,
  target: string,
  params: Params,
  call: () => Promise<void>,
): Promise<boolean> {
  const withParams = Object.keys(params).length > 0 ? { params } : {};
  const id = recorder.invoke('nemesis', { f: 'nemesis', fault, target, ...withParams });
  try {
    await withDeadline(call(), scaled(NEMESIS_CALL_TIMEOUT_MS), `${fault} ${target}`);
    recorder.complete(id, 'ok');
    return true;
  } catch (err) {
    recorder.complete(id, 'info', { error: err instanceof Error ? err.message : String(err) });
    return false;
  }
}

function inject(cluster: FaultTarget, recorder: Recorder, step: Step): Promise<boolean> {
  const { fault, target, params } = step;
  const node = nodeOf(target);
  const run = (call: () => Promise<void>) => act(recorder, fault, target, params, call);
  switch (fault) {
    case 'kill':
      return run(() => cluster.kill(node));
    case 'pause':
      return run(() => cluster.pause(node));
    case 'slow_fsync':
      return run(() => cluster.slowFsync(node, Number(params.ms)));
    case 'fail_fsync':
      return run(() => cluster.failFsync(node, 'once'));
    case 'partition': {
      const [a = '', b = ''] = target.split('|');
      return run(() => cluster.partition(nodeOf(a), b === 'controlplane' ? b : nodeOf(b)));
    }
  }
}

function heal(cluster: FaultTarget, recorder: Recorder, step: Step): Promise<boolean> {
  const node = nodeOf(step.target);
  switch (step.fault) {
    case 'kill':
      return act(recorder, 'start', step.target, {}, () => cluster.start(node));
    case 'pause':
      return act(recorder, 'resume', step.target, {}, () => cluster.resume(node));
    case 'partition':
      return act(recorder, 'heal', 'all', {}, () => cluster.heal());
    case 'slow_fsync':
      return act(recorder, 'heal_fsync', step.target, {}, () => cluster.healFsync(node));
    case 'fail_fsync':
      return healFailedFsync(cluster, recorder, step.target, node);
  }
}

/**
 * A failed fsync poisons that log until the broker restarts (docs/reliability.md, "What the
 * broker does on a failed fsync"), so healing it is clearing the fault and restarting.
 */
async function healFailedFsync(
  cluster: FaultTarget,
  recorder: Recorder,
  target: string,
  node: number,
): Promise<boolean> {
  const healed = await act(recorder, 'heal_fsync', target, {}, () => cluster.healFsync(node));
  const restarted = await act(recorder, 'restart', target, {}, () => cluster.restart(node));
  return healed && restarted;
}

/** Runs `steps` in order until they end or `opts.signal` aborts; answers the faults injected. */
export async function runNemesis(
  cluster: FaultTarget,
  steps: readonly Step[],
  opts: NemesisOptions,
): Promise<number> {
  const sleepUntil =
    opts.sleepUntil ?? ((atMs, signal) => pause(Math.max(0, atMs - opts.recorder.now()), signal));
  let injected = 0;
  for (const step of steps) {
    await sleepUntil(step.atMs, opts.signal);
    if (opts.signal.aborted) break;
    if (await inject(cluster, opts.recorder, step)) injected++;
    // A campaign ending mid-hold heals at once (its healAll would too, but this pairs the step).
    await sleepUntil(step.atMs + step.holdMs, opts.signal);
    await heal(cluster, opts.recorder, step);
  }
  return injected;
}

/** Undoes every fault that may still stand, whatever the steps did: resume, start, heal. */
export async function healAll(cluster: FaultTarget, recorder: Recorder): Promise<void> {
  for (const node of cluster.nodes) {
    const target = `n${node.index}`;
    if (node.state === 'paused')
      await act(recorder, 'resume', target, {}, () => cluster.resume(node.index));
    if (node.state === 'stopped')
      await act(recorder, 'start', target, {}, () => cluster.start(node.index));
  }
  await act(recorder, 'heal', 'all', {}, () => cluster.heal());
  for (const node of cluster.nodes)
    await act(recorder, 'heal_fsync', `n${node.index}`, {}, () => cluster.healFsync(node.index));
}
