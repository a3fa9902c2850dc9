import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/campaign-cli.ts'],
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  clean: true,
  sourcemap: true,
  target: 'node20',
});
