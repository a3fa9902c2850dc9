import { defineConfig, type Options } from 'tsup';

const common = {
  format: ['esm'],
  clean: false,
  sourcemap: true,
  target: 'node20',
  platform: 'node',
} satisfies Options;

export default defineConfig([
  // The library entry (types for the workspace), its dependencies left to the resolver.
  { ...common, entry: ['src/index.ts'], dts: true },
  // The two commands are one file each with their JavaScript dependencies inside: resolving and
  // reading several hundred modules one by one was about a third of the control plane's start.
  // Left outside: better-sqlite3 (a native addon found beside its package), pg's optional native
  // binding, the API docs UI, which serves files from its own package directory, and
  // @felix/client (felixctl's data verbs), already one file that finds quiche's addon beside it.
  {
    ...common,
    entry: { main: 'src/main.ts', felixctl: 'src/felixctl.ts' },
    // (tsup's `noExternal` wins over `external`, so the exceptions are in the pattern.)
    noExternal: [/^(?!better-sqlite3$|pg-native$|@fastify\/swagger-ui$|@felix\/client$)/],
    // Bundled CommonJS dependencies call `require`, which an ES module does not have.
    banner: {
      js: "import { createRequire as __felixCreateRequire } from 'node:module'; const require = __felixCreateRequire(import.meta.url);",
    },
  },
]);
