#!/usr/bin/env node
// Committed so an install can link this bin before dist/ is built; the command is in dist.
import { runVectorsCli } from '../dist/vectors-cli.js';

process.exitCode = runVectorsCli(process.argv.slice(2), (line) => console.log(line));
