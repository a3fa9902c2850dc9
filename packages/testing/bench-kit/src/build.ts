/**
 * Guards a bench against measuring a stale build: benches import packages by name, which
 * resolves to their built dist/, so a src/ edited after the last build would go unmeasured.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StaleBuildError } from './errors.js';
import { FRESHNESS_SCAN_FILES_MAX } from './limits.js';

/** The newest file under `dir` and its mtime (ms), looking at no more than the bound. */
function newestUnder(dir: string): { path: string; mtimeMs: number } | null {
  let best: { path: string; mtimeMs: number } | null = null;
  const stack = [dir];
  let seen = 0;
  while (stack.length > 0 && seen < FRESHNESS_SCAN_FILES_MAX) {
    const d = stack.pop()!;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      else if (++seen <= FRESHNESS_SCAN_FILES_MAX) {
        const m = statSync(p).mtimeMs;
        if (best === null || m > best.mtimeMs) best = { path: p, mtimeMs: m };
      }
    }
  }
  return best;
}

/**
 * Throws StaleBuildError when a file under the package's src/ is newer than `builtFile` (a
 * package's dist entry, as `import.meta.resolve('@felix/wire')` gives it, or a service's
 * dist/main.js). The package is the dist folder's parent. FELIX_BENCH_STALE_OK=1 turns the
 * error into a warning (mtimes can lie: a cached build that restored nothing, a touched file).
 */
export function assertFreshBuild(builtFile: string | URL): void {
  const file =
    builtFile instanceof URL || builtFile.startsWith('file:')
      ? fileURLToPath(builtFile)
      : builtFile;
  const src = join(dirname(dirname(file)), 'src');
  if (!existsSync(src)) return; // an installed package: nothing to compare with
  const built = statSync(file).mtimeMs;
  const newest = newestUnder(src);
  if (newest === null || newest.mtimeMs <= built) return;
  const err = new StaleBuildError(file, newest.path);
  if (process.env.FELIX_BENCH_STALE_OK !== '1') throw err;
  console.warn(`warning (FELIX_BENCH_STALE_OK=1): ${err.message}`);
}
