#!/usr/bin/env node
// Committed so an install can link this bin before dist/ is built; the command runs at import.
import '../dist/campaign-cli.js';
