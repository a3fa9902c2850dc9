#!/usr/bin/env node
/** felixctl entry point: see cli/felixctl.ts. */
import { runFelixctl } from './cli/felixctl.js';

runFelixctl(process.argv.slice(2), {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
  fetch,
  env: process.env,
}).then((code) => {
  process.exitCode = code;
});
