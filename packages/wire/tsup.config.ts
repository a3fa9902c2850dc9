import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/vectors-cli.ts'],
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
