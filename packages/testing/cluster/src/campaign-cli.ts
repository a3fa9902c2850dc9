#!/usr/bin/env node
/**
 * felix-campaign: one seeded fault campaign against a real cluster (src/campaign/run.ts).
 * Prints the seed first and one verdict line last; exits 0 when the history is valid, 1 on any
 * violation, 2 when it could not run (a bad option, a harness failure).
 */
import { join, resolve } from 'node:path';
import { check, renderSvg, renderText } from '@felix/testing-history';
import { Command } from 'commander';
import { CampaignOptionError } from './errors.js';
import { parseCount, parseDuration, parseNemeses, parseWorkloads } from './campaign/options.js';
import { runCampaign } from './campaign/run.js';
import { startCluster } from './cluster.js';
import { randomSeed } from './rng.js';

interface RawOptions {
  seed?: string;
  duration: string;
  brokers: string;
  nemesis: string;
  workload: string;
  out?: string;
  controlplane: string;
  fsyncFailures: boolean;
}

async function main(argv: string[]): Promise<number> {
  const cmd = new Command('felix-campaign')
    .description('Run a seeded fault campaign against a real Felix cluster and check its history')
    .option(
      '--seed <n>',
      'decides the fault schedule and every workload choice (random if omitted)',
    )
    .option('--duration <d>', 'how long workloads and faults run (60s, 10m)', '60s')
    .option('--brokers <n>', 'brokers in the cluster', '1')
    .option(
      '--nemesis <list>',
      'fault families: kill,pause,partition,fsync (or none)',
      'kill,pause,partition,fsync',
    )
    .option(
      '--workload <list>',
      'workloads: streams,caches,counters,groups',
      'streams,caches,counters,groups',
    )
    .option('--out <dir>', 'where the history, report, timeline, faults and logs go')
    .option('--controlplane <kind>', 'sqlite or postgres', 'sqlite')
    .option('--no-fsync-failures', 'the fsync nemesis only slows fsyncs, never fails one');
  // A bad option exits 2 like any unusable invocation (1 means a violation); --help exits 0.
  cmd.exitOverride();
  cmd.configureOutput({ writeErr: () => undefined }); // the message is printed once, below
  try {
    cmd.parse(argv);
  } catch (err) {
    const exitCode = (err as { exitCode?: number }).exitCode;
    if (exitCode === 0) return 0;
    throw new CampaignOptionError((err as Error).message, { cause: err });
  }
  const raw = cmd.opts<RawOptions>();
  const seed = raw.seed === undefined ? randomSeed() : parseCount('--seed', raw.seed, 0);
  if (raw.controlplane !== 'sqlite' && raw.controlplane !== 'postgres')
    throw new CampaignOptionError(`--controlplane: sqlite or postgres, got "${raw.controlplane}"`);
  const opts = {
    seed,
    durationMs: parseDuration(raw.duration),
    brokers: parseCount('--brokers', raw.brokers, 1),
    nemeses: parseNemeses(raw.nemesis),
    workloads: parseWorkloads(raw.workload),
    out: resolve(raw.out ?? `.campaign/${seed}`),
    controlPlane: raw.controlplane,
    fsyncFailures: raw.fsyncFailures,
  } as const;
  console.log(`felix-campaign seed=${seed} out=${opts.out}`);
  const result = await runCampaign(opts, { startCluster, check, renderText, renderSvg });
  // The tails are kept in the output dir; a terminal gets where, not 70 KiB of JSON.
  if (result.exitCode !== 0)
    console.error(`process log tails: ${join(opts.out, 'logs', 'tails.txt')}`);
  console.log(result.verdict);
  return result.exitCode;
}

// Exits explicitly: a client of a broker that never answered may still hold a timer.
main(process.argv).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(2);
  },
);
