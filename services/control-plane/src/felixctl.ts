#!/usr/bin/env node
/** felixctl entry point: see cli/felixctl.ts. */
import { runFelixctl } from './cli/felixctl.js';

// Ctrl-C or SIGTERM ends a long verb (sub, watch, bench) cleanly: it closes its client first.
const interrupted = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => interrupted.abort());
// A reader that goes away (`felixctl sub orders | head`) ends the output: stop printing and end
// a long verb as Ctrl-C does, rather than die on an unhandled EPIPE with a stack trace.
let outputClosed = false;
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  outputClosed = true;
  interrupted.abort();
});

runFelixctl(process.argv.slice(2), {
  out: (l) => {
    if (!outputClosed) process.stdout.write(`${l}\n`);
  },
  err: (l) => process.stderr.write(`${l}\n`),
  fetch,
  env: process.env,
  stdin: process.stdin,
  stderr: process.stderr,
  signal: interrupted.signal,
}).then((code) => {
  process.exitCode = code;
});
