/**
 * Which workload processes a campaign runs, from the workloads it was asked for: their names,
 * their seeded generators (forked by process name from the campaign's seed) and their loops.
 */
import type { Rng } from '../rng.js';
import { runCacheClient, runCounterAdder } from './caches.js';
import type { WorkloadContext } from './common.js';
import type { FinalScope } from './final.js';
import { runGroupConsumer } from './groups.js';
import { runPublisher } from './publishers.js';
import { runSubscriber } from './subscribers.js';

export const WORKLOADS = ['streams', 'caches', 'counters', 'groups'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

export interface PlannedProcess {
  process: string;
  run: (ctx: WorkloadContext) => Promise<void>;
}

/** Group consumers: two on shard 0 (they contend for its records), one on each other shard. */
function groupConsumers(shards: number, rng: Rng): PlannedProcess[] {
  const onShards = [0, ...Array.from({ length: shards }, (_, s) => s)];
  return onShards.map((shard, i) => {
    const process = `group-${i}`;
    return {
      process,
      run: (ctx) => runGroupConsumer(ctx, { process, rng: rng.fork(process), shard }),
    };
  });
}

export function planWorkloads(
  selected: readonly WorkloadName[],
  names: WorkloadContext['names'],
  rng: Rng,
): PlannedProcess[] {
  const has = (w: WorkloadName) => selected.includes(w);
  const plan: PlannedProcess[] = [];
  // Groups read what the publishers write, so they run whenever streams or groups are asked for.
  if (has('streams') || has('groups')) {
    for (const [i, resend] of [false, true].entries()) {
      const process = `pub-${i}`;
      plan.push({
        process,
        run: (ctx) => runPublisher(ctx, { process, rng: rng.fork(process), resend }),
      });
    }
  }
  if (has('streams')) {
    let i = 0;
    for (const stream of names.streams)
      for (let shard = 0; shard < stream.shards; shard++) {
        const process = `sub-${i++}`;
        const opts = { process, rng: rng.fork(process), stream: stream.name, shard };
        plan.push({ process, run: (ctx) => runSubscriber(ctx, opts) });
      }
  }
  for (const [kind, run] of [
    ['caches', runCacheClient],
    ['counters', runCounterAdder],
  ] as const) {
    if (!has(kind)) continue;
    for (let i = 0; i < 2; i++) {
      const process = `${kind === 'caches' ? 'cache' : 'counter'}-${i}`;
      plan.push({ process, run: (ctx) => run(ctx, { process, rng: rng.fork(process) }) });
    }
  }
  if (has('groups')) plan.push(...groupConsumers(names.group.shards, rng));
  return plan;
}

export function finalScope(selected: readonly WorkloadName[]): FinalScope {
  return {
    logs: selected.includes('streams') || selected.includes('groups'),
    caches: selected.includes('caches') || selected.includes('counters'),
    groups: selected.includes('groups'),
  };
}

/**
 * Runs every planned process until `ctx.signal`; answers the errors of processes that could not
 * run (a client that never connected): a harness failure, not a finding about Felix.
 */
export async function runWorkloads(
  plan: readonly PlannedProcess[],
  ctx: WorkloadContext,
): Promise<{ process: string; error: unknown }[]> {
  const results = await Promise.allSettled(plan.map((p) => p.run(ctx)));
  return results.flatMap((r, i) =>
    r.status === 'rejected' ? [{ process: plan[i]!.process, error: r.reason as unknown }] : [],
  );
}
