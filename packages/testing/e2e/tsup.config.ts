import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  // The suite hooks come from the vitest that runs the test, never a bundled copy.
  external: ['vitest'],
});
