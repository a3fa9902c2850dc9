#!/usr/bin/env node
/**
 * `felix-wire-vectors <dir>`: validates every `<name>.json` vector in a directory (with its
 * `<name>.hex` companion when present) both ways, prints one line per vector and a final
 * `N passed, M failed`, and exits non-zero on any failure, an unknown kind, or no vectors.
 * The only file in the package that touches `node:`; it is not exported from the index.
 */
import { existsSync, readFileSync, readdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type VectorResult, checkVector, summaryLine } from './vectors/check.js';

/** Checks every vector in `dir`; returns the results in file-name order. */
export function checkVectorDirectory(dir: string): VectorResult[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  return files.map((file) => {
    const hexPath = join(dir, file.replace(/\.json$/, '.hex'));
    const hexText = existsSync(hexPath) ? readFileSync(hexPath, 'utf8') : undefined;
    return checkVector(readFileSync(join(dir, file), 'utf8'), hexText, file);
  });
}

/** Runs the command; returns the exit code. */
export function runVectorsCli(args: readonly string[], print: (line: string) => void): number {
  const dir = args[0];
  if (dir === undefined || !existsSync(dir)) {
    print('usage: felix-wire-vectors <dir>');
    return 2;
  }
  const results = checkVectorDirectory(dir);
  for (const r of results) print(r.ok ? `ok   ${r.name}` : `FAIL ${r.name}: ${r.reason}`);
  print(summaryLine(results));
  return results.length > 0 && results.every((r) => r.ok) ? 0 : 1;
}

function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined || !existsSync(script)) return false;
  return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
}

if (invokedDirectly())
  process.exitCode = runVectorsCli(process.argv.slice(2), (l) => console.log(l));
