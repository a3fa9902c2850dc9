/**
 * Cache writers/readers and counter adders. A cache process puts unique values `<process>-<n>`
 * to keys k0..k2 of the campaign's cache and reads them back (a seeded mix); a counter process
 * adds small signed deltas to keys c0..c2 of the counters beside that cache.
 */
import type { FelixClient } from '@felix/client';
import {
  CACHE_KEYS,
  COUNTER_DELTA_ABS_MAX,
  COUNTER_KEYS,
  WORKLOAD_ERROR_BACKOFF_MS,
} from '../limits.js';
import type { Rng } from '../rng.js';
import { type Outcome, type WorkloadContext, pace, pause, recorded, text } from './common.js';
import { NodeClients, clientFor } from './router.js';

export interface KeyedOptions {
  process: string;
  rng: Rng;
}

export const cacheKeys = (): string[] => Array.from({ length: CACHE_KEYS }, (_, i) => `k${i}`);
export const counterKeys = (): string[] => Array.from({ length: COUNTER_KEYS }, (_, i) => `c${i}`);

/** One recorded put or get of the cache on `client`. */
function cacheOp(
  ctx: WorkloadContext,
  client: FelixClient,
  opts: KeyedOptions,
  put: string | undefined,
): Promise<Outcome<unknown>> {
  const name = ctx.names.cache;
  const cache = client.cache(name);
  const key = opts.rng.pick(cacheKeys());
  if (put !== undefined) {
    const id = ctx.recorder.invoke(opts.process, { f: 'cache_put', cache: name, key, value: put });
    return recorded(ctx.recorder, id, (signal) => cache.put(key, put, { signal }));
  }
  const id = ctx.recorder.invoke(opts.process, { f: 'cache_get', cache: name, key });
  return recorded(
    ctx.recorder,
    id,
    (signal) => cache.get(key, { signal }),
    (v) => ({ value: v === undefined ? null : text(v) }),
  );
}

export async function runCacheClient(ctx: WorkloadContext, opts: KeyedOptions): Promise<void> {
  const nodes = new NodeClients(ctx.target);
  // Pauses draw from a generator of their own, so the choices depend on the seed alone.
  const pacing = opts.rng.fork('pace');
  const route = `cache:${ctx.names.cache}`;
  try {
    for (let n = 0; !ctx.signal.aborted; ) {
      const client = await clientFor(nodes, route, ctx.signal);
      if (client === undefined) continue;
      const put = opts.rng.chance(0.6) ? `${opts.process}-${n++}` : undefined;
      const out = await cacheOp(ctx, client, opts, put);
      if (!out.ok) nodes.learn(route, out.error);
      await (out.ok ? pace(pacing, ctx.signal) : pause(WORKLOAD_ERROR_BACKOFF_MS, ctx.signal));
    }
  } finally {
    await nodes.close();
  }
}

export async function runCounterAdder(ctx: WorkloadContext, opts: KeyedOptions): Promise<void> {
  const nodes = new NodeClients(ctx.target);
  // Pauses draw from a generator of their own, so the choices depend on the seed alone.
  const pacing = opts.rng.fork('pace');
  const name = ctx.names.counter;
  const route = `cache:${name}`;
  try {
    while (!ctx.signal.aborted) {
      const client = await clientFor(nodes, route, ctx.signal);
      if (client === undefined) continue;
      const key = opts.rng.pick(counterKeys());
      const magnitude = opts.rng.int(1, COUNTER_DELTA_ABS_MAX);
      const delta = opts.rng.chance(0.5) ? magnitude : -magnitude;
      const id = ctx.recorder.invoke(opts.process, { f: 'counter_add', counter: name, key, delta });
      const out = await recorded(ctx.recorder, id, (signal) =>
        client.counter(name).add(key, BigInt(delta), { signal }),
      );
      if (!out.ok) nodes.learn(route, out.error);
      await (out.ok ? pace(pacing, ctx.signal) : pause(WORKLOAD_ERROR_BACKOFF_MS, ctx.signal));
    }
  } finally {
    await nodes.close();
  }
}
