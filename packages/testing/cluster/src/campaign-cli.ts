#!/usr/bin/env node
// felix-campaign: filled by issue 22's campaign work.
process.exitCode = 2;
