import { defineConfig, type Options } from 'tsup';

type Plugin = NonNullable<Options['esbuildPlugins']>[number];

const common = {
  format: ['esm'],
  clean: false,
  sourcemap: true,
  target: 'node20',
  platform: 'node',
} satisfies Options;

export default defineConfig([
  // The library entry (types for the workspace), its dependencies left to the resolver.
  { ...common, entry: ['src/index.ts'], dts: { entry: 'src/index.ts' } },
  // The `felix-broker` process is one file with every JavaScript dependency inside: resolving
  // and reading some 600 modules one by one made about half of a broker's start (750 ms to its
  // `listening` line here, 400 ms bundled), which every restart and failover waits for. Native
  // addons stay outside, loaded at run time by names the bundler cannot follow: quiche's
  // `@matrixai/quic-<platform>` (this package's optional dependency, as for @felix/client) and
  // dist/malloc-trim.node (native/build.mjs).
  {
    ...common,
    entry: { main: 'src/main.ts' },
    noExternal: [/.*/],
    esbuildPlugins: [patchedQuicOnly()],
    // Bundled CommonJS dependencies call `require`, which an ES module does not have.
    banner: {
      js: "import { createRequire as __felixCreateRequire } from 'node:module'; const require = __felixCreateRequire(import.meta.url);",
    },
  },
]);

/**
 * Resolves `@matrixai/quic` (which @felix/transport imports beside the patched copy, for its
 * benchmarks) to vendor/matrixai-quic: the broker runs the patched library only, so its bundle
 * carries one QUIC library, as @felix/client's does.
 */
function patchedQuicOnly(): Plugin {
  return {
    name: 'felix-patched-quic-only',
    setup(build) {
      build.onResolve({ filter: /^@matrixai\/quic(\/.*)?$/ }, (args) =>
        build.resolve(args.path.replace('@matrixai/quic', '@felix-vendor/matrixai-quic'), {
          kind: args.kind,
          resolveDir: args.resolveDir,
        }),
      );
    },
  };
}
