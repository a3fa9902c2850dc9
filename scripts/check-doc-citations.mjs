#!/usr/bin/env node
// Fails when a doc cites a test that does not exist, when two tests share a name, or when a
// doc cites a source file that does not exist. A test citation is a backticked snake_case
// sentence in docs/**/*.md, a package README or the root README; a file citation is a
// backticked source path there (`log/segment-log.ts`, `src/index.ts`, `store.ts`).
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { root, walk, workspacePackages } from './workspace.mjs';

const TEST_NAME =
  /\b(?:it|test)(?:\.(?:each\([^)]*\)|skipIf\([^)]*\)|runIf\([^)]*\)|only|skip|concurrent|sequential|fails))*\(\s*(['"`])([a-z0-9_]+)\1/g;
const CITATION = /`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`/g;
// A backticked source file name or path, optionally with a `:line`; globs and templates
// (`*.test.ts`, `<name>.ts`) are not citations of one file.
const FILE_CITATION = /`([A-Za-z0-9_.@/-]+\.(?:ts|mts|cts|tsx|js|mjs|cjs))(?::\d+)?`/g;
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

/** Backticked snake_case tokens that are not test names, and deliberate mentions of files that are gone. */
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

const packages = workspacePackages();
const sourceNames = new Set(
  walk(root, (p) => /\.(ts|mts|cts|tsx|js|mjs|cjs)$/.test(p)).map((p) => basename(p)),
);

/**
 * Whether a cited path names an existing file. A path may be written from the repository root
 * (`services/broker/src/broker.ts`), from the citing doc, from any package or its src/
 * (`log/segment-log.ts`, `src/limits.ts`, `test/x.test.ts`), or from packages/ or services/
 * (`broker/src/errors.ts`); a bare file name must exist somewhere in the repository.
 */
function fileExists(doc, path) {
  if (!path.includes('/')) return sourceNames.has(path);
  const bases = [root, dirname(doc), join(root, 'packages'), join(root, 'services')];
  for (const p of packages) bases.push(p.dir, join(p.dir, 'src'));
  return bases.some((base) => existsSync(join(base, path)));
}

const ignore = ignoreList();
const missing = [];
let cited = 0;
let citedFiles = 0;
for (const file of docFiles) {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  for (const m of text.matchAll(CITATION)) {
    const token = m[1];
    if (ignore.has(token) || !looksLikeSentence(token)) continue;
    cited++;
    if (!tests.has(token))
      missing.push(`${relative(root, file)} cites \`${token}\`, which is not a test`);
  }
  for (const m of text.matchAll(FILE_CITATION)) {
    const path = m[1];
    if (ignore.has(path)) continue;
    citedFiles++;
    if (!fileExists(file, path)) {
      missing.push(`${relative(root, file)} cites \`${path}\`, which is not a file`);
    }
  }
}

for (const d of duplicates) console.error(`duplicate test name: ${d}`);
for (const m of missing) console.error(m);
console.log(
  `check-doc-citations: ${tests.size} tests, ${cited} test and ${citedFiles} file citations in ${docFiles.length} docs, ${missing.length} missing, ${duplicates.length} duplicate names`,
);
process.exit(missing.length || duplicates.length ? 1 : 0);
