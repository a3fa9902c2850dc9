/**
 * The fault schedule: a pure function of the seed. Between faults it waits 1–4 s; each fault is
 * one of the allowed families, held 2–6 s and then healed, and faults never overlap. The same
 * seed and options always give the same steps, so a campaign's faults replay exactly.
 */
import { Rng } from '../rng.js';
import { CampaignOptionError } from '../errors.js';
import {
  NEMESIS_HOLD_MS_MAX,
  NEMESIS_HOLD_MS_MIN,
  NEMESIS_WAIT_MS_MAX,
  NEMESIS_WAIT_MS_MIN,
  SCHEDULE_STEPS_MAX,
  SLOW_FSYNC_MS_MAX,
  SLOW_FSYNC_MS_MIN,
} from '../limits.js';

export const NEMESES = ['kill', 'pause', 'partition', 'fsync'] as const;
export type NemesisName = (typeof NEMESES)[number];

export type StepFault = 'kill' | 'pause' | 'partition' | 'slow_fsync' | 'fail_fsync';

export interface Step {
  /** When the fault starts, in ms from the campaign's start. */
  atMs: number;
  fault: StepFault;
  /** `n0`; `n0|n1` or `n0|controlplane` for a partition. */
  target: string;
  /** How long the fault stands before it is healed. */
  holdMs: number;
  params: Record<string, number | string>;
}

export interface ScheduleOptions {
  durationMs: number;
  brokers: number;
  nemeses: readonly NemesisName[];
  /** The fsync family may fail an fsync (`failFsync once`) besides slowing it; default true. */
  fsyncFailures?: boolean;
}

function partitionTarget(rng: Rng, brokers: number): string {
  const a = rng.int(0, brokers - 1);
  if (brokers === 1 || rng.chance(0.5)) return `n${a}|controlplane`;
  const b = (a + rng.int(1, brokers - 1)) % brokers;
  return `n${Math.min(a, b)}|n${Math.max(a, b)}`;
}

function fsyncStep(rng: Rng, failures: boolean): Pick<Step, 'fault' | 'params'> {
  if (failures && rng.chance(0.3)) return { fault: 'fail_fsync', params: { mode: 'once' } };
  return { fault: 'slow_fsync', params: { ms: rng.int(SLOW_FSYNC_MS_MIN, SLOW_FSYNC_MS_MAX) } };
}

function pickStep(rng: Rng, opts: ScheduleOptions): Omit<Step, 'atMs' | 'holdMs'> {
  const family = rng.pick(opts.nemeses);
  if (family === 'partition')
    return { fault: 'partition', target: partitionTarget(rng, opts.brokers), params: {} };
  const target = `n${rng.int(0, opts.brokers - 1)}`;
  if (family === 'fsync') return { target, ...fsyncStep(rng, opts.fsyncFailures !== false) };
  return { fault: family, target, params: {} };
}

export function schedule(seed: number, opts: ScheduleOptions): Step[] {
  if (!Number.isInteger(opts.brokers) || opts.brokers < 1)
    throw new CampaignOptionError(`a schedule needs at least one broker, got ${opts.brokers}`);
  for (const n of opts.nemeses)
    if (!NEMESES.includes(n)) throw new CampaignOptionError(`unknown nemesis ${String(n)}`);
  const rng = new Rng(seed).fork('nemesis');
  const steps: Step[] = [];
  if (opts.nemeses.length === 0) return steps;
  let t = 0;
  while (steps.length < SCHEDULE_STEPS_MAX) {
    t += rng.int(NEMESIS_WAIT_MS_MIN, NEMESIS_WAIT_MS_MAX);
    const holdMs = rng.int(NEMESIS_HOLD_MS_MIN, NEMESIS_HOLD_MS_MAX);
    if (t + holdMs > opts.durationMs) break;
    steps.push({ atMs: t, holdMs, ...pickStep(rng, opts) });
    t += holdMs;
  }
  return steps;
}
