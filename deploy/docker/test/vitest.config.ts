import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import base from '../../../vitest.config.js';

// The container tests (`pnpm test:deploy`) only: the main suite's config does not include
// deploy/, so `pnpm test` never needs Docker. Workspace packages resolve from source as there.
export default defineConfig({
  root: resolve(import.meta.dirname, '../../..'),
  resolve: base.resolve,
  test: {
    include: ['deploy/docker/test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    poolOptions: { forks: { singleFork: true } },
  },
});
