import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/log-tool.ts'],
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
