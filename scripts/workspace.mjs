// Shared helpers for the repository check scripts: find workspace packages and their files.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export const root = process.env.FELIX_CHECK_ROOT ?? join(import.meta.dirname, '..');

const GROUPS = [
  'packages',
  'packages/testing',
  'services',
  'demos',
  'scripts/bench',
  'scripts/soak',
];

/** Every workspace package: { name, dir, pkg }. */
export function workspacePackages() {
  const found = [];
  for (const group of GROUPS) {
    const dir = join(root, group);
    if (!existsSync(dir)) continue;
    const candidates = group.startsWith('scripts/') ? [''] : readdirSync(dir);
    for (const name of candidates) {
      const pkgDir = join(dir, name);
      const pkgFile = join(pkgDir, 'package.json');
      if (!existsSync(pkgFile)) continue;
      const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
      found.push({ name: pkg.name, dir: pkgDir, rel: relative(root, pkgDir), pkg });
    }
  }
  return found;
}

const SKIP = new Set([
  'node_modules',
  'dist',
  '.turbo',
  'coverage',
  '.git',
  'vendor',
  '.felix',
  '.test-results',
]);

/** Files under `dir` (recursively) whose name passes `accept`. */
export function walk(dir, accept, out = []) {
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir)) {
    if (SKIP.has(entry)) continue;
    const path = join(dir, entry);
    const st = statSync(path);
    if (st.isDirectory()) walk(path, accept, out);
    else if (accept(path)) out.push(path);
  }
  return out;
}
