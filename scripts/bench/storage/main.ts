// Storage benchmark: the segment log's appends (128 B and 4 KiB records; fsync none, periodic,
// onCommit; 1, 8 and 64 concurrent writers), large batched appends and recovery scan speed,
// side by side in one run with the raw limit of the same disk (write + fdatasync loops of the
// same sizes, large synced sequential writes). Prints a markdown table for docs/perf.md.
// Run (after `npx pnpm@10.34.9 run build`):
//   npx pnpm@10.34.9 exec tsx scripts/bench/storage/main.ts [--quick] [--dir <scratch parent>]
// The benchmark is the storage package's own `felix-log-tool bench` command, run here from the
// package's built bin (its public entry point) as a child process; this script adds the run's
// duration and load average, and warns when the build is older than the package source.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const dirArg = args.indexOf('--dir');
const dir = dirArg >= 0 ? args[dirArg + 1]! : tmpdir();
const quick = args.includes('--quick');

/** The package directory of @felix/storage and the path of its `felix-log-tool` bin. */
function logToolBin(): { packageDir: string; bin: string } {
  let packageDir = dirname(fileURLToPath(import.meta.resolve('@felix/storage')));
  while (!existsSync(join(packageDir, 'package.json'))) packageDir = dirname(packageDir);
  const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
    bin: Record<string, string>;
  };
  return { packageDir, bin: join(packageDir, pkg.bin['felix-log-tool']!) };
}

/** Newest modification time of the files under `path` (0 when there are none). */
function newestMtimeMs(path: string): number {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = 0;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtimeMs(join(path, name)));
  return newest;
}

const { packageDir, bin } = logToolBin();
if (!existsSync(bin)) {
  console.error(`${bin} is missing: build first (npx pnpm@10.34.9 run build)`);
  process.exit(2);
}
if (newestMtimeMs(join(packageDir, 'src')) > statSync(bin).mtimeMs) {
  console.error(`warning: ${bin} is older than the storage source: rebuild to measure it`);
}

const started = Date.now();
const loadBefore = loadavg()[0]!.toFixed(1);
const child = spawn(process.execPath, [bin, 'bench', '--dir', dir, ...(quick ? ['--quick'] : [])], {
  stdio: ['ignore', 'inherit', 'inherit'],
});
const code = await new Promise<number>((resolve) => {
  child.on('exit', (c, signal) => resolve(c ?? (signal === null ? 1 : 128)));
});
if (code !== 0) {
  console.error(`felix-log-tool bench exited with ${code}`);
  process.exit(code);
}
console.log(
  `\n(${quick ? 'quick' : 'full'} run, scratch under ${dir}, ${((Date.now() - started) / 1000).toFixed(0)} s, ` +
    `node ${process.version}, 1-minute load average ${loadBefore} before and ${loadavg()[0]!.toFixed(1)} after)`,
);
