/**
 * What a bench script does with its own process: read a `--flag value`, and run itself again as
 * its other side (a receiver, an echo server) in a child process of its own, so each side has
 * its own event loop and core as a client and a server would.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { ServeSelfError } from './errors.js';
import { SERVE_SELF_LINE_BYTES_MAX } from './limits.js';

/** The value after `--name` on the command line, or `dflt` when the flag is absent. */
export function argValue(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1]! : dflt;
}

/**
 * Runs this same script again as a child process with `--serve` and `args`, and resolves with
 * the child and the JSON its first stdout line carries (ports, a fingerprint). Fails naming
 * `what` if the child exits first (and kills it on any failure).
 */
export async function serveSelf<T>(
  args: string[],
  what: string,
): Promise<{ child: ChildProcess; info: T }> {
  const child = spawn(
    process.execPath,
    [...process.execArgv, process.argv[1]!, '--serve', ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const info = await new Promise<T>((ok, fail) => {
      let out = '';
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const end = out.indexOf('\n');
        if (end > 0) ok(JSON.parse(out.slice(0, end)) as T);
        else if (out.length > SERVE_SELF_LINE_BYTES_MAX)
          fail(new ServeSelfError(what, `a first line over ${SERVE_SELF_LINE_BYTES_MAX} bytes`));
      });
      child.once('exit', (code) => fail(new ServeSelfError(what, `exited with ${code}`)));
    });
    return { child, info };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
}
