#!/usr/bin/env node
// Fails on a function over FUNCTION_LINES_MAX lines in the src/ of a package or service
// (tests excluded), unless scripts/function-length-exceptions.txt lists it; fails too when a
// listed function grew, or no longer exceeds (so the list only shrinks). `--write` rewrites
// the exceptions file from what is found today (for after a refactor, not to hide a new one).
import { writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { readKnown } from './known-list.mjs';
import { lineOf, parseSource, ts } from './ts-source.mjs';
import { root, walk, workspacePackages } from './workspace.mjs';

export const FUNCTION_LINES_MAX = 70;
const EXCEPTIONS = 'scripts/function-length-exceptions.txt';
const HEADER = `# Functions over ${FUNCTION_LINES_MAX} lines that scripts/check-function-length.mjs tolerates for now, to shrink:
# "<lines> <path> <function>", one a line. A function not listed, one that grew past its listed
# length, and a listed one no longer over the limit all fail the check. Regenerate with
# \`node scripts/check-function-length.mjs --write\` after splitting functions, never to add one.
`;

/** The name a function-like node goes by: its own, or what it is assigned or passed to. */
function ownName(node, sf) {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const prefix = ts.isGetAccessor(node) ? 'get ' : ts.isSetAccessor(node) ? 'set ' : '';
  if (node.name) return prefix + node.name.getText(sf);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
    return parent.name.getText(sf);
  }
  if (ts.isPropertyDeclaration(parent) || ts.isExportAssignment(parent)) {
    return parent.name?.getText(sf) ?? 'default';
  }
  if (ts.isCallExpression(parent) || ts.isNewExpression(parent)) {
    const callee = parent.expression.getText(sf).replace(/\s+/g, '');
    return `${callee.length > 40 ? `…${callee.slice(-40)}` : callee}(callback)`;
  }
  return '<anonymous>';
}

function isFunctionLike(node) {
  return (
    (ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node) ||
      ts.isGetAccessor(node) ||
      ts.isSetAccessor(node) ||
      ts.isConstructorDeclaration(node)) &&
    node.body !== undefined
  );
}

/** Functions of one file over the limit: [{ name, lines }], names qualified by their owners. */
export function longFunctions(file) {
  const sf = parseSource(file);
  const found = [];
  const seen = new Map();
  const visit = (node, owners) => {
    let inner = owners;
    if (ts.isClassLike(node)) inner = [...owners, node.name?.getText(sf) ?? '<class>'];
    if (isFunctionLike(node)) {
      const base = [...owners, ownName(node, sf)].join('.');
      const count = (seen.get(base) ?? 0) + 1;
      seen.set(base, count);
      const name = count === 1 ? base : `${base}[${count}]`;
      const lines = lineOf(sf, node.end) - lineOf(sf, node.getStart(sf)) + 1;
      if (lines > FUNCTION_LINES_MAX) found.push({ name, lines });
      inner = [...owners, ownName(node, sf)];
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(sf, []);
  return found;
}

/** Every over-long function in the packages' and services' src/: key "path function" → lines. */
function findAll() {
  const found = new Map();
  for (const p of workspacePackages()) {
    if (!/^(packages|services)[\\/]/.test(p.rel)) continue;
    const files = walk(
      join(p.dir, 'src'),
      (f) => /\.(ts|mts)$/.test(f) && !/\.(test|d)\.ts$/.test(f),
    );
    for (const file of files) {
      const path = relative(root, file).split(sep).join('/');
      for (const { name, lines } of longFunctions(file)) found.set(`${path} ${name}`, lines);
    }
  }
  return found;
}

function readExceptions() {
  const listed = new Map();
  for (const line of readKnown(EXCEPTIONS)) {
    const m = /^(\d+)\s+(\S+\s+.+)$/.exec(line);
    if (m) listed.set(m[2], Number(m[1]));
    else listed.set(line, Number.NaN);
  }
  return listed;
}

function check(found, listed) {
  const problems = [];
  const max = FUNCTION_LINES_MAX;
  for (const [key, lines] of found) {
    const was = listed.get(key);
    if (was === undefined) problems.push(`${key} has ${lines} lines (at most ${max}): split it`);
    else if (Number.isNaN(was)) problems.push(`${EXCEPTIONS}: cannot read the line for ${key}`);
    else if (lines > was) problems.push(`${key} grew from ${was} to ${lines} lines: shrink it`);
  }
  for (const key of listed.keys()) {
    if (!found.has(key)) {
      problems.push(`${EXCEPTIONS} lists ${key}, no longer over ${max} lines: remove the line`);
    }
  }
  return problems;
}

const found = findAll();
if (process.argv.includes('--write')) {
  const lines = [...found]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, n]) => `${n} ${key}`);
  writeFileSync(join(root, EXCEPTIONS), `${HEADER}${lines.join('\n')}\n`);
  console.log(`check-function-length: wrote ${found.size} exceptions to ${EXCEPTIONS}`);
  process.exit(0);
}
const problems = check(found, readExceptions());
for (const problem of problems) console.error(problem);
console.log(
  `check-function-length: ${found.size} functions over ${FUNCTION_LINES_MAX} lines, ${problems.length} problems`,
);
process.exit(problems.length ? 1 : 0);
