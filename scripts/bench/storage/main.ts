// Storage benchmark: the segment log's appends (128 B and 4 KiB records; fsync none, periodic,
// onCommit; 1, 8 and 64 concurrent writers), large batched appends and recovery scan speed,
// side by side in one run with the raw limit of the same disk (write + fdatasync loops of the
// same sizes, large synced sequential writes). Prints a markdown table for docs/perf.md.
// Run: npx pnpm@10.34.9 exec tsx scripts/bench/storage/main.ts [--quick] [--dir <scratch parent>]
// Imports the package source (not dist) so a stale build can never be measured.
import { loadavg, tmpdir } from 'node:os';
import { formatBenchReport, runStorageBench } from '../../../packages/storage/src/index.js';

const args = process.argv.slice(2);
const dirArg = args.indexOf('--dir');
const dir = dirArg >= 0 ? args[dirArg + 1]! : tmpdir();
const quick = args.includes('--quick');

const started = Date.now();
const loadBefore = loadavg()[0]!.toFixed(1);
const report = await runStorageBench({
  dir,
  quick,
  onProgress: (done, total, label) => process.stderr.write(`[${done}/${total}] ${label}\n`),
});
console.log(formatBenchReport(report));
console.log(
  `\n(${quick ? 'quick' : 'full'} run, scratch under ${dir}, ${((Date.now() - started) / 1000).toFixed(0)} s, ` +
    `node ${process.version}, 1-minute load average ${loadBefore} before and ${loadavg()[0]!.toFixed(1)} after)`,
);
