#!/usr/bin/env node
// Enforces the dependency table in docs/architecture.md: every import of a workspace package
// must be allowed by the table and declared in the importing package's package.json. Also
// enforces the structure rules of source-structure.mjs (no import circle, no broker folders
// importing each other, no file over 800 lines), with today's violations held in
// check-deps-known.txt until they are fixed (the list may only shrink).
import { readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { ratchet } from './known-list.mjs';
import { structureViolations } from './source-structure.mjs';
import { root, walk, workspacePackages } from './workspace.mjs';

const KNOWN = 'scripts/check-deps-known.txt';
// Pure packages whose src/ may import nothing from outside the workspace but these
// (no `node:` modules either), so they stay free of I/O.
const OUTSIDE_ALLOWED = new Map([['@felix/authz', new Set(['jose'])]]);

function readTable() {
  const doc = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
  const section = doc.split('## Dependency table')[1]?.split('\n## ')[0];
  if (!section) throw new Error('docs/architecture.md has no "## Dependency table" section');
  const table = new Map();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 4 || !cells[1]?.startsWith('`@felix/')) continue;
    const names = (s) => [...s.matchAll(/`(@felix\/[a-z0-9*-]+)`/g)].map((m) => m[1]);
    table.set(names(cells[1])[0], new Set(names(cells[2])));
  }
  return table;
}

function allowedFor(table, name) {
  if (table.has(name)) return table.get(name);
  for (const [pattern, allowed] of table) {
    if (pattern.endsWith('*') && name.startsWith(pattern.slice(0, -1))) return allowed;
  }
  return null;
}

const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s+['"]([^'"]+)['"]/gm;

const table = readTable();
const packages = workspacePackages();
const byName = new Map(packages.map((p) => [p.name, p]));
const problems = [];
let checked = 0;

for (const p of packages) {
  const allowed = allowedFor(table, p.name);
  if (!allowed) {
    problems.push(`${p.name} (${p.rel}) is not in the dependency table of docs/architecture.md`);
    continue;
  }
  const deps = new Set(Object.keys(p.pkg.dependencies ?? {}));
  const devDeps = new Set(Object.keys(p.pkg.devDependencies ?? {}));
  // A published package may bundle private workspace code into its dist (tsup noExternal);
  // it then declares it as a devDependency and lists it under `felix.bundles`.
  for (const bundled of p.pkg.felix?.bundles ?? []) deps.add(bundled);
  const files = walk(p.dir, (f) => /\.(ts|mts|js|mjs)$/.test(f) && !f.endsWith('.d.ts'));
  for (const file of files) {
    const rel = relative(root, file);
    const isTest = /\.test\.(ts|mts|js|mjs)$/.test(file) || rel.includes(`${sep}test${sep}`);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2] ?? m[3];
      if (!spec) continue;
      checked++;
      if (spec.startsWith('.')) {
        const target = resolve(file, '..', spec);
        if (!target.startsWith(p.dir + sep)) {
          problems.push(`${rel}: relative import '${spec}' leaves its package`);
        }
        continue;
      }
      const name = spec.startsWith('@')
        ? spec.split('/').slice(0, 2).join('/')
        : spec.split('/')[0];
      if (!name.startsWith('@felix/')) {
        const outside = OUTSIDE_ALLOWED.get(p.name);
        if (outside && file.startsWith(join(p.dir, 'src', '')) && !outside.has(name)) {
          problems.push(
            `${rel}: ${p.name} may import only ${[...outside].join(', ')} from outside`,
          );
        }
        continue;
      }
      if (spec !== name)
        problems.push(`${rel}: deep import '${spec}' (import the package entry only)`);
      if (name === p.name && isTest) continue; // a test may import its own package by name
      if (!byName.has(name)) {
        problems.push(`${rel}: imports unknown workspace package ${name}`);
        continue;
      }
      const testOnly = name.startsWith('@felix/testing-') || devDeps.has(name);
      if (!allowed.has(name) && !(isTest && testOnly)) {
        problems.push(`${rel}: ${p.name} may not import ${name} (docs/architecture.md)`);
      }
      if (!deps.has(name) && !(isTest && devDeps.has(name))) {
        problems.push(`${rel}: imports ${name} without declaring it in ${p.rel}/package.json`);
      }
    }
  }
}

const structure = structureViolations(packages);
problems.push(...ratchet(structure, KNOWN));

for (const problem of problems) console.error(problem);
console.log(
  `check-deps: ${packages.length} packages, ${checked} imports checked, ${structure.size} structure violations (see ${KNOWN}), ${problems.length} problems`,
);
process.exit(problems.length ? 1 : 0);
