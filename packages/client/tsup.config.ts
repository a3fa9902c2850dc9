import { defineConfig } from 'tsup';

// @felix/common and @felix/transport are private workspace packages: they are bundled into the
// published dist (code and types), together with the patched QUIC library transport vendors
// (vendor/matrixai-quic). What those import from npm is declared in this package's
// dependencies, so `npm install @felix/client` needs nothing from the workspace but @felix/wire.
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: { resolve: ['@felix/common', '@felix/transport'] },
  noExternal: ['@felix/common', '@felix/transport', '@felix-vendor/matrixai-quic'],
  clean: true,
  sourcemap: true,
  target: 'node20',
});
