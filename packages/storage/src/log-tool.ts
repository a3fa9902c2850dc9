#!/usr/bin/env node
// felix-log-tool process entry: dump, verify and bench over segment logs (see tool/cli.ts).
import { runLogTool } from './tool/cli.js';

const code = await runLogTool(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  interactive: process.stderr.isTTY === true,
});
process.exitCode = code;
