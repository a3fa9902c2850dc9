#!/usr/bin/env node
// Builds native/malloc-trim.cc into dist/malloc-trim.node (run by `pnpm run build` after tsup).
// Only a C++ compiler and Node's headers are needed, no node-gyp. Where either is missing the
// broker still runs, without returning freed native memory (reclaim.ts logs it once), so a
// missing compiler is a warning here, not a failure.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dist', 'malloc-trim.node');
/** Where Node's headers are: npm_config_nodedir, else beside the running node binary. */
const includeDirs = [
  process.env.npm_config_nodedir && join(process.env.npm_config_nodedir, 'include', 'node'),
  resolve(dirname(process.execPath), '..', 'include', 'node'),
  '/usr/include/node',
].filter((d) => d && existsSync(join(d, 'node_api.h')));

if (process.platform !== 'linux') {
  console.log('malloc-trim: not Linux; skipped');
  process.exit(0);
}
if (includeDirs.length === 0) {
  console.warn(
    'malloc-trim: no node_api.h found (set npm_config_nodedir); broker built without it',
  );
  process.exit(0);
}
mkdirSync(dirname(out), { recursive: true });
const cxx = process.env.CXX ?? 'c++';
const args = ['-std=c++17', '-O2', '-shared', '-fPIC', '-Wall', `-I${includeDirs[0]}`];
try {
  execFileSync(cxx, [...args, '-o', out, join(here, 'malloc-trim.cc')], { stdio: 'inherit' });
  console.log(`malloc-trim: built ${out}`);
} catch (err) {
  console.warn(`malloc-trim: ${cxx} failed (${err.message}); broker built without it`);
}
