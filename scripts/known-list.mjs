// The ratchet shared by checks that start life with violations: a known-list file names
// today's violations by a stable key, one a line. A violation not on the list fails, and so
// does a listed one that no longer occurs, so the list can only shrink.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './workspace.mjs';

/**
 * The keys of a known-list file (repo-relative path), in file order. `#` starts a comment;
 * blank lines are skipped. A missing file is an empty list.
 */
export function readKnown(rel) {
  const file = join(root, rel);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter(Boolean);
}

/**
 * Problems from comparing what a check found (`found`: key → message) with a known list:
 * every unlisted violation, and every listed key that no longer occurs.
 */
export function ratchet(found, knownRel) {
  const known = readKnown(knownRel);
  const listed = new Set(known);
  const problems = [];
  for (const [key, message] of found) {
    if (!listed.has(key)) problems.push(`${message}\n    (key: ${key})`);
  }
  for (const key of known) {
    if (!found.has(key)) {
      problems.push(`${knownRel} lists "${key}", which no longer occurs: remove the line`);
    }
  }
  return problems;
}
