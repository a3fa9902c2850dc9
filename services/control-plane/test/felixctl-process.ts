/**
 * The built felixctl as a process, as a person runs it: a home of its own (its contexts and
 * credentials), the given environment and nothing else of the test's, killed past a deadline.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

export const FELIXCTL = resolve(import.meta.dirname, '../dist/felixctl.js');
export const RUN_DEADLINE_MS = 60_000;

export interface Run {
  code: number | null;
  out: string[];
  err: string;
}

/** A running felixctl with `env` (over PATH, HOME and XDG_CONFIG_HOME under `home`): its
 *  output so far and its end. */
export function startFelixctl(
  home: string,
  env: Record<string, string>,
  args: string[],
  input = '',
): { output: () => string; done: Promise<Run> } {
  const child = spawn(process.execPath, [FELIXCTL, ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      XDG_CONFIG_HOME: join(home, 'config'),
      ...env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += String(d);
  });
  child.stderr.on('data', (d) => {
    err += String(d);
  });
  child.stdin.end(input);
  const timer = setTimeout(() => child.kill('SIGKILL'), RUN_DEADLINE_MS);
  const done = new Promise<Run>((res) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      res({ code, out: out.split('\n').filter((l) => l !== ''), err });
    }),
  );
  return { output: () => out, done };
}
