// The structure rules check-deps enforces beside the dependency table: no import circle
// between source files, no pair of broker folders that import each other, and no .ts file
// in packages/ or services/ over FILE_LINES_MAX lines. Each violation has a stable key, so
// check-deps can hold today's ones in scripts/check-deps-known.txt while they are fixed.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { root, walk } from './workspace.mjs';

export const FILE_LINES_MAX = 800;
const BROKER_SRC = join('services', 'broker', 'src');
const SOURCE = /\.(ts|mts|js|mjs)$/;

/** Repo-relative path with forward slashes, the form keys and messages use. */
const rel = (file) => relative(root, file).split(sep).join('/');

function isFile(path) {
  return existsSync(path) && statSync(path).isFile();
}

/** The file a relative specifier names, trying the TypeScript source behind a `.js` name. */
function resolveRelative(from, spec) {
  const base = resolve(dirname(from), spec);
  const candidates = [base];
  if (/\.js$/.test(base)) candidates.push(base.replace(/\.js$/, '.ts'));
  if (/\.mjs$/.test(base)) candidates.push(base.replace(/\.mjs$/, '.mts'));
  for (const ext of ['.ts', '.mts', '.js', '.mjs']) candidates.push(base + ext);
  for (const ext of ['.ts', '.js']) candidates.push(join(base, `index${ext}`));
  return candidates.find(isFile);
}

/**
 * Every relative import edge between source files of the workspace packages: file → files.
 * Type-only imports count: a circle through types still ties the two files together (one
 * cannot be read, moved or split without the other), it is usually the first step of a
 * runtime circle, and the cure (a module of shared types) is cheap. Dynamic `import()`
 * counts too: it defers loading, not the dependency.
 */
export function importGraph(packages) {
  const graph = new Map();
  for (const p of packages) {
    const files = walk(p.dir, (f) => SOURCE.test(f) && !f.endsWith('.d.ts'));
    for (const file of files) {
      const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
      const targets = new Set();
      for (const { fileName } of info.importedFiles) {
        if (!fileName.startsWith('.')) continue;
        const target = resolveRelative(file, fileName);
        if (target?.startsWith(p.dir + sep)) targets.add(target);
      }
      graph.set(file, targets);
    }
  }
  return graph;
}

/** Strongly connected components with a circle in them (Tarjan, iterative). */
function circles(graph) {
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const found = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work = [[start, [...(graph.get(start) ?? [])], 0]];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [node, targets] = frame;
      if (frame[2] < targets.length) {
        const target = targets[frame[2]++];
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next++);
          stack.push(target);
          onStack.add(target);
          work.push([target, [...(graph.get(target) ?? [])], 0]);
        } else if (onStack.has(target)) {
          low.set(node, Math.min(low.get(node), index.get(target)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) !== index.get(node)) continue;
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      const selfLoop = graph.get(node)?.has(node);
      if (component.length > 1 || selfLoop) found.push(component);
    }
  }
  return found;
}

/** One shortest circle through `from` inside `members`, as a path that returns to `from`. */
function circleThrough(graph, from, members) {
  const previous = new Map([[from, null]]);
  const queue = [from];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const target of graph.get(node) ?? []) {
      if (!members.has(target)) continue;
      if (target === from) {
        const path = [from];
        for (let at = node; at !== from; at = previous.get(at)) path.splice(1, 0, at);
        return [...path, from];
      }
      if (!previous.has(target)) {
        previous.set(target, node);
        queue.push(target);
      }
    }
  }
  return [from, from];
}

function circleViolations(graph, out) {
  for (const component of circles(graph)) {
    const names = component.map(rel).sort();
    const first = component.find((f) => rel(f) === names[0]);
    const path = circleThrough(graph, first, new Set(component)).map(rel);
    const more = component.length > path.length - 1 ? ` (${component.length} files in all)` : '';
    out.set(`import-circle: ${names.join(' ')}`, `import circle: ${path.join(' → ')}${more}`);
  }
}

/** The broker's top-level folder a file sits in (`session`, `caches`, …), if any. */
function brokerFolder(file) {
  const path = relative(join(root, BROKER_SRC), file);
  const parts = path.split(sep);
  if (path.startsWith('..') || parts.length < 2) return undefined;
  return parts[0];
}

function brokerFolderViolations(graph, out) {
  const edges = new Map(); // "a>b" → one file edge as evidence
  for (const [file, targets] of graph) {
    const from = brokerFolder(file);
    if (from === undefined) continue;
    for (const target of targets) {
      const to = brokerFolder(target);
      if (to === undefined || to === from) continue;
      const key = `${from}>${to}`;
      if (!edges.has(key)) edges.set(key, `${rel(file)} → ${rel(target)}`);
    }
  }
  for (const [key, evidence] of edges) {
    const [from, to] = key.split('>');
    if (from > to || !edges.has(`${to}>${from}`)) continue;
    out.set(
      `broker-folders: ${from} ⇄ ${to}`,
      `broker folders ${from}/ and ${to}/ import each other: ${evidence}; ${edges.get(`${to}>${from}`)}`,
    );
  }
}

function longFileViolations(out) {
  for (const group of ['packages', 'services']) {
    const files = walk(join(root, group), (f) => /\.(ts|mts)$/.test(f) && !f.endsWith('.d.ts'));
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
      if (lines <= FILE_LINES_MAX) continue;
      out.set(
        `file-over-${FILE_LINES_MAX}-lines: ${rel(file)}`,
        `${rel(file)} has ${lines} lines (at most ${FILE_LINES_MAX}): split it by concern`,
      );
    }
  }
}

/** Every structure violation in the workspace: stable key → message. */
export function structureViolations(packages) {
  const out = new Map();
  const graph = importGraph(packages);
  circleViolations(graph, out);
  brokerFolderViolations(graph, out);
  longFileViolations(out);
  return out;
}
