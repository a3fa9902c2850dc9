// What a packed (or installed) public package must satisfy to work outside the workspace: the
// metadata npm shows, no dependency on a private workspace package or a workspace-only
// specifier, and every module its dist imports either built into Node, itself, or declared.
// Used by check-pack.mjs (on the installed tarballs) and release-dry-run.mjs (on the registry's
// copies).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';

/** Fields every public package.json carries (RELEASING.md). */
export const REQUIRED_FIELDS = [
  'repository',
  'homepage',
  'bugs',
  'license',
  'engines',
  'keywords',
  'sideEffects',
  'files',
  'exports',
  'types',
];
const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s+['"]([^'"]+)['"]|require\(\s*['"]([^'"]+)['"]\s*\)/gm;
const BUILTIN = new Set(builtinModules);
const DEP_FIELDS = ['dependencies', 'optionalDependencies', 'peerDependencies'];

function jsFiles(dir) {
  const out = [];
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...jsFiles(p));
    else if (/\.(js|mjs|cjs)$/.test(name)) out.push(p);
  }
  return out;
}

const packageOf = (spec) =>
  spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];

/** The packages the files under `dist` import by name (Node's own modules left out). */
export function importedPackages(dir) {
  const found = new Set();
  for (const file of jsFiles(join(dir, 'dist'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const spec = m[1] ?? m[2] ?? m[3] ?? m[4];
      if (!spec || spec.startsWith('.') || spec.startsWith('node:') || spec.startsWith('#'))
        continue;
      if (BUILTIN.has(spec) || BUILTIN.has(spec.split('/')[0])) continue;
      found.add(packageOf(spec));
    }
  }
  return found;
}

function metadataProblems(pkg) {
  const problems = REQUIRED_FIELDS.filter((f) => pkg[f] === undefined).map(
    (f) => `${pkg.name}: package.json lacks "${f}"`,
  );
  if (pkg.private === true) problems.push(`${pkg.name}: is private but was packed`);
  if (!pkg.engines?.node) problems.push(`${pkg.name}: engines.node is not set`);
  return problems;
}

function dependencyProblems(pkg, privateNames) {
  const problems = [];
  for (const field of DEP_FIELDS) {
    for (const [name, spec] of Object.entries(pkg[field] ?? {})) {
      if (privateNames.has(name))
        problems.push(`${pkg.name}: ${field} names the private workspace package ${name}`);
      if (/^(workspace|file|link):/.test(String(spec)))
        problems.push(`${pkg.name}: ${field}.${name} is "${spec}", which only the workspace has`);
    }
  }
  return problems;
}

/**
 * Problems of the package installed (or unpacked) at `dir`; `privateNames` are the workspace's
 * private package names, which a public package may bundle but never depend on.
 */
export function packageProblems(dir, privateNames) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const problems = [...metadataProblems(pkg), ...dependencyProblems(pkg, privateNames)];
  if (!existsSync(join(dir, 'dist'))) problems.push(`${pkg.name}: has no dist`);
  const declared = new Set(DEP_FIELDS.flatMap((f) => Object.keys(pkg[f] ?? {})));
  const imported = importedPackages(dir);
  for (const name of imported) {
    if (name === pkg.name || declared.has(name)) continue;
    problems.push(`${pkg.name}: dist imports ${name}, which package.json does not declare`);
  }
  // Optional dependencies are native addons loaded by a computed name, so only plain ones count.
  for (const name of Object.keys(pkg.dependencies ?? {})) {
    if (!imported.has(name))
      problems.push(`${pkg.name}: declares ${name}, which nothing in dist imports`);
  }
  return problems;
}
