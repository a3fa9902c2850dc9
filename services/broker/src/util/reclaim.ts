/**
 * The broker's native-memory collector, which @felix/transport runs after connections closed
 * (packages/transport/src/util/reclaim.ts decides when): V8's full collection, so the closed
 * connections' objects and what they own natively are freed, then glibc's `malloc_trim(0)`,
 * so what was freed goes back to the system.
 *
 * Why the trim: glibc returns freed memory from its main heap only at the top of the heap.
 * After slow subscribers left, their queued frames (about 150 MiB of buffers) were freed among
 * longer-lived allocations: the heap kept 243 MiB with 25 MiB in use and RSS stayed ~200 MiB
 * above what the process used, until malloc_trim(0) released the free pages in the middle
 * (docs/perf.md, the soak). The trim comes from a small addon of our own (native/malloc-trim.c,
 * built with the broker); where it could not be built or the C library is not glibc, the
 * collector only collects.
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { TRIM_AFTER_COLLECTION_MS } from '../limits.js';

export interface CollectorParts {
  /** V8's full collection. */
  collect: () => void;
  /** Returns freed memory to the system; answers whether any was released. Null: none. */
  trim: (() => boolean) | null;
  /** Wait between the collection and the trim. */
  trimAfterMs?: number;
  /** Told after each trim, with whether memory was released and how long the trim took. */
  onTrim?: (released: boolean, ms: number) => void;
}

/**
 * V8's full collection, usable without starting node with `--expose-gc`: the flag set at run
 * time exposes `gc` in a new context only. Null when V8 refuses.
 */
export function fullCollection(): (() => void) | null {
  const own = (globalThis as { gc?: () => void }).gc;
  if (typeof own === 'function') return own;
  setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('gc');
  return typeof gc === 'function' ? (gc as () => void) : null;
}

/** Where the addon is, relative to this module: beside it in the bundle (dist/), or in dist/
 *  when the broker runs from its sources (src/util/, as the tests run it). */
const ADDON_PATHS = ['./malloc-trim.node', '../../dist/malloc-trim.node'];

/** glibc's malloc_trim(0) from the broker's addon (dist/malloc-trim.node), or null where the
 *  addon was not built (no C compiler at build time, not Linux) or does not load. */
export function loadMallocTrim(from: string = import.meta.url): (() => boolean) | null {
  const require = createRequire(from);
  for (const path of ADDON_PATHS) {
    let addon: { trim?: unknown };
    try {
      addon = require(path) as { trim?: unknown };
    } catch {
      continue; // not at this path (or not loadable): the next, else the collector only collects
    }
    if (typeof addon.trim === 'function') return addon.trim as () => boolean;
  }
  return null;
}

/**
 * The collector the transport runs: the full collection now, the trim `trimAfterMs` later (one
 * trim pending at a time; a collection while it waits is covered by it). The timer does not
 * keep the process alive.
 */
export function nativeMemoryCollector(parts: CollectorParts): () => void {
  const { collect, trim, onTrim } = parts;
  const delay = parts.trimAfterMs ?? TRIM_AFTER_COLLECTION_MS;
  let pending: NodeJS.Timeout | null = null;
  const runTrim = () => {
    pending = null;
    const t0 = performance.now();
    const released = trim!();
    onTrim?.(released, performance.now() - t0);
  };
  return () => {
    collect();
    if (trim === null || pending !== null) return;
    pending = setTimeout(runTrim, delay);
    pending.unref();
  };
}
