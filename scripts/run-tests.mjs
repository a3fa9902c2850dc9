#!/usr/bin/env node
// Runs the whole vitest suite once and ends with the plain `N passed, M failed` line CI reads.
// Extra arguments are passed to vitest (e.g. a path filter), but `--built`: the caller has just
// built every package (`pnpm test` does), so tests start broker processes from dist/.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const outDir = join(root, '.test-results');
mkdirSync(outDir, { recursive: true });
const outFile = join(outDir, 'vitest.json');

const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
const args = [
  vitest,
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${outFile}`,
  ...process.argv.slice(2).filter((a) => a !== '--built'),
];
// After a build (`--built`), tests that start a broker process run the built dist/main.js (one
// bundled file: ~0.4 s to listening) rather than the source through tsx (~3 s, most of it
// transpiling). Without it (`pnpm test:only`, `vitest run`) they run the source, never a dist/
// older than it (packages/testing/e2e).
const built = process.argv.includes('--built');
const env = { ...process.env };
if (built) env.FELIX_TEST_BROKER_DIST ??= '1';
const run = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env });

let passed = 0;
let failed = 0;
let skipped = 0;
if (existsSync(outFile)) {
  const report = JSON.parse(readFileSync(outFile, 'utf8'));
  passed = report.numPassedTests ?? 0;
  // Failed tests, plus files that failed without a failing test of their own (an import error,
  // a failed hook). numFailedTestSuites also counts every describe around a failed test, which
  // would report one failure as three.
  const fileOnly = (report.testResults ?? []).filter(
    (f) => f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed'),
  ).length;
  failed = (report.numFailedTests ?? 0) + fileOnly;
  skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
} else {
  failed = 1;
}
const status = run.status ?? 1;
if (status !== 0 && failed === 0) failed = 1; // a crash outside any test still fails the run
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(status === 0 && failed === 0 ? 0 : 1);
