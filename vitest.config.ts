import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
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

export default defineConfig({
  resolve: { alias },
  test: {
    include: ['packages/**/*.test.ts', 'services/**/*.test.ts', 'scripts/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
