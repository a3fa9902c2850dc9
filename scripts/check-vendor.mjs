#!/usr/bin/env node
// Verifies that vendored third-party code matches vendor/MANIFEST.json: every file is listed
// with its SHA-256, unpatched files are byte-identical to upstream, patched files carry a
// marker for each patch the manifest gives a reason for, and the licence file is present.
// When the upstream package is installed (node_modules), upstream hashes are re-checked
// against it too. `--update` rewrites the hashes after a deliberate edit (reasons stay).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const manifestPath = join(root, 'vendor', 'MANIFEST.json');
const update = process.argv.includes('--update');
const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
const failures = [];

const sha256 = (path) => createHash('sha256').update(readFileSync(path)).digest('hex');

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

for (const pkg of manifest.packages) {
  const dir = join(root, 'vendor', pkg.dir);
  if (!existsSync(dir)) {
    failures.push(`${pkg.dir}: vendored directory missing`);
    continue;
  }
  for (const key of ['upstream', 'version', 'integrity', 'licence', 'licenceFile']) {
    if (!pkg[key]) failures.push(`${pkg.dir}: manifest lacks "${key}"`);
  }
  if (!existsSync(join(dir, pkg.licenceFile ?? 'LICENSE')))
    failures.push(`${pkg.dir}: licence file missing`);
  const patchIds = new Set((pkg.patches ?? []).map((p) => p.id));
  for (const p of pkg.patches ?? []) {
    if (!p.reason || p.reason.length < 20)
      failures.push(`${pkg.dir}: patch ${p.id} has no real reason`);
  }
  const upstreamDir = pkg.installedUpstream ? join(root, pkg.installedUpstream) : null;
  // The installed copy (pnpm copies a file: dependency at install time) must not be stale.
  const installedDir = pkg.installedAt ? join(root, pkg.installedAt) : null;
  const onDisk = walk(dir)
    .map((p) => relative(dir, p))
    .sort();
  for (const f of onDisk) {
    if (!pkg.files[f]) failures.push(`${pkg.dir}/${f}: not listed in the manifest`);
  }
  for (const [f, entry] of Object.entries(pkg.files)) {
    const path = join(dir, f);
    if (!existsSync(path)) {
      failures.push(`${pkg.dir}/${f}: listed but missing`);
      continue;
    }
    const actual = sha256(path);
    if (update) entry.sha256 = actual;
    else if (actual !== entry.sha256)
      failures.push(`${pkg.dir}/${f}: sha256 ${actual} != manifest ${entry.sha256}`);
    const patches = entry.patches ?? [];
    if (patches.length === 0 && entry.upstreamSha256 !== entry.sha256) {
      failures.push(`${pkg.dir}/${f}: differs from upstream but lists no patch`);
    }
    const text = readFileSync(path, 'utf8');
    for (const id of patches) {
      if (!patchIds.has(id)) failures.push(`${pkg.dir}/${f}: patch ${id} has no manifest entry`);
      if (entry.marker !== false && !text.includes(`[felix patch ${id}]`)) {
        failures.push(`${pkg.dir}/${f}: no "[felix patch ${id}]" marker`);
      }
    }
    if (installedDir && existsSync(installedDir)) {
      const inst = join(installedDir, f);
      if (!existsSync(inst) || sha256(inst) !== actual) {
        failures.push(
          `${pkg.dir}/${f}: installed copy under ${pkg.installedAt} is stale (run pnpm install)`,
        );
      }
    }
    if (upstreamDir && existsSync(upstreamDir) && entry.upstreamSha256) {
      const up = join(upstreamDir, f);
      if (existsSync(up) && sha256(up) !== entry.upstreamSha256) {
        failures.push(
          `${pkg.dir}/${f}: installed upstream differs from the recorded upstream hash`,
        );
      }
    }
  }
  if (upstreamDir && existsSync(join(upstreamDir, 'package.json'))) {
    const v = JSON.parse(readFileSync(join(upstreamDir, 'package.json'), 'utf8')).version;
    if (v !== pkg.version)
      failures.push(`${pkg.dir}: installed upstream is ${v}, manifest says ${pkg.version}`);
  }
}

if (update) {
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  console.log('check-vendor: manifest hashes updated');
}
if (failures.length > 0) {
  for (const f of failures) console.error(`check-vendor: ${f}`);
  process.exit(1);
}
console.log(`check-vendor: ${manifest.packages.length} vendored package(s) match the manifest`);
