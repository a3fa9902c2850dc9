import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TestSpecification } from 'vitest/node';
import { BaseSequencer } from 'vitest/node';
import { defineConfig } from 'vitest/config';

// Tests import workspace packages from source, so a stale dist never hides a change.
// Child processes (brokers, crash writers) run the built dist instead.
const root = resolve(import.meta.dirname);
const alias: Record<string, string> = {};
for (const group of ['packages', 'packages/testing', 'services']) {
  const dir = join(root, group);
  if (!existsSync(dir)) continue;
  for (const name of readdirSync(dir)) {
    const pkgJson = join(dir, name, 'package.json');
    const entry = join(dir, name, 'src', 'index.ts');
    if (!existsSync(pkgJson) || !existsSync(entry)) continue;
    const pkg = JSON.parse(readFileSync(pkgJson, 'utf8')) as { name: string };
    alias[pkg.name] = entry;
  }
}

/**
 * Files that start real processes and wait on failovers run first: on a clean clone vitest has no
 * durations to order by, and a 50 s campaign started last left one fork working alone at the end.
 * Runs with recorded durations keep vitest's order (failed first, then longest first).
 */
const SLOW_FIRST = [
  /campaign-[a-z-]+\.test\.ts$/,
  /packages\/testing\/cluster\//,
  /demos\.test\.ts$/,
  /packages\/testing\/e2e\//,
  // Single files of 30 s or more elsewhere (felixctl-data started last once: 60 s alone).
  /(felixctl-data|crash|group-cursor-durability|native-memory-trim|cluster-control-plane)\.test\.ts$/,
];
class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const known = files.some((f) =>
      this.ctx.cache.getFileTestResults(`${f.project.name}:${f.moduleId.slice(root.length + 1)}`),
    );
    if (known) return super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((re) => re.test(f.moduleId));
      return i === -1 ? SLOW_FIRST.length : i;
    };
    return [...files].sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  resolve: { alias },
  test: {
    include: ['packages/**/*.test.ts', 'services/**/*.test.ts', 'scripts/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    sequence: { sequencer: SlowFirstSequencer },
    pool: 'forks',
    // One module graph per fork, not one per file: a fresh process importing vitest and the
    // sources for each of ~300 files cost about 280 s of CPU (vitest's "collect" and "prepare").
    // Tests restore what they change (env, timers) and close what they open.
    isolate: false,
    // Three forks on two cores: the cluster and process tests spend much of their time waiting
    // on failovers and child processes. All three kept for the whole run: an idle fork ended
    // mid-run is a worker torn down under a module graph still in use.
    poolOptions: { forks: { maxForks: 3, minForks: 3 } },
  },
});
