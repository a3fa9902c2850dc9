/**
 * One campaign: start a cluster, record the workloads and the seeded nemesis for the duration,
 * heal, make the final reads, check the history and write the results in the output dir
 * (`history.jsonl`, `report.txt`, `timeline.svg`, `faults.json`, `logs/`). The seed alone
 * decides the fault schedule and every workload's choices.
 */
import { setMaxListeners } from 'node:events';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { type HistoryLine, type Report, readHistory } from '@felix/testing-history';
import { withDeadline } from '@felix/testing-harness';
import { Recorder } from '../recorder.js';
import { Rng } from '../rng.js';
import type { Cluster, ClusterSpec } from '../types.js';
import { type WorkloadContext, type WorkloadNames, pause } from '../workloads/common.js';
import { finalReads } from '../workloads/final.js';
import { type WorkloadName, finalScope, planWorkloads, runWorkloads } from '../workloads/plan.js';
import {
  CAMPAIGN_LOG_TAIL_LINES,
  CAMPAIGN_REPLICATION_FACTOR,
  CAMPAIGN_SERVED_DEADLINE_MS,
  GROUP_ATTEMPTS_MAX,
  GROUP_VISIBILITY_MS,
  SIGNAL_LISTENERS_MAX,
  WORKLOAD_SHUTDOWN_MS,
  scaled,
} from '../limits.js';
import { healAll, runNemesis } from './nemesis.js';
import { type NemesisName, type Step, schedule } from './schedule.js';

export interface CampaignOptions {
  seed: number;
  durationMs: number;
  brokers: number;
  nemeses: readonly NemesisName[];
  workloads: readonly WorkloadName[];
  /** The output dir (created). */
  out: string;
  controlPlane?: 'sqlite' | 'postgres';
  /** The fsync nemesis may fail an fsync as well as slow it (default true). */
  fsyncFailures?: boolean;
}

/** What a campaign needs from the harness and the checker (injected: tests may fake them). */
export interface CampaignDeps {
  startCluster(spec: ClusterSpec): Promise<Cluster>;
  check(lines: HistoryLine[]): Report;
  renderText(report: Report): string;
  renderSvg(lines: HistoryLine[], report: Report): string;
}

export interface CampaignResult {
  /** 0 valid, 1 a violation, 2 a harness failure. */
  exitCode: 0 | 1 | 2;
  verdict: string;
  report: Report | undefined;
  steps: Step[];
  /** Faults the nemesis injected (not counting heals). */
  injected: number;
  /** Why the harness failed (exit code 2). */
  failure: string | undefined;
  /** The last lines of every process log, for a failed run. */
  logTails: string | undefined;
}

export const CAMPAIGN_NAMES: WorkloadNames = {
  streams: [
    { name: 'history-0', shards: 2 },
    { name: 'history-1', shards: 2 },
  ],
  cache: 'history-cache',
  counter: 'history-cache',
  group: { stream: 'history-0', name: 'history-group', shards: 2 },
};

/** Whether a campaign on `brokers` brokers replicates its shards. */
export const replicatedOn = (brokers: number): boolean => brokers >= CAMPAIGN_REPLICATION_FACTOR;

/**
 * The campaign's cluster. With at least CAMPAIGN_REPLICATION_FACTOR brokers the brokers replicate
 * (internal listeners): every stream shard at that factor with `quorum` acknowledgement, and the
 * cache (with its counters) at that factor with `quorum` too, so a fault of one broker loses
 * nothing acknowledged.
 * With fewer, every shard has one copy.
 */
export function clusterSpec(opts: CampaignOptions): ClusterSpec {
  const replicated = replicatedOn(opts.brokers);
  const copies = replicated
    ? { replicationFactor: CAMPAIGN_REPLICATION_FACTOR, consistency: 'quorum' as const }
    : {};
  return {
    brokers: opts.brokers,
    ...(opts.controlPlane ? { controlPlane: opts.controlPlane } : {}),
    ...(replicated ? { replication: true } : {}),
    streams: CAMPAIGN_NAMES.streams.map((s) => ({
      ...s,
      durable: true,
      groupCursor: 'onCommit' as const,
      ...copies,
    })),
    caches: [
      {
        name: CAMPAIGN_NAMES.cache,
        durable: true,
        ...(replicated
          ? { replicationFactor: CAMPAIGN_REPLICATION_FACTOR, consistency: 'quorum' as const }
          : {}),
      },
    ],
    env: { FELIX_GROUP_MAX_ATTEMPTS: String(GROUP_ATTEMPTS_MAX) },
  };
}

/** The meta line's facts for a campaign of `seed` running `workloads` on `brokers` brokers. */
export function campaignMeta(seed: number, workloads: readonly WorkloadName[], brokers = 1) {
  const g = CAMPAIGN_NAMES.group;
  const replicas = replicatedOn(brokers) ? { replicas: CAMPAIGN_REPLICATION_FACTOR } : {};
  return {
    seed,
    streams: CAMPAIGN_NAMES.streams.map((s) => ({ ...s, durable: true, ...replicas })),
    groups: workloads.includes('groups')
      ? [
          {
            stream: g.stream,
            group: g.name,
            visibilityMs: GROUP_VISIBILITY_MS,
            cursor: 'onCommit' as const,
            attemptsMax: GROUP_ATTEMPTS_MAX,
          },
        ]
      : [],
    caches: [CAMPAIGN_NAMES.cache],
    counters: [CAMPAIGN_NAMES.counter],
  };
}

