#!/usr/bin/env node
// Committed so an install can link this bin before dist/ is built; the tool runs at import.
import '../dist/log-tool.js';
