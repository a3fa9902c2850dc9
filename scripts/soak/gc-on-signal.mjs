// Preloaded into a broker the soak diagnoses (`--expose-gc --import <this file>`): SIGUSR2 runs
// two full collections and prints one JSON line of V8's figures to stderr, so a reading after it
// tells memory JavaScript still holds from native memory that was not returned.
process.on('SIGUSR2', () => {
  globalThis.gc?.();
  globalThis.gc?.();
  // Finalizers of native objects (N-API wrappers) run after the collection; a second turn lets
  // them run before the line is printed.
  setImmediate(() => {
    const m = process.memoryUsage();
    const mib = (n) => Math.round((n / 1048576) * 10) / 10;
    process.stderr.write(
      `${JSON.stringify({ gc: true, rss: mib(m.rss), heapUsed: mib(m.heapUsed), heapTotal: mib(m.heapTotal), external: mib(m.external), arrayBuffers: mib(m.arrayBuffers) })}\n`,
    );
  });
});
