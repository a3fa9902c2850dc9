/** Small helpers the benchmark scripts share. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The value after `--name` on the command line, or `dflt` when the flag is absent. */
export function argValue(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1]! : dflt;
}

/** CPU seconds (user + system) a process has used so far, from /proc (10 ms ticks). */
export function procCpuSecs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/**
 * Runs this same script again as a child process with `--serve` and `args` (its other side: a
 * receiver, an echo server), and resolves with the child and the JSON its first stdout line
 * carries (ports, a fingerprint). Fails naming `what` if the child exits first, and kills it.
 */
export async function serveSelf<T>(
  args: string[],
  what: string,
): Promise<{ child: ChildProcess; info: T }> {
  const child = spawn(
    process.execPath,
    [...process.execArgv, process.argv[1]!, '--serve', ...args],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    const info = await new Promise<T>((ok, fail) => {
      let out = '';
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const line = out.split('\n')[0];
        if (out.includes('\n') && line) ok(JSON.parse(line) as T);
      });
      child.once('exit', (code) => fail(new Error(`${what} exited with ${code}`)));
    });
    return { child, info };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
}
