/**
 * The broker's native-memory collector, which @felix/transport runs after connections closed
 * (packages/transport/src/util/reclaim.ts decides when): V8's full collection, so the closed
 * connections' objects and what they own natively are freed, then, once collections went quiet,
 * glibc's `malloc_trim(0)`, so what was freed goes back to the system.
 *
 * Why the trim: glibc returns freed memory from its main heap only at the top of the heap.
 * After slow subscribers left, their queued frames (about 150 MiB of buffers) were freed among
 * longer-lived allocations: the heap kept 243 MiB with 25 MiB in use and RSS stayed ~200 MiB
 * above what the process used, until malloc_trim(0) released the free pages in the middle
 * (docs/perf.md, the soak). Before the trim, V8's low-memory notification shrinks the young
 * generation, which a plain full collection leaves at its grown size (up to 32 MiB of RSS after
 * a busy phase). Why it waits for quiet: steady churn reuses what it freed, and each trim costs
 * time (memory-reducing collections on the JS thread, releasing pages, then faulting them in
 * again when reused). Both come from a small addon of our own (native/malloc-trim.cc, built with
 * the broker; malloc_trim runs on the libuv threadpool); where it could not be built, the
 * collector only collects.
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { TRIM_DEFER_MS_MAX, TRIM_QUIET_MS } from '../limits.js';

/** Returns freed memory to the system; answers whether malloc_trim released any. */
export type Trim = () => Promise<boolean>;

export interface CollectorParts {
  /** V8's full collection. */
  collect: () => void;
  /** The trim; null where there is none (the collector then only collects). */
  trim: Trim | null;
  /** Quiet time after the last collection before the trim (TRIM_QUIET_MS). */
  quietMs?: number;
  /** Longest a trim waits behind further collections (TRIM_DEFER_MS_MAX). */
  deferMsMax?: number;
  /** Told after each trim: whether memory was released, how long it took, or its failure. */
  onTrim?: (released: boolean, ms: number) => void;
  onTrimError?: (err: unknown) => void;
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

/**
 * The broker addon's return of memory (dist/malloc-trim.node): V8's memory-reducing collections
 * (which also shrink the young generation a plain full collection leaves grown, on the JS
 * thread), then glibc's malloc_trim(0) on the threadpool. Null where the addon was not built
 * (no C++ compiler at build time, not Linux) or does not load.
 */
export function loadMallocTrim(from: string = import.meta.url): Trim | null {
  const require = createRequire(from);
  for (const path of ADDON_PATHS) {
    let addon: { trim?: unknown; reduceHeap?: unknown };
    try {
      addon = require(path) as typeof addon;
    } catch {
      continue; // not at this path (or not loadable): the next, else the collector only collects
    }
    const { trim, reduceHeap } = addon;
    if (typeof trim !== 'function' || typeof reduceHeap !== 'function') continue;
    return () => {
      (reduceHeap as () => void)();
      return (trim as () => Promise<boolean>)();
    };
  }
  return null;
}

/**
 * The collector the transport runs: the full collection at once; the trim once collections
 * went quiet for `quietMs` (a collection while it waits postpones it, but never past
 * `deferMsMax` after the first), one trim at a time. Timers do not keep the process alive.
 */
export function nativeMemoryCollector(parts: CollectorParts): () => void {
  const { collect, trim, onTrim, onTrimError } = parts;
  const quietMs = parts.quietMs ?? TRIM_QUIET_MS;
  const deferMsMax = parts.deferMsMax ?? TRIM_DEFER_MS_MAX;
  let timer: NodeJS.Timeout | null = null;
  /** When the first collection the next trim covers ran; null when none is waiting. */
  let waitingSince: number | null = null;
  let trimming = false;

  const schedule = () => {
    if (timer !== null) clearTimeout(timer);
    const latest = waitingSince! + deferMsMax;
    timer = setTimeout(runTrim, Math.max(0, Math.min(quietMs, latest - Date.now())));
    timer.unref();
  };
  const runTrim = () => {
    timer = null;
    if (trimming) return; // the trim in flight reschedules when it ends
    trimming = true;
    waitingSince = null;
    const t0 = performance.now();
    // A synchronous throw (the job could not be queued) becomes a rejection.
    new Promise<boolean>((ok) => ok(trim!()))
      .then(
        (released) => onTrim?.(released, performance.now() - t0),
        (err: unknown) => onTrimError?.(err),
      )
      .finally(() => {
        trimming = false;
        if (waitingSince !== null) schedule(); // collections ran while it trimmed
      });
  };
  return () => {
    collect();
    if (trim === null) return;
    waitingSince ??= Date.now();
    if (!trimming) schedule();
  };
}
