import { defineConfig, type Options } from 'tsup';

type Plugin = NonNullable<Options['esbuildPlugins']>[number];

// @felix/common and @felix/transport are private workspace packages: they are bundled into the
// published dist (code and types), together with the patched QUIC library transport vendors
// (vendor/matrixai-quic). Transport also imports the stock @matrixai/quic (for benchmarks that
// compare the two); the client never asks for it, so the plugin points it at the patched copy and
// the published client carries one QUIC library only. The patched code loads quiche's native
// addon as `@matrixai/quic-<platform>` from beside this package, which lists it under
// optionalDependencies (upstream publishes a 2.0.9 addon for linux-x64 only; RELEASING.md).
// What the bundled code imports from npm is declared in this package's dependencies.
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: { resolve: ['@felix/common', '@felix/transport'] },
  noExternal: [
    '@felix/common',
    '@felix/transport',
    '@felix-vendor/matrixai-quic',
    /^@matrixai\/quic(\/.*)?$/,
  ],
  // Transport's development certificate (`await import('selfsigned')`) is never reached from
  // the client; left to the bundler, its chunk shipped (1.7 MB unpacked) with nothing loading it.
  external: ['selfsigned'],
  esbuildPlugins: [patchedQuicOnly()],
  clean: true,
  sourcemap: true,
  target: 'node20',
});

/** Resolves `@matrixai/quic` and its subpaths to the vendored patched copy, beside the importer. */
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