/** The recorded part: workloads and nemesis for the duration, then heal and final reads. */
async function record(
  cluster: Cluster,
  opts: CampaignOptions,
  recorder: Recorder,
  steps: Step[],
): Promise<{ injected: number; workloadErrors: string[] }> {
  const rng = new Rng(opts.seed);
  const stop = new AbortController();
  // Every workload process and pause listens on this one signal.
  setMaxListeners(SIGNAL_LISTENERS_MAX, stop.signal);
  const ctx: WorkloadContext = {
    target: cluster,
    recorder,
    names: CAMPAIGN_NAMES,
    signal: stop.signal,
  };
  const plan = planWorkloads(opts.workloads, CAMPAIGN_NAMES, rng.fork('workloads'));
  const workloads = runWorkloads(plan, ctx);
  const nemesis = runNemesis(cluster, steps, { recorder, signal: stop.signal });
  await pause(opts.durationMs);
  stop.abort();
  const injected = await nemesis;
  await healAll(cluster, recorder);
  const failed = await withDeadline(
    workloads,
    scaled(WORKLOAD_SHUTDOWN_MS),
    'the workloads to stop',
  ).catch(
    // Stragglers keep recording until the recorder closes; their open operations end as info.
    () => [],
  );
  await cluster.waitServed(scaled(CAMPAIGN_SERVED_DEADLINE_MS));
  const finalCtx = { ...ctx, signal: new AbortController().signal };
  await finalReads(finalCtx, finalScope(opts.workloads));
  const workloadErrors = failed.map((f) => `${f.process}: ${String(f.error)}`);
  return { injected, workloadErrors };
}

export function verdictLine(
  opts: CampaignOptions,
  report: Report | undefined,
  failure?: string,
): string {
  const head = `felix-campaign seed=${opts.seed} brokers=${opts.brokers}`;
  if (report === undefined || failure !== undefined)
    return `${head} HARNESS-FAILURE ${failure ?? 'no report'}`;
  const ops = Object.values(report.stats.ops).reduce((n, o) => n + o.ok + o.fail + o.info, 0);
  const s = report.stats;
  // Every violation, not the few per rule the report quotes.
  const violations = Object.values(report.byRule).reduce((n, c) => n + c, 0);
  return (
    `${head} ops=${ops} ok/s=${s.okPerSecond.toFixed(1)} faults=${s.faults} ` +
    `violations=${violations} ` +
    `longest_unavailability_ms=${Math.round(s.longestUnavailabilityMs)} ` +
    (report.valid ? 'VALID' : 'INVALID')
  );
}

/** Writes the report, the timeline, the faults and the process logs into the output dir. */
async function writeResults(
  opts: CampaignOptions,
  deps: CampaignDeps,
  cluster: Cluster,
  steps: Step[],
): Promise<Report> {
  const lines = await readHistory(join(opts.out, 'history.jsonl'));
  const report = deps.check(lines);
  await writeFile(join(opts.out, 'report.txt'), deps.renderText(report));
  await writeFile(join(opts.out, 'timeline.svg'), deps.renderSvg(lines, report));
  await writeFile(
    join(opts.out, 'faults.json'),
    `${JSON.stringify({ seed: opts.seed, schedule: steps, injected: cluster.faults }, null, 2)}\n`,
  );
  return report;
}

async function keepLogs(opts: CampaignOptions, cluster: Cluster): Promise<string> {
  const dir = join(opts.out, 'logs');
  await mkdir(dir, { recursive: true });
  const logs = [
    ...cluster.nodes.map((n) => ({ from: n.logPath, to: `n${n.index}-${basename(n.logPath)}` })),
    { from: join(cluster.dir, 'controlplane.log'), to: 'controlplane.log' },
  ];
  for (const log of logs)
    await copyFile(log.from, join(dir, log.to)).catch(
      () => undefined, // a process that never wrote a log has nothing to keep
    );
  const tails = await cluster.logTails(CAMPAIGN_LOG_TAIL_LINES);
  await writeFile(join(dir, 'tails.txt'), tails);
  return tails;
}

export async function runCampaign(
  opts: CampaignOptions,
  deps: CampaignDeps,
): Promise<CampaignResult> {
  await mkdir(opts.out, { recursive: true });
  const steps = schedule(opts.seed, { ...opts, nemeses: opts.nemeses });
  const result: CampaignResult = {
    exitCode: 2,
    verdict: '',
    report: undefined,
    steps,
    injected: 0,
    failure: undefined,
    logTails: undefined,
  };
  let cluster: Cluster | undefined;
  try {
    cluster = await deps.startCluster(clusterSpec(opts));
    await cluster.waitServed(scaled(CAMPAIGN_SERVED_DEADLINE_MS));
    const recorder = new Recorder(
      join(opts.out, 'history.jsonl'),
      campaignMeta(opts.seed, opts.workloads, opts.brokers),
    );
    try {
      const recorded = await record(cluster, opts, recorder, steps);
      result.injected = recorded.injected;
      if (recorded.workloadErrors.length > 0)
        result.failure = `workloads failed: ${recorded.workloadErrors.join('; ')}`;
    } finally {
      recorder.close();
    }
    result.report = await writeResults(opts, deps, cluster, steps);
  } catch (err) {
    result.failure = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  } finally {
    result.exitCode = result.failure !== undefined ? 2 : result.report?.valid ? 0 : 1;
    if (cluster !== undefined) {
      if (result.exitCode !== 0) result.logTails = await keepLogs(opts, cluster).catch(String);
      else await keepLogs(opts, cluster).catch(() => ''); // logs are kept for a valid run too
      await cluster.shutdown({ keep: result.exitCode !== 0 });
    }
    result.verdict = verdictLine(opts, result.report, result.failure);
  }
  return result;
}
