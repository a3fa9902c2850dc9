#!/usr/bin/env node
// Fails when a doc cites a test that does not exist, or when two tests share a name.
// A citation is a backticked snake_case sentence in docs/**/*.md or a package README.
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { root, walk, workspacePackages } from './workspace.mjs';

const TEST_NAME =
  /\b(?:it|test)(?:\.(?:each\([^)]*\)|skipIf\([^)]*\)|runIf\([^)]*\)|only|skip|concurrent|sequential|fails))*\(\s*(['"`])([a-z0-9_]+)\1/g;
const CITATION = /`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`/g;
const VERBS = new Set([
  'is',
  'are',
  'was',
  'never',
  'has',
  'does',
  'gets',
  'get',
  'answers',
  'stays',
  'survives',
]);

/** Backticked snake_case tokens that are identifiers, not test names. */
function ignoreList() {
  const file = join(root, 'scripts', 'doc-citation-ignore.txt');
  if (!existsSync(file)) return new Set();
  return new Set(
    readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#')),
  );
}

function looksLikeSentence(token) {
  const words = token.split('_');
  if (words.length >= 4) return true;
  return words.length === 3 && VERBS.has(words[1]);
}

const testFiles = walk(root, (p) => /\.test\.(ts|mts|js|mjs)$/.test(p));
const tests = new Map();
const duplicates = [];
for (const file of testFiles) {
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(TEST_NAME)) {
    const name = m[2];
    const where = relative(root, file);
    if (tests.has(name)) duplicates.push(`${name}: ${tests.get(name)} and ${where}`);
    else tests.set(name, where);
  }
}

const docFiles = [
  ...walk(join(root, 'docs'), (p) => p.endsWith('.md')),
  ...workspacePackages()
    .map((p) => join(p.dir, 'README.md'))
    .filter(existsSync),
  join(root, 'README.md'),
].filter(existsSync);

const ignore = ignoreList();
const missing = [];
let cited = 0;
for (const file of docFiles) {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  for (const m of text.matchAll(CITATION)) {
    const token = m[1];
    if (ignore.has(token) || !looksLikeSentence(token)) continue;
    cited++;
    if (!tests.has(token))
      missing.push(`${relative(root, file)} cites \`${token}\`, which is not a test`);
  }
}

for (const d of duplicates) console.error(`duplicate test name: ${d}`);
for (const m of missing) console.error(m);
console.log(
  `check-doc-citations: ${tests.size} tests, ${cited} citations in ${docFiles.length} docs, ${missing.length} missing, ${duplicates.length} duplicate names`,
);
process.exit(missing.length || duplicates.length ? 1 : 0);
