/** Small helpers the benchmark scripts share. */
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
