#!/usr/bin/env node
// Fails on an error swallowed without a reason: `.catch(() => undefined)`, `.catch(() => {})`
// or an empty `catch {}` block with no comment on its line, inside it, on the line just above,
// or on the line just above the statement that holds it (a multi-line `const x = …` or `try`). scripts/check-catch-reasons-known.txt holds, per file, how many such catches are
// tolerated for now: more fails, and so do fewer (lower the count, so the list only shrinks).
// `--write` rewrites that file from what is found today.
import { writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { readKnown } from './known-list.mjs';
import { commentLines, lineOf, parseSource, ts } from './ts-source.mjs';
import { root, walk } from './workspace.mjs';

const KNOWN = 'scripts/check-catch-reasons-known.txt';
const DIRS = ['packages', 'services', 'demos', 'scripts'];
const HEADER = `# TEMPORARY: files whose swallowed errors (.catch(() => undefined), .catch(() => {}),
# catch {}) have no one-line reason yet, as "<count> <path>". scripts/check-catch-reasons.mjs
# fails when a file has more than its count and when it has fewer (lower the count), so this
# list only shrinks. Add the reasons, then delete the line.
`;

/** A handler that does nothing: an empty block, or `undefined` or `void x` (not a `null` sentinel). */
function doesNothing(fn) {
  if (!ts.isArrowFunction(fn) && !ts.isFunctionExpression(fn)) return false;
  const body = fn.body;
  if (ts.isBlock(body)) return body.statements.length === 0;
  if (ts.isVoidExpression(body)) return true;
  return ts.isIdentifier(body) && body.text === 'undefined';
}

/** The 1-based line of the statement that holds a node. */
function statementLine(sf, node) {
  let at = node.parent;
  while (at && !ts.isSourceFile(at)) {
    if (ts.isStatement(at) || ts.isClassElement(at)) return lineOf(sf, at.getStart(sf));
    at = at.parent;
  }
  return lineOf(sf, node.getStart(sf));
}

/** Where each swallowing catch of a file sits: [{ line, end, statement }] (1-based lines). */
function swallowingCatches(sf) {
  const found = [];
  const visit = (node) => {
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === 'catch' &&
      node.arguments.length === 1 &&
      doesNothing(node.arguments[0])
    ) {
      found.push({
        line: lineOf(sf, node.expression.name.getStart(sf)),
        end: lineOf(sf, node.end),
        statement: statementLine(sf, node),
      });
    }
    if (ts.isCatchClause(node) && node.block.statements.length === 0) {
      const line = lineOf(sf, node.getStart(sf));
      found.push({ line, end: lineOf(sf, node.end), statement: statementLine(sf, node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Swallowing catches with no comment from the line above through their last line. */
export function unexplainedCatches(file) {
  const sf = parseSource(file);
  const catches = swallowingCatches(sf);
  if (catches.length === 0) return [];
  const comments = commentLines(sf);
  return catches.filter(({ line, end, statement }) => {
    if (comments.has(statement - 1) || comments.has(statement)) return false;
    for (let l = line - 1; l <= end; l++) if (comments.has(l)) return false;
    return true;
  });
}

function findAll() {
  const found = new Map();
  for (const dir of DIRS) {
    const files = walk(
      join(root, dir),
      (f) => /\.(ts|mts|js|mjs)$/.test(f) && !f.endsWith('.d.ts'),
    );
    for (const file of files) {
      const lines = unexplainedCatches(file).map((c) => c.line);
      if (lines.length > 0) found.set(relative(root, file).split(sep).join('/'), lines);
    }
  }
  return found;
}

function readCounts() {
  const counts = new Map();
  for (const line of readKnown(KNOWN)) {
    const m = /^(\d+)\s+(\S+)$/.exec(line);
    if (m) counts.set(m[2], Number(m[1]));
  }
  return counts;
}

function check(found, counts) {
  const problems = [];
  for (const [path, lines] of found) {
    const allowed = counts.get(path) ?? 0;
    if (lines.length > allowed) {
      const where = lines.map((l) => `${path}:${l}`).join(', ');
      problems.push(
        `${where}: a swallowed error needs a one-line reason (a comment on its line or the line above)` +
          (allowed > 0 ? `; ${KNOWN} tolerates ${allowed} in this file` : ''),
      );
    }
  }
  for (const [path, allowed] of counts) {
    const now = found.get(path)?.length ?? 0;
    if (now < allowed) problems.push(`${KNOWN}: ${path} now has ${now}, not ${allowed}: lower it`);
  }
  return problems;
}

const found = findAll();
const total = [...found.values()].reduce((n, lines) => n + lines.length, 0);
if (process.argv.includes('--write')) {
  const lines = [...found.keys()].sort().map((path) => `${found.get(path).length} ${path}`);
  writeFileSync(join(root, KNOWN), `${HEADER}${lines.join('\n')}\n`);
  console.log(`check-catch-reasons: wrote ${found.size} files (${total} catches) to ${KNOWN}`);
  process.exit(0);
}
const problems = check(found, readCounts());
for (const problem of problems) console.error(problem);
console.log(`check-catch-reasons: ${total} catches without a reason, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
