import { tempDir } from './fs.js';

/**
 * What a test file opens and must undo after each test: closers run newest first, then the
 * temp directories go. `run()` in an `afterEach` empties the scope for the next test.
 */
export interface CleanupScope {
  /** A fresh temp directory, removed by `run()` after every closer. */
  tempDir(prefix?: string): Promise<{ path: string; cleanup: () => Promise<void> }>;
  /** Runs `close` at `run()`, before closers deferred earlier. */
  defer(close: () => Promise<unknown> | unknown): void;
  run(): Promise<void>;
}

export function cleanupScope(): CleanupScope {
  const dirs: { cleanup: () => Promise<void> }[] = [];
  const closers: (() => Promise<unknown> | unknown)[] = [];
  return {
    async tempDir(prefix) {
      const d = await tempDir(prefix);
      dirs.push(d);
      return d;
    },
    defer(close) {
      closers.push(close);
    },
    async run() {
      for (const c of closers.splice(0).reverse()) await c();
      for (const d of dirs.splice(0)) await d.cleanup();
    },
  };
}
