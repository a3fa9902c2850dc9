import { type ChildProcess, spawn } from 'node:child_process';
import { ChildExitedError } from './errors.js';
import { CHILD_OUTPUT_BYTES_MAX, CHILD_STOP_GRACE_MS } from './limits.js';
import { waitFor } from './wait.js';

export interface Child {
  proc: ChildProcess;
  /** Everything the child wrote to stdout, bounded. */
  stdout(): string;
  stderr(): string;
  /** Lines of stdout parsed as JSON where they parse. */
  jsonLines(): unknown[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL, then wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM, SIGKILL after a grace period, then wait for the exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitForOutput(pattern: RegExp | string, what?: string, deadlineMs?: number): Promise<void>;
}

function appendBounded(prev: string, chunk: string): string {
  const next = prev + chunk;
  return next.length > CHILD_OUTPUT_BYTES_MAX
    ? next.slice(next.length - CHILD_OUTPUT_BYTES_MAX)
    : next;
}

/** Spawns `node <args>` with piped output; the caller owns stopping it. */
export function spawnNode(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Child {
  const proc = spawn(process.execPath, args, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout?.setEncoding('utf8').on('data', (c: string) => {
    out = appendBounded(out, c);
  });
  proc.stderr?.setEncoding('utf8').on('data', (c: string) => {
    err = appendBounded(err, c);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const child: Child = {
    proc,
    stdout: () => out,
    stderr: () => err,
    jsonLines: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as unknown];
          } catch {
            return []; // a line cut by a kill mid-write is not a record
          }
        }),
    exited,
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return exited;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), CHILD_STOP_GRACE_MS);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
    waitForOutput: (pattern, what, deadlineMs) =>
      outputOrExit(proc, () => [out, err], pattern, what, deadlineMs),
  };
  return child;
}

/**
 * Waits until `pattern` shows in the child's output; a child that exits first fails at once
 * (ChildExitedError), not at the deadline: waitFor takes a throwing condition for "not yet".
 */
async function outputOrExit(
  proc: ChildProcess,
  output: () => [string, string],
  pattern: string | RegExp,
  what: string | undefined,
  deadlineMs: number | undefined,
): Promise<void> {
  const test = (s: string) => (typeof pattern === 'string' ? s.includes(pattern) : pattern.test(s));
  let gone = false;
  await waitFor(
    () => {
      const [out, err] = output();
      if (test(out) || test(err)) return true;
      gone = proc.exitCode !== null || proc.signalCode !== null;
      return gone;
    },
    what ?? `output ${String(pattern)}`,
    deadlineMs,
  );
  if (gone)
    throw new ChildExitedError(
      `child exited before ${what ?? String(pattern)}: ${output()[1].slice(-2000)}`,
    );
}
