import { defineConfig } from 'tsup';

// @felix/common is private: it is bundled into the published dist (code and types) so the
// package installs from npm with no workspace-only dependency.
export default defineConfig({
  entry: ['src/index.ts', 'src/vectors-cli.ts'],
  format: ['esm'],
  dts: { resolve: ['@felix/common'] },
  noExternal: ['@felix/common'],
  clean: true,
  sourcemap: true,
  target: 'node20',
});
