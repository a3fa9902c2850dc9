#!/usr/bin/env node
/** felixctl entry point: see cli/felixctl.ts. */
import { runFelixctl } from './cli/felixctl.js';

// Ctrl-C or SIGTERM ends a long verb (sub, watch, bench) cleanly: it closes its client first.
const interrupted = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => interrupted.abort());

runFelixctl(process.argv.slice(2), {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
  fetch,
  env: process.env,
  stdin: process.stdin,
  stderr: process.stderr,
  signal: interrupted.signal,
}).then((code) => {
  process.exitCode = code;
});
