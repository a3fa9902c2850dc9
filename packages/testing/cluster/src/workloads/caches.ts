/**
 * Cache writers/readers and counter adders. A cache process puts unique values `<process>-<n>`
 * to keys k0..k2 of the campaign's cache and reads them back (a seeded mix); a counter process
 * adds small signed deltas to keys c0..c2 of the counters beside that cache.
 */
import {
  CACHE_KEYS,
  COUNTER_DELTA_ABS_MAX,
  COUNTER_KEYS,
  WORKLOAD_ERROR_BACKOFF_MS,
} from '../limits.js';
import type { Rng } from '../rng.js';
import {
  type WorkloadContext,
  closeClient,
  pace,
  pause,
  recorded,
  text,
  workloadClient,
} from './common.js';

export interface KeyedOptions {
  process: string;
  rng: Rng;
}

export const cacheKeys = (): string[] => Array.from({ length: CACHE_KEYS }, (_, i) => `k${i}`);
export const counterKeys = (): string[] => Array.from({ length: COUNTER_KEYS }, (_, i) => `c${i}`);

export async function runCacheClient(ctx: WorkloadContext, opts: KeyedOptions): Promise<void> {
  const client = await workloadClient(ctx.target);
  const cacheName = ctx.names.cache;
  const cache = client.cache(cacheName);
  try {
    for (let n = 0; !ctx.signal.aborted; ) {
      const key = opts.rng.pick(cacheKeys());
      let ok: boolean;
      if (opts.rng.chance(0.6)) {
        const value = `${opts.process}-${n++}`;
        const id = ctx.recorder.invoke(opts.process, {
          f: 'cache_put',
          cache: cacheName,
          key,
          value,
        });
        ok = (await recorded(ctx.recorder, id, (signal) => cache.put(key, value, { signal }))).ok;
      } else {
        const id = ctx.recorder.invoke(opts.process, { f: 'cache_get', cache: cacheName, key });
        const out = await recorded(
          ctx.recorder,
          id,
          (signal) => cache.get(key, { signal }),
          (v) => ({ value: v === undefined ? null : text(v) }),
        );
        ok = out.ok;
      }
      await (ok ? pace(opts.rng, ctx.signal) : pause(WORKLOAD_ERROR_BACKOFF_MS, ctx.signal));
    }
  } finally {
    await closeClient(client);
  }
}

export async function runCounterAdder(ctx: WorkloadContext, opts: KeyedOptions): Promise<void> {
  const client = await workloadClient(ctx.target);
  const name = ctx.names.counter;
  const counter = client.counter(name);
  try {
    while (!ctx.signal.aborted) {
      const key = opts.rng.pick(counterKeys());
      const magnitude = opts.rng.int(1, COUNTER_DELTA_ABS_MAX);
      const delta = opts.rng.chance(0.5) ? magnitude : -magnitude;
      const id = ctx.recorder.invoke(opts.process, { f: 'counter_add', counter: name, key, delta });
      const out = await recorded(ctx.recorder, id, (signal) =>
        counter.add(key, BigInt(delta), { signal }),
      );
      await (out.ok ? pace(opts.rng, ctx.signal) : pause(WORKLOAD_ERROR_BACKOFF_MS, ctx.signal));
    }
  } finally {
    await closeClient(client);
  }
}
